// One batch of parsed events on its way to the database, held in the form the database takes it: the events
// as `COPY events` text in a reusable byte buffer, and their rollup folded in as they arrive. A batch thus
// keeps no per-event objects alive while it waits to be stored, and its buffer is reused for later batches
// (the pipeline recycles a fixed few), so memory stays bounded by the batch size rather than by how far the
// garbage collector lets the heap grow.
import { copyNumber, copyText, copyTimestamp } from './copy-text.ts';
import type { AttackEvent } from './event.ts';
import { addToRollup, emptyRollup, type Rollup } from './rollup.ts';

const DAY = 86_400_000;
// Worst case of UTF-8 bytes per UTF-16 code unit.
const MAX_BYTES_PER_UNIT = 3;

export class EventBatch {
  /** Events added (duplicates within the batch included). */
  count = 0;
  readonly rollup: Rollup = emptyRollup();
  /** UTC days (ms / DAY) the events fall on: the partitions they need. */
  readonly days = new Set<number>();
  readonly sensors = new Set<string>();
  private buffer: Buffer;
  private length = 0;

  constructor(initialBytes = 1 << 20) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  add(e: AttackEvent): void {
    addToRollup(this.rollup, e);
    this.days.add(Math.floor(e.ts / DAY));
    this.sensors.add(e.sensor);
    this.append(
      `${copyTimestamp(e.ts)}\t${e.id}\t${e.src.text}\t${copyNumber(e.dstPort)}\t${copyText(e.service)}\t${copyText(e.proto)}\t${e.source}\t${copyText(e.sensor)}\t${e.action}\t${copyText(e.username)}\t${copyText(e.command)}\n`,
    );
    this.count++;
  }

  /** The events as COPY text in the column order of EVENT_COLUMNS (a view into the batch's buffer). */
  rows(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  /** Empties the batch for reuse; its buffer keeps its size. */
  clear(): void {
    this.count = 0;
    this.length = 0;
    this.rollup.addresses.clear();
    this.days.clear();
    this.sensors.clear();
  }

  private append(text: string): void {
    const room = text.length * MAX_BYTES_PER_UNIT;
    if (this.length + room > this.buffer.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + room));
      this.buffer.copy(bigger, 0, 0, this.length);
      this.buffer = bigger;
    }
    this.length += this.buffer.write(text, this.length);
  }
}

/** Column order of EventBatch.rows(). */
export const EVENT_COLUMNS = 'ts, id, src_ip, dst_port, service, proto, source, sensor, action, username, command';

/** A batch holding `events`. */
export function batchOf(events: Iterable<AttackEvent>): EventBatch {
  const batch = new EventBatch(64 * 1024);
  for (const e of events) batch.add(e);
  return batch;
}

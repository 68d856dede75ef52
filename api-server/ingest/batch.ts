// One batch of parsed events on its way to the database, held in the form the database takes it: the events
// as binary `COPY` rows (copy-binary.ts) in a reusable byte buffer, and their rollup folded in as they arrive.
// A batch thus keeps no per-event objects alive while it waits to be stored, and its buffer is reused for
// later batches (the pipeline recycles a fixed few), so memory stays bounded by the batch size rather than by
// how far the garbage collector lets the heap grow.
import { BinaryCopyWriter } from './copy-binary.ts';
import type { AttackEvent } from './event.ts';
import { addToRollup, emptyRollup, type Rollup } from './rollup.ts';

const DAY = 86_400_000;

export class EventBatch {
  /** Events added (duplicates within the batch included). */
  count = 0;
  readonly rollup: Rollup = emptyRollup();
  /** UTC days (ms / DAY) the events fall on: the partitions they need. */
  readonly days = new Set<number>();
  readonly sensors = new Set<string>();
  private readonly out: BinaryCopyWriter;

  constructor(initialBytes = 1 << 20) {
    this.out = new BinaryCopyWriter(initialBytes);
  }

  add(e: AttackEvent): void {
    addToRollup(this.rollup, e);
    this.days.add(Math.floor(e.ts / DAY));
    this.sensors.add(e.sensor);
    const out = this.out;
    out.row(11);
    out.timestamp(e.ts);
    out.uuid(e.id);
    out.inet(e.src);
    out.int32(e.dstPort);
    out.text(e.service);
    out.text(e.proto);
    out.text(e.source);
    out.text(e.sensor);
    out.int16(e.action);
    out.text(e.username);
    out.text(e.command);
    this.count++;
  }

  /** The events as a binary COPY stream in the column order of EVENT_COLUMNS (a view into the batch's buffer). */
  rows(): Buffer {
    return this.out.stream();
  }

  /** Empties the batch for reuse; its buffer keeps its size. */
  clear(): void {
    this.count = 0;
    this.out.clear();
    this.rollup.addresses.clear();
    this.days.clear();
    this.sensors.clear();
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

// Drives one ingest: lines → parser → batches → EventWriter. Parsing the next batch overlaps with the
// database storing the previous one (two cores: Node parses while PostgreSQL inserts). Bad lines are
// reported through `onReject` and never stop the rest. At most three batches exist (two being stored, one
// being filled) and they are reused, so the memory an ingest needs does not grow with its size.
import { EventBatch } from './batch.ts';
import type { LineParser } from './event.ts';
import { lineBatches } from './lines.ts';
import type { BatchResult } from './writer.ts';

export interface IngestStats {
  lines: number;
  /** Lines that parsed into an event. */
  accepted: number;
  /** Events newly stored (re-ingested duplicates are accepted but not inserted). */
  inserted: number;
  /** Housekeeping lines of a sensor that carry no attack (Cowrie kex, OpenCanary boot, CSV header). */
  skipped: number;
  rejected: number;
  bytes: number;
}

export const emptyStats = (): IngestStats => ({ lines: 0, accepted: 0, inserted: 0, skipped: 0, rejected: 0, bytes: 0 });

export interface BatchSink {
  /** Stores the batch; the batch must not be used once the returned promise settles (it is reused). */
  writeBatch(batch: EventBatch): Promise<BatchResult>;
}

export interface IngestInput {
  /** Name shown in rejections (`file:line: reason`). */
  name: string;
  stream: AsyncIterable<Buffer | string> | Iterable<Buffer | string>;
  parser: LineParser;
}

export interface IngestOptions {
  sink: BatchSink;
  stats?: IngestStats;
  batchSize?: number;
  onReject?: (message: string) => void;
  /** Called after every stored batch. */
  onProgress?: (stats: IngestStats) => void;
}

/** Ingests the inputs in order into `sink`; returns the accumulated stats. */
export async function ingest(inputs: Iterable<IngestInput>, options: IngestOptions): Promise<IngestStats> {
  const { sink, batchSize = 10_000, onReject, onProgress } = options;
  const stats = options.stats ?? emptyStats();
  // Up to two batches in the database at once: one staging while the other inserts (the writer takes its
  // lock only around the inserts). Their upserts commute, so the order they commit in does not matter.
  const inFlight = new Set<Promise<void>>();
  const spare: EventBatch[] = [];
  let failed: Error | undefined;
  let batch = new EventBatch();
  const flush = async () => {
    const full = batch;
    while (inFlight.size >= 2) await Promise.race(inFlight);
    if (failed !== undefined) throw failed;
    batch = spare.pop() ?? new EventBatch();
    const p: Promise<void> = sink.writeBatch(full).then(
      (r) => {
        stats.inserted += r.inserted;
        onProgress?.(stats);
      },
      (err: unknown) => {
        failed ??= err instanceof Error ? err : new Error(String(err));
      },
    ).finally(() => {
      inFlight.delete(p);
      full.clear();
      spare.push(full);
    });
    inFlight.add(p);
  };
  for (const input of inputs) {
    const counted = countBytes(input.stream, stats);
    for await (const lines of lineBatches(counted)) {
      for (const { line, number } of lines) {
        stats.lines++;
        if (line.trim() === '') continue;
        const r = input.parser(line);
        if ('event' in r) {
          stats.accepted++;
          batch.add(r.event);
          if (batch.count >= batchSize) await flush();
        } else if ('error' in r) {
          stats.rejected++;
          onReject?.(`${input.name}:${number}: ${r.error}`);
        } else stats.skipped++;
      }
    }
  }
  if (batch.count) await flush();
  await Promise.all(inFlight);
  if (failed !== undefined) throw failed;
  return stats;
}

async function* countBytes(stream: AsyncIterable<Buffer | string> | Iterable<Buffer | string>, stats: IngestStats): AsyncGenerator<Buffer | string> {
  for await (const chunk of stream) {
    stats.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    yield chunk;
  }
}

/** 0 = every line stored, 1 = some lines rejected, 2 = nothing stored (every event line rejected). */
export function exitCodeOf(stats: IngestStats): 0 | 1 | 2 {
  if (stats.rejected === 0) return 0;
  return stats.accepted === 0 ? 2 : 1;
}

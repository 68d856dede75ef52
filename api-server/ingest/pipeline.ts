// Drives one ingest: bytes → lines → parser → batches → windows of an EventWriter (docs/data-model.md
// "Ingest"). The next batch is parsed while the database stores the previous one. A parser's byte reader, if it
// has one, gets first go at each line; only the lines it declines become strings. Bad lines go to `onReject`
// and never stop the rest; events from non-global sources are counted and dropped here, so no list, rollup
// or classification ever sees them.
import { setImmediate } from 'node:timers/promises';
import { isNeverBlock, isNeverBlockV4 } from '../../common/never-block.ts';
import { EventBatch } from './batch.ts';
import { RawEvent, type LineParser } from './event.ts';
import type { EventWriter, IngestWindow } from './writer.ts';

export interface IngestStats {
  lines: number;
  /** Lines that parsed into an event. */
  accepted: number;
  /** Events newly stored (re-ingested duplicates are accepted but not inserted). */
  inserted: number;
  /** Housekeeping lines of a sensor that carry no attack (Cowrie kex, OpenCanary boot, CSV header). */
  skipped: number;
  /** Events from non-global sources (a sensor's own network, a health check): never stored or listed. */
  nonGlobal: number;
  rejected: number;
  bytes: number;
}

export const emptyStats = (): IngestStats => ({ lines: 0, accepted: 0, inserted: 0, skipped: 0, nonGlobal: 0, rejected: 0, bytes: 0 });

export interface IngestInput {
  /** Name shown in rejections (`file:line: reason`). */
  name: string;
  /** The input's bytes; a chunk may be reused (refilled) once the next one is asked for. */
  stream: AsyncIterable<Buffer | string> | Iterable<Buffer | string>;
  parser: LineParser;
}

export interface WindowLimits {
  /** Close a window once it holds this many addresses (its facts are kept in memory until it commits). */
  addresses: number;
  /** ... or once it has been open this long. */
  milliseconds: number;
  /** ... or when the input has been quiet this long (streams only). */
  idleMilliseconds: number;
}

/** Events per batch (a COPY each): larger batches cost PostgreSQL fewer round trips; two fit in ~20 MB. */
export const DEFAULT_BATCH_SIZE = 50_000;

const DEFAULT_WINDOW_LIMITS: WindowLimits = { addresses: 200_000, milliseconds: 10_000, idleMilliseconds: 1_000 };

export interface IngestOptions {
  writer: EventWriter;
  /** Events per batch (one COPY). */
  batchSize?: number;
  windowLimits?: Partial<WindowLimits>;
  /** A line that could not be read: the input's name, the line's number (from 1) and why. */
  onReject?: (input: string, line: number, reason: string) => void;
  /** Called after every stored batch. */
  onProgress?: (stats: IngestStats) => void;
}

const IDLE = Symbol('idle');
const NO_BYTES = Buffer.alloc(0);
/**
 * Lines parsed between turns of the event loop while the database works: a batch's store is several round
 * trips (savepoint, COPY, …), and each of them waits for the parse loop to let go of the thread.
 */
const LINES_PER_TURN = 256;

/** Ingests the inputs in order through `writer`; returns the accumulated stats. */
export async function ingest(inputs: Iterable<IngestInput>, options: IngestOptions): Promise<IngestStats> {
  const { writer, batchSize = DEFAULT_BATCH_SIZE, onReject, onProgress } = options;
  const limits = { ...DEFAULT_WINDOW_LIMITS, ...options.windowLimits };
  const stats = emptyStats();
  const raw = new RawEvent();
  let failed: Error | undefined;
  const fail = (err: unknown) => {
    failed ??= err instanceof Error ? err : new Error(String(err));
  };

  let window: IngestWindow = writer.window();
  let openedAt = 0;
  let batch = new EventBatch(window.facts, writer.sensors);
  /** The batch stored last: free again once `storing` has settled, and then filled next. */
  let spare: EventBatch | undefined;
  /** The batch being stored (one at a time: they share the window's connection). */
  let storing: Promise<void> = Promise.resolve();
  /** The previous window's commit. */
  let committing: Promise<void> = Promise.resolve();

  const closeWindow = () => {
    const closing = window;
    const stored = storing;
    committing = (async () => {
      await stored;
      if (failed) throw failed;
      await closing.commit();
    })().catch(async (err: unknown) => {
      fail(err);
      await closing.abort();
    });
    window = writer.window();
    openedAt = 0;
  };

  const storeBatch = async () => {
    await storing;
    if (failed) throw failed;
    const full = batch;
    const into = window;
    if (openedAt === 0) openedAt = Date.now();
    storing = into.store(full).then((inserted) => {
      stats.inserted += inserted;
      onProgress?.(stats);
    }, fail);
    if (into.facts.size >= limits.addresses || Date.now() - openedAt >= limits.milliseconds) closeWindow();
    batch = spare ?? new EventBatch(window.facts, writer.sensors);
    batch.reuse(window.facts);
    spare = full;
  };

  /** Stores what has been read and closes the window (its commit goes on in the background). */
  const closeWhatIsRead = async () => {
    if (batch.count) await storeBatch();
    if (openedAt !== 0) {
      closeWindow();
      // Empty now: what it gets from here on belongs to the new window.
      batch.reuse(window.facts);
    }
  };

  try {
    for (const input of inputs) {
      const parser = input.parser;
      let number = 0;
      const chunks = Symbol.asyncIterator in input.stream ? withIdle(input.stream, limits.idleMilliseconds) : input.stream;
      const handle = (buf: Buffer, start: number, end: number): void => {
        stats.lines++;
        number++;
        if (end > start && buf[end - 1] === 13) end--;
        const read = parser.bytes?.(buf, start, end, raw) ?? 'declined';
        if (read !== 'declined') {
          if (read === 'skip') stats.skipped++;
          else if (isNeverBlockV4(raw.src)) stats.nonGlobal++;
          else {
            stats.accepted++;
            batch.addRaw(raw);
          }
          return;
        }
        const line = buf.toString('utf8', start, end);
        if (line.trim() === '') return;
        const result = parser.line(line);
        if ('event' in result) {
          if (isNeverBlock(result.event.src)) stats.nonGlobal++;
          else {
            stats.accepted++;
            batch.add(result.event);
          }
        } else if ('error' in result) {
          stats.rejected++;
          onReject?.(input.name, number, result.error);
        } else stats.skipped++;
      };
      // A line cut by a chunk boundary is put together in `carry`; every other line is read in place (a chunk
      // may be refilled by the input once the next one is asked for).
      let carry = NO_BYTES;
      for await (const chunk of chunks) {
        if (chunk === IDLE) {
          // The input paused: what was read so far is stored and committed now.
          await closeWhatIsRead();
          continue;
        }
        const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        stats.bytes += buf.length;
        let pos = 0;
        if (carry.length > 0) {
          const eol = buf.indexOf(10);
          carry = Buffer.concat([carry, buf.subarray(0, eol < 0 ? buf.length : eol)]);
          if (eol < 0) continue;
          handle(carry, 0, carry.length);
          carry = NO_BYTES;
          pos = eol + 1;
        }
        let turn = LINES_PER_TURN;
        for (let eol = buf.indexOf(10, pos); eol >= 0; eol = buf.indexOf(10, pos)) {
          handle(buf, pos, eol);
          pos = eol + 1;
          if (batch.count >= batchSize) await storeBatch();
          else if (--turn === 0) {
            turn = LINES_PER_TURN;
            await setImmediate();
          }
        }
        if (pos < buf.length) carry = Buffer.from(buf.subarray(pos));
      }
      if (carry.length > 0) handle(carry, 0, carry.length);
      if (batch.count >= batchSize) await storeBatch();
    }
    await closeWhatIsRead();
    await storing;
    await committing;
    if (failed) throw failed;
  } catch (err) {
    fail(err);
    await storing.catch(() => undefined);
    await committing.catch(() => undefined);
    throw failed ?? new Error(String(err));
  } finally {
    // The window opened last may have stored nothing; it must end all the same (the writer's next window
    // waits for it).
    await window.abort();
  }
  return stats;
}

/** The chunks of `source`, with IDLE yielded whenever none has come for `ms` milliseconds. */
async function* withIdle<T>(source: AsyncIterable<T>, ms: number): AsyncGenerator<T | typeof IDLE> {
  const it = source[Symbol.asyncIterator]();
  let pending = it.next();
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<typeof IDLE>((resolve) => (timer = setTimeout(() => resolve(IDLE), ms)));
      const next = await Promise.race([pending, idle]);
      clearTimeout(timer);
      if (next === IDLE) {
        yield IDLE;
        continue;
      }
      if (next.done) return;
      yield next.value;
      pending = it.next();
    }
  } finally {
    await it.return?.();
  }
}

/** 0 = every line stored, 1 = some lines rejected, 2 = nothing stored (every event line rejected). */
export function exitCodeOf(stats: IngestStats): 0 | 1 | 2 {
  if (stats.rejected === 0) return 0;
  return stats.accepted === 0 ? 2 : 1;
}

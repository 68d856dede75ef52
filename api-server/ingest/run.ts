// The body of `blockfeed ingest`, run in a worker thread (see cli.ts and worker.ts). Its job comes as the first
// message and the configuration as the second: the main thread sends the job as soon as it has read the
// arguments, and the worker starts reading and parsing while the main thread loads the configuration; the
// store is opened when that arrives, and the first batch waits for it. It reports to the main thread by
// message — progress, rejected lines, the final stats, or a failure.
// All the ingest's modules, the enrichment tables and the parse/encode garbage live in this worker's heap,
// whose size the main thread bounds with `resourceLimits`.
import { open } from 'node:fs/promises';
import { parentPort, type MessagePort } from 'node:worker_threads';
import type { Config } from '../../common/config.ts';
import { UserError } from '../../common/errors.ts';
import type { Database } from '../db/database.ts';
import { sharedEnricher } from '../enrich/enricher.ts';
import { parserFor, type InputFormat } from './formats/index.ts';
import { emptyStats, ingest, type IngestInput, type IngestStats } from './pipeline.ts';
import { EventWriter } from './writer.ts';

export interface IngestJob {
  /** File names; '-' for standard input (which the main thread pipes into the worker's stdin). */
  names: string[];
  format: InputFormat;
  sensor?: string;
  batchSize: number;
  /** How many rejected lines the main thread prints (the worker sends no more than that). */
  printRejections: number;
}

/**
 * The second message: the configuration the main thread loaded (it reads it anyway, for its logger and
 * progress, and reports a bad setting as every command does).
 */
export interface IngestConfigMessage {
  config: Config;
}

export type IngestMessage =
  | { kind: 'progress'; stats: IngestStats }
  | { kind: 'reject'; message: string }
  | { kind: 'done'; stats: IngestStats }
  | { kind: 'failed'; message: string; exitCode?: number };

function inputsOf(job: IngestJob): IngestInput[] {
  return job.names.map((name) => ({
    name: name === '-' ? 'stdin' : name,
    // Each input gets its own parser: CSV headers and Cowrie sessions do not cross files.
    parser: parserFor(job.format, { sensor: job.sensor }),
    get stream(): AsyncIterable<Buffer> {
      return name === '-' ? process.stdin : fileChunks(name);
    },
  }));
}

/**
 * A file's bytes, 1 MiB at a time into one reused buffer: a new buffer per chunk would be ~200 MB of
 * short-lived external memory per million Cowrie lines, and V8 answers such growth with full collections.
 */
async function* fileChunks(name: string): AsyncGenerator<Buffer> {
  const file = await open(name, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const { bytesRead } = await file.read(buf, 0, buf.length, null);
      if (bytesRead === 0) return;
      yield buf.subarray(0, bytesRead);
    }
  } finally {
    await file.close();
  }
}

/**
 * Opens and migrates the store once the configuration has come. Its modules (pg, the logger, the embedded
 * server's) are loaded then too, not before parsing starts.
 */
async function openStore(configured: Promise<Config>): Promise<Database> {
  const config = await configured;
  const [{ createLogger }, { openMigratedDatabase }] = await Promise.all([import('../../common/logging.ts'), import('../db/migrate.ts')]);
  return openMigratedDatabase({ config, log: createLogger({ level: config.logLevel }), applicationName: 'blockfeed-ingest', poolSize: 2 });
}

async function run(job: IngestJob, configured: Promise<Config>, post: (m: IngestMessage) => void): Promise<void> {
  const store = openStore(configured);
  const pool = store.then((db) => db.pool);
  // Both are awaited below, or by the first store; this only keeps a failure from counting as unhandled
  // while parsing goes on (or when there is nothing to store).
  store.catch(() => undefined);
  pool.catch(() => undefined);
  let stats: IngestStats;
  try {
    const running = emptyStats();
    stats = await ingest(inputsOf(job), {
      stats: running,
      writer: new EventWriter(pool, sharedEnricher),
      batchSize: job.batchSize,
      onProgress: (s) => post({ kind: 'progress', stats: s }),
      // Only what the main thread prints crosses over; the rest is counted in the stats.
      onReject: (message) => {
        if (running.rejected <= job.printRejections) post({ kind: 'reject', message });
      },
    });
  } finally {
    await (await store.catch(() => undefined))?.close();
  }
  // A store that cannot be opened fails the run even when there was nothing to store.
  await store;
  post({ kind: 'done', stats });
}

/** The next message from the main thread. */
function nextMessage<T>(port: MessagePort): Promise<T> {
  return new Promise<T>((resolve) => port.once('message', resolve));
}

if (parentPort) {
  const port = parentPort;
  const post = (m: IngestMessage) => port.postMessage(m);
  // The job is here by the time the worker has loaded its modules (the main thread sends it at ~0.12 s), so
  // nothing is loaded ahead of it: the enrichment tables wait until the parser first waits for the
  // database (EventWriter.idle).
  const job = await nextMessage<IngestJob>(port);
  // Listened for right away (each message is its own event, so the second cannot come before this listener).
  const configured = nextMessage<IngestConfigMessage>(port).then((m) => m.config);
  try {
    await run(job, configured, post);
  } catch (err) {
    if (err instanceof UserError) post({ kind: 'failed', message: err.message, exitCode: err.exitCode });
    else post({ kind: 'failed', message: (err as Error).stack ?? String(err) });
  }
}

// The body of `blockfeed ingest`, run in a worker thread whose heap the command bounds (cli.ts): it opens the
// store, ingests the job's inputs, and reports to the main thread by message — progress, rejected lines to
// print, the final stats, or a failure.
import { createReadStream } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config.ts';
import { UserError } from '../../common/errors.ts';
import { createLogger } from '../../common/logging.ts';
import { openMigratedDatabase } from '../store/migrate.ts';
import { sharedEnricher } from '../enrich/enricher.ts';
import { parserFor, type InputFormat } from './parsers/index.ts';
import { ingest, type IngestStats } from './pipeline.ts';
import { EventWriter, legacyIdsUntil } from './writer.ts';

export interface IngestJob {
  /** File names; '-' for standard input (which the main thread pipes into the worker's stdin). */
  names: string[];
  format: InputFormat;
  sensor?: string;
  batchSize: number;
  /** How many rejected lines the main thread prints (the worker sends no more than that). */
  printRejections: number;
  config: Config;
}

export type IngestMessage =
  | { kind: 'progress'; stats: IngestStats }
  | { kind: 'reject'; message: string }
  | { kind: 'done'; stats: IngestStats }
  | { kind: 'failed'; message: string; exitCode?: number };

async function run(job: IngestJob, post: (m: IngestMessage) => void): Promise<IngestStats> {
  const { config } = job;
  const db = await openMigratedDatabase({ config, log: createLogger({ level: config.logLevel }), applicationName: 'blockfeed-ingest', poolSize: 2 });
  try {
    let rejected = 0;
    const legacy = await legacyIdsUntil(db.pool);
    return await ingest(
      job.names.map((name) => ({
        name: name === '-' ? 'stdin' : name,
        // Each input gets its own parser: CSV headers and Cowrie sessions do not cross files.
        parser: parserFor(job.format, { sensor: job.sensor, legacyIdsUntil: legacy }),
        stream: name === '-' ? process.stdin : createReadStream(name, { highWaterMark: 1 << 20 }),
      })),
      {
        writer: new EventWriter(db.pool, sharedEnricher),
        batchSize: job.batchSize,
        onProgress: (stats) => post({ kind: 'progress', stats }),
        // Only what the main thread prints crosses over; the rest is counted in the stats.
        onReject: (input, line, reason) => {
          if (++rejected <= job.printRejections) post({ kind: 'reject', message: `${input}:${line}: ${reason}` });
        },
      },
    );
  } finally {
    await db.close();
  }
}

if (parentPort) {
  const port = parentPort;
  const post = (m: IngestMessage) => port.postMessage(m);
  try {
    post({ kind: 'done', stats: await run(workerData as IngestJob, post) });
  } catch (err) {
    if (err instanceof UserError) post({ kind: 'failed', message: err.message, exitCode: err.exitCode });
    else post({ kind: 'failed', message: (err as Error).stack ?? String(err) });
  }
}

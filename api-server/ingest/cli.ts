// `blockfeed ingest [FILE...|-] --format F [--sensor ID]`: bulk-loads sensor logs. Rejected lines are printed
// as `file:line: reason`; exit 0 = all stored, 1 = some lines rejected, 2 = nothing stored.
//
// The ingest runs in a worker thread (run.ts) with a bounded heap: a small young generation (the parse loop
// makes garbage fast, and V8 would grow the nursery past a 300 MB peak RSS) and a capped old one, so peak
// memory is set by design. The main thread checks the arguments, relays the worker's messages and prints.
import { statSync, type Stats } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { Option, type Command } from 'commander';
import { commandContext } from '../cli-context.ts';
import { parseIntegerOption } from '../../common/cli-support.ts';
import { UserError } from '../../common/errors.ts';
import { INPUT_FORMATS } from './parsers/index.ts';
import { DEFAULT_BATCH_SIZE, exitCodeOf, type IngestStats } from './pipeline.ts';
import { createProgress } from './progress.ts';
import type { IngestJob, IngestMessage } from './run.ts';

const MAX_PRINTED_REJECTIONS = 1000;
/** The worker's heap: room for the modules, the enrichment tables' lookups and two batches in flight. */
const HEAP_LIMITS = { maxYoungGenerationSizeMb: 24, maxOldGenerationSizeMb: 256 };

type IngestFlags = Pick<IngestJob, 'format' | 'sensor' | 'batchSize'>;

/** The input names ('-' for stdin) and their total size when all are regular files; refuses unreadable ones. */
function checkInputs(files: string[]): { names: string[]; totalBytes?: number } {
  const names = files.length ? files : ['-'];
  let totalBytes: number | undefined = 0;
  for (const name of names) {
    if (name === '-') {
      totalBytes = undefined;
      continue;
    }
    let st: Stats;
    try {
      st = statSync(name);
    } catch (err) {
      throw new UserError(`${name}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, 2);
    }
    if (!st.isFile()) throw new UserError(`${name}: not a regular file`, 2);
    if (totalBytes !== undefined) totalBytes += st.size;
  }
  return { names, totalBytes };
}

/** Runs the job in a bounded worker, calling `onMessage` for each report; resolves with the final stats. */
function runInWorker(job: IngestJob, onMessage: (m: IngestMessage) => void): Promise<IngestStats> {
  const readsStdin = job.names.includes('-');
  const worker = new Worker(new URL('./run.ts', import.meta.url), { workerData: job, stdin: readsStdin, resourceLimits: HEAP_LIMITS });
  if (readsStdin && worker.stdin) process.stdin.pipe(worker.stdin);
  return new Promise((resolve, reject) => {
    let outcome: IngestMessage | undefined;
    worker.on('message', (m: IngestMessage) => {
      if (m.kind === 'done' || m.kind === 'failed') outcome = m;
      else onMessage(m);
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (readsStdin && worker.stdin) process.stdin.unpipe(worker.stdin);
      if (outcome?.kind === 'done') resolve(outcome.stats);
      else if (outcome?.kind === 'failed' && outcome.exitCode !== undefined) reject(new UserError(outcome.message, outcome.exitCode));
      // An unexpected failure, reported with the worker's own stack (`message` is that stack).
      else if (outcome?.kind === 'failed') reject(Object.assign(new Error(outcome.message.split('\n', 1)[0]), { stack: outcome.message }));
      else reject(new Error(`the ingest worker stopped (exit code ${code}) before finishing`));
    });
  });
}

export function registerIngestCommands(program: Command): void {
  program
    .command('ingest')
    .description('load sensor logs (files, or - for stdin) into the store; bad lines are reported as file:line: reason')
    .argument('[files...]', 'log files; - or none reads standard input')
    .addOption(new Option('-f, --format <format>', 'input format').choices(INPUT_FORMATS).makeOptionMandatory())
    .option('-s, --sensor <id>', 'sensor name for lines that do not carry one')
    .option('--batch-size <n>', 'events per COPY (a transaction holds several)', parseIntegerOption('--batch-size', 1, 1_000_000), DEFAULT_BATCH_SIZE)
    .addHelpText('after', '\nExit status: 0 all lines stored, 1 some lines rejected, 2 nothing stored.')
    .action(async (files: string[], flags: IngestFlags) => {
      const { names, totalBytes } = checkInputs(files);
      const { config, log } = await commandContext();
      const progress = createProgress({ out: process.stderr, log, totalBytes });
      const job: IngestJob = { names, format: flags.format, sensor: flags.sensor, batchSize: flags.batchSize, printRejections: MAX_PRINTED_REJECTIONS, config };
      const stats = await runInWorker(job, (m) => {
        if (m.kind === 'progress') progress.update(m.stats);
        else if (m.kind === 'reject') process.stderr.write(`${m.message}\n`);
      });
      progress.done(stats);
      if (stats.rejected > MAX_PRINTED_REJECTIONS) process.stderr.write(`… and ${stats.rejected - MAX_PRINTED_REJECTIONS} more rejected lines\n`);
      process.stdout.write(
        `${stats.inserted} new events stored from ${stats.lines} lines` +
          ` (${stats.accepted - stats.inserted} already stored, ${stats.rejected} rejected, ${stats.skipped} without an attack,` +
          ` ${stats.nonGlobal} from non-global sources, not stored)\n`,
      );
      process.exitCode = exitCodeOf(stats);
    });
}

// `blockfeed ingest [FILE...|-] --format F [--sensor ID]`: bulk-loads sensor logs. Rejected lines are printed
// as `file:line: reason`; exit 0 = all stored, 1 = some lines rejected, 2 = nothing stored.
import { createReadStream, statSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { commandContext, parseIntegerOption } from '../../common/cli-support.ts';
import { UserError } from '../../common/errors.ts';
import { openDatabase } from '../db/database.ts';
import { migrate } from '../db/migrate.ts';
import { sharedEnricher } from '../enrich/enricher.ts';
import { INPUT_FORMATS, parserFor, type InputFormat } from './formats/index.ts';
import { exitCodeOf, ingest, type IngestInput } from './pipeline.ts';
import { createProgress } from './progress.ts';
import { EventWriter } from './writer.ts';

const MAX_PRINTED_REJECTIONS = 1000;

interface IngestFlags {
  format: InputFormat;
  sensor?: string;
  batchSize: number;
}

function inputsFor(files: string[], flags: IngestFlags): { inputs: IngestInput[]; totalBytes?: number } {
  const names = files.length ? files : ['-'];
  let totalBytes: number | undefined = 0;
  for (const name of names) {
    if (name === '-') {
      totalBytes = undefined;
      continue;
    }
    let size: number;
    try {
      const st = statSync(name);
      if (!st.isFile()) throw new UserError(`${name}: not a regular file`, 2);
      size = st.size;
    } catch (err) {
      if (err instanceof UserError) throw err;
      throw new UserError(`${name}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, 2);
    }
    if (totalBytes !== undefined) totalBytes += size;
  }
  const inputs = names.map((name) => ({
    name: name === '-' ? 'stdin' : name,
    // Each input gets its own parser: CSV headers and Cowrie sessions do not cross files.
    parser: parserFor(flags.format, { sensor: flags.sensor }),
    get stream(): AsyncIterable<Buffer> {
      return name === '-' ? process.stdin : createReadStream(name, { highWaterMark: 1 << 16 });
    },
  }));
  return { inputs, totalBytes };
}

export function registerIngestCommands(program: Command): void {
  program
    .command('ingest')
    .description('load sensor logs (files, or - for stdin) into the store; bad lines are reported as file:line: reason')
    .argument('[files...]', 'log files; - or none reads standard input')
    .addOption(new Option('-f, --format <format>', 'input format').choices(INPUT_FORMATS).makeOptionMandatory())
    .option('-s, --sensor <id>', 'sensor name for lines that do not carry one')
    .option('--batch-size <n>', 'events per transaction', parseIntegerOption('--batch-size', 1, 1_000_000), 10_000)
    .addHelpText('after', '\nExit status: 0 all lines stored, 1 some lines rejected, 2 nothing stored.')
    .action(async (files: string[], flags: IngestFlags) => {
      const { inputs, totalBytes } = inputsFor(files, flags);
      const { config, log } = commandContext();
      const db = await openDatabase({ config, log, applicationName: 'blockfeed-ingest', poolSize: 2 });
      try {
        await migrate(db.pool, log);
        const progress = createProgress({ out: process.stderr, log, totalBytes });
        const enricher = sharedEnricher();
        let printed = 0;
        const stats = await ingest(inputs, {
          sink: new EventWriter(db.pool, enricher),
          batchSize: flags.batchSize,
          onProgress: (s) => progress.update(s),
          onReject: (message) => {
            if (printed++ < MAX_PRINTED_REJECTIONS) process.stderr.write(`${message}\n`);
          },
        });
        progress.done(stats);
        if (printed > MAX_PRINTED_REJECTIONS) process.stderr.write(`… and ${printed - MAX_PRINTED_REJECTIONS} more rejected lines\n`);
        const already = stats.accepted - stats.inserted;
        process.stdout.write(
          `${stats.inserted} new events stored from ${stats.lines} lines` +
            ` (${already} already stored, ${stats.rejected} rejected, ${stats.skipped} without an attack)\n`,
        );
        process.exitCode = exitCodeOf(stats);
      } finally {
        await db.close();
      }
    });
}

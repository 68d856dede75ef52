// `blockfeed ship FILE... --format F --url URL --token-file PATH [--sensor ID]`: the sensor-side shipper.
// It follows log files like `tail -F` and pushes their lines to the api-server's POST /internal/v1/events
// (README "Running sensors", docs/sensors.md). It imports only common/: it is what runs on sensor machines.
import path from 'node:path';
import { Option, type Command } from 'commander';
import { parseIntegerOption, untilSignal } from '../common/cli-support.ts';
import { parseBindAddress } from '../common/http-endpoints.ts';
import { INPUT_FORMATS, type InputFormat } from '../common/input-formats.ts';
import { createLogger, logLevelFromEnv } from '../common/logging.ts';

/** The route's body limit (32 MiB), less room for a CSV header. */
const MAX_BATCH_BYTES = 31 * 1024 * 1024;

interface ShipFlags {
  format: InputFormat;
  url: string;
  tokenFile: string;
  sensor?: string;
  stateFile?: string;
  metricsBindAddress: string;
  batchLines: number;
  batchBytes: number;
  lingerMs: number;
}

export function registerShipperCommands(program: Command): void {
  program
    .command('ship')
    .description('follow sensor log files (like tail -F) and push their lines to the api-server, resuming where it stopped')
    .argument('<files...>', 'the live log files (cowrie.json, not its rotated copies: those are found by themselves)')
    .addOption(new Option('-f, --format <format>', 'log format').choices(INPUT_FORMATS).makeOptionMandatory())
    .requiredOption('--url <url>', "the api-server's base URL, e.g. https://blockfeed.example.org")
    .requiredOption('--token-file <path>', "file holding the api-server's BLOCKFEED_INGEST_TOKEN")
    .option('-s, --sensor <id>', 'sensor name for lines that do not carry one')
    .option('--state-file <path>', 'where the acknowledged positions are kept (default: $BLOCKFEED_DATA_DIR/ship-state.json, BLOCKFEED_DATA_DIR defaulting to ./.blockfeed)')
    .option('--metrics-bind-address <addr>', 'Prometheus /metrics address, e.g. 127.0.0.1:9464 or :9464; 0 = off', '0')
    .option('--batch-lines <n>', 'lines per push at most', parseIntegerOption('--batch-lines', 1, 1_000_000), 50_000)
    .option('--batch-bytes <n>', 'bytes per push at most', parseIntegerOption('--batch-bytes', 4096, MAX_BATCH_BYTES), 8 * 1024 * 1024)
    .option('--linger-ms <ms>', 'how long a new line waits for more before it is pushed', parseIntegerOption('--linger-ms', 0, 10_000), 200)
    .addHelpText('after', '\nStops on SIGTERM or SIGINT (exit 0). Exits 1 when the server refuses the token or the request (401, 403, 404, ...).')
    .action(async (files: string[], flags: ShipFlags) => {
      // Loaded here: the other commands need none of it.
      const { ship, pushUrl } = await import('./run.ts');
      const url = pushUrl(flags.url, flags.format, flags.sensor);
      const metricsBind = parseBindAddress(flags.metricsBindAddress, '--metrics-bind-address');
      const stateFile = path.resolve(flags.stateFile ?? path.join(process.env.BLOCKFEED_DATA_DIR?.trim() || '.blockfeed', 'ship-state.json'));
      const log = createLogger({ level: logLevelFromEnv() });
      const { signalled, dispose } = untilSignal(log);
      const stop = new AbortController();
      void signalled.then(() => stop.abort());
      try {
        await ship(
          { files, format: flags.format, url, tokenFile: flags.tokenFile, stateFile, limits: { lines: flags.batchLines, bytes: flags.batchBytes }, lingerMs: flags.lingerMs, metricsBind },
          log,
          stop.signal,
        );
      } finally {
        dispose();
        log.flush();
      }
    });
}

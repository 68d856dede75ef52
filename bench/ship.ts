// Shipper benchmark: how soon a line a sensor writes is stored, and how fast a backlog goes, through the
// real `blockfeed ship` and `blockfeed serve` on an embedded PostgreSQL with its durable defaults.
//
//   node bench/ship.ts [--lines N] [--samples S] [--batch-lines B]      (make bench-ship)
//
// - latency: S single Cowrie lines appended one at a time, each timed from the append until its event is in
//   the events table (polled every 5 ms); median, 90th percentile and maximum.
// - backlog: N generated Cowrie lines (bench/cowrie-gen.ts) in a file the shipper starts on, timed until
//   the state file says all are acknowledged, against `blockfeed ingest` of the same file into a database
//   of its own on the same server (the baseline: the same pipeline without HTTP, batches or a follower).
import { appendFile, chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ensureDatabaseExists, withDatabase } from '../api-server/store/database.ts';
import { startEmbedded } from '../api-server/store/embedded.ts';
import { migrate } from '../api-server/store/migrate.ts';
import { createLogger } from '../common/logging.ts';
import { BLOCKFEED } from '../test/support/cli.ts';
import { startManaged } from '../test/support/processes.ts';
import { cowrieLines } from './cowrie-gen.ts';
import { median, startServeChild, timeCommand } from './harness.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const LINES = option('--lines', 200_000);
const SAMPLES = option('--samples', 30);
/** Passed on to the shipper, e.g. --batch-lines 50000. */
const SHIP_ARGS = args.includes('--batch-lines') ? ['--batch-lines', String(option('--batch-lines', 10_000))] : [];
const TOKEN = 'bench-ship-ingest-token-0123456789';
const log = createLogger({ level: 'warn' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-bench-ship-'));
await chmod(dir, 0o755);
const server = await startEmbedded({ dataDir: path.join(dir, 'pg-data'), log });
const databases = { ship: withDatabase(server.url, 'ship'), ingest: withDatabase(server.url, 'ingest') };
for (const [name, url] of Object.entries(databases)) {
  await ensureDatabaseExists(server.url, name);
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await migrate(pool, log);
  await pool.end();
}
const serve = await startServeChild(databases.ship, { BLOCKFEED_INGEST_TOKEN: TOKEN });
await writeFile(path.join(dir, 'token'), TOKEN);
const pool = new pg.Pool({ connectionString: databases.ship, max: 2 });

function ship(file: string, stateFile: string) {
  return startManaged('ship', BLOCKFEED, ['ship', file, '--format', 'cowrie', '--url', serve.base, '--token-file', path.join(dir, 'token'), '--state-file', stateFile, ...SHIP_ARGS], {
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
}

async function acknowledgedLines(stateFile: string, file: string): Promise<number> {
  try {
    return (JSON.parse(await readFile(stateFile, 'utf8')) as { files: Record<string, { line: number }> }).files[file]?.line ?? 0;
  } catch {
    return 0;
  }
}

try {
  // Latency: one line at a time, after a quiet spell (the linger applies).
  const live = path.join(dir, 'live.json');
  await writeFile(live, '');
  const shipper = ship(live, path.join(dir, 'live-state.json'));
  await sleep(2000);
  const latencies: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const username = `latency-${i}`;
    const line = JSON.stringify({
      eventid: 'cowrie.login.failed', timestamp: new Date().toISOString(), src_ip: '198.51.100.77', src_port: 40000 + i, dst_ip: '192.0.2.1',
      dst_port: 2222, session: `bench${i}`, protocol: 'ssh', username, password: 'x', message: 'login attempt failed', sensor: 'hp-bench-latency',
    });
    const started = performance.now();
    await appendFile(live, `${line}\n`);
    for (;;) {
      const { rowCount } = await pool.query("select 1 from events where sensor = 'hp-bench-latency' and username = $1", [username]);
      if (rowCount) break;
      if (performance.now() - started > 30_000) throw new Error(`line ${i} not stored after 30 s:\n${shipper.output()}`);
      await sleep(5);
    }
    latencies.push(performance.now() - started);
    await sleep(300 + Math.random() * 200);
  }
  await shipper.stop();
  const sorted = latencies.toSorted((a, b) => a - b);
  console.log(
    `latency, append to stored, ${SAMPLES} single lines: median ${median(latencies).toFixed(0)} ms, p90 ${sorted[Math.floor(SAMPLES * 0.9)]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms` +
      ' (of which 200 ms is the linger)',
  );

  // Backlog: the same file shipped, and ingested by the CLI.
  const backlog = path.join(dir, 'backlog.json');
  let text = '';
  for (const line of cowrieLines(LINES, 7)) text += `${line}\n`;
  await writeFile(backlog, text);
  const mb = Buffer.byteLength(text) / 1024 / 1024;
  process.env.DATABASE_URL = databases.ingest;
  const ingestSeconds = timeCommand(BLOCKFEED, ['ingest', backlog, '--format', 'cowrie']);
  const state = path.join(dir, 'backlog-state.json');
  const started = performance.now();
  const backlogShipper = ship(backlog, state);
  while ((await acknowledgedLines(state, backlog)) < LINES) {
    if (!backlogShipper.running()) throw new Error(`ship exited:\n${backlogShipper.output()}`);
    await sleep(20);
  }
  const shipSeconds = (performance.now() - started) / 1000;
  await backlogShipper.stop();
  const rss = await serve.peakRssMiB();
  console.log(
    `backlog of ${LINES} Cowrie lines (${mb.toFixed(0)} MB): shipped in ${shipSeconds.toFixed(1)} s (${(LINES / shipSeconds).toFixed(0)} lines/s);` +
      ` blockfeed ingest of the same file ${ingestSeconds.toFixed(1)} s (${(LINES / ingestSeconds).toFixed(0)} lines/s): ratio ${(ingestSeconds / shipSeconds).toFixed(2)}; api-server peak RSS ${rss.toFixed(0)} MB`,
  );
} finally {
  await pool.end();
  await serve.stop();
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}

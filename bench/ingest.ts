// Ingest benchmark: N Cowrie events through `blockfeed ingest` (parse + enrichment +
// classification + rollups), as a rate relative to PostgreSQL's own COPY of the same rows into a bare table,
// both measured in this run on the same server. Also reports the ingest process's peak RSS.
//
//   node bench/ingest.ts [--events N] [--batch-size B] [--runs R]      (make bench-ingest)
//
// Each run is a pair — the baseline COPY, then the ingest into emptied tables — and the figure is the median
// ratio of the pairs: on a shared machine one pair's ratio can be ±10% off, and the median of three still
// moves by ±0.04 with the host, so seven pairs are the default.
//
// Uses DATABASE_URL when set, else a throwaway embedded PostgreSQL in a temporary directory.
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createLogger } from '../common/logging.ts';
import { startEmbedded, type EmbeddedServer } from '../api-server/store/embedded.ts';
import { ensureDatabaseExists, withDatabase } from '../api-server/store/database.ts';
import { migrate } from '../api-server/store/migrate.ts';
import { parserFor } from '../api-server/ingest/parsers/index.ts';
import { cowrieLines } from './cowrie-gen.ts';

const args = process.argv.slice(2);
const eventsArg = args.indexOf('--events');
const EVENTS = eventsArg >= 0 ? Number(args[eventsArg + 1]) : 1_000_000;
const batchArg = args.indexOf('--batch-size');
const BATCH = batchArg >= 0 ? ['--batch-size', String(args[batchArg + 1])] : [];
const runsArg = args.indexOf('--runs');
const RUNS = runsArg >= 0 ? Number(args[runsArg + 1]) : 7;
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a positive integer, got ${String(args[runsArg + 1])}`);
const BLOCKFEED = fileURLToPath(new URL('../bin/blockfeed', import.meta.url));
const log = createLogger({ level: 'warn' });

async function writeLines(file: string, lines: Iterable<string>): Promise<void> {
  const out = createWriteStream(file);
  await pipeline(
    (function* () {
      let buf = '';
      for (const l of lines) {
        buf += `${l}\n`;
        if (buf.length > 1 << 20) {
          yield buf;
          buf = '';
        }
      }
      if (buf) yield buf;
    })(),
    out,
  );
}

/**
 * CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 1/100 s); with
 * `reapedChildren`, also those of its children that have exited.
 */
function cpuSeconds(pid: number, reapedChildren = false): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // After the command: state is field 3, utime 14, stime 15, cutime 16, cstime 17 (1-based, as proc(5) counts).
  const own = Number(fields[11]) + Number(fields[12]);
  return (reapedChildren ? own + Number(fields[13]) + Number(fields[14]) : own) / 100;
}

/** CPU seconds used so far by the embedded PostgreSQL: the postmaster, its live processes and those gone. */
function serverCpuSeconds(clusterDir: string): number {
  const pid = Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let total = cpuSeconds(pid, true);
  for (const child of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')) {
    try {
      if (child) total += cpuSeconds(Number(child));
    } catch {
      /* exited meanwhile (and counted with the postmaster's reaped children from now on) */
    }
  }
  return total;
}

/**
 * Peak RSS (VmHWM, kB) and CPU seconds of a running process, polled every 50 ms; both only grow, so the last
 * readings are the figures (the CPU one misses at most the last 50 ms). The CPU time tells the figures of a
 * run on a busy machine apart from the code's own cost.
 */
function watchProcess(pid: number): () => { peakKb: number; cpu: number } {
  let peakKb = 0;
  let cpu = 0;
  const read = () => {
    try {
      const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
      cpu = Math.max(cpu, cpuSeconds(pid));
    } catch {
      /* exited */
    }
  };
  const timer = setInterval(read, 50);
  return () => {
    clearInterval(timer);
    return { peakKb, cpu };
  };
}

const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-bench-'));
await chmod(dir, 0o755);
let server: EmbeddedServer | undefined;
try {
  let url = process.env.DATABASE_URL;
  if (!url) {
    server = await startEmbedded({ dataDir: path.join(dir, 'pg'), log });
    await ensureDatabaseExists(server.url, 'bench');
    url = withDatabase(server.url, 'bench');
  }
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  await migrate(pool, log);
  await pool.query('drop table if exists bench_bare');

  const end = Date.now() - 3_600_000;
  const logFile = path.join(dir, 'cowrie.json');
  const rowsFile = path.join(dir, 'rows.copy');
  process.stderr.write(`generating ${EVENTS.toLocaleString('en-US')} Cowrie events…\n`);
  await writeLines(logFile, cowrieLines(EVENTS, 42, end));
  // The same events as rows of the events table, for the baseline.
  const parser = parserFor('cowrie');
  // COPY text: \N for NULL, backslash escapes.
  const text = (v: string | number | null) => (v === null ? '\\N' : String(v).replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c] as string));
  await writeLines(
    rowsFile,
    (function* () {
      for (const line of cowrieLines(EVENTS, 42, end)) {
        const r = parser.line(line);
        if (!('event' in r)) throw new Error(`generator produced a line the parser refuses: ${line}`);
        const e = r.event;
        yield [new Date(e.ts).toISOString(), e.id, e.src.text, e.dstPort, e.service, e.proto, e.source, e.sensor, e.action, e.username, e.command].map(text).join('\t');
      }
    })(),
  );

  const clusterDir = path.join(dir, 'pg', 'pg');
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const ratios: number[] = [];
  let peakMb = 0;
  let stored = { events: 0, hourly: 0, addresses: 0 };
  for (let run = 1; run <= RUNS; run++) {
    await pool.query('truncate events, ip_hourly, ip_hourly_dirty, addresses, sensors');
    await pool.query('checkpoint');
    // Baseline: PostgreSQL's COPY of the same rows into a bare table (same columns, no keys, no indexes).
    await pool.query(`create table bench_bare (ts timestamptz, id uuid, src_ip inet, dst_port integer, service text, proto text,
      source text, sensor text, action smallint, username text, command text)`);
    const client = await pool.connect();
    const copyCpuBefore = server ? serverCpuSeconds(clusterDir) : NaN;
    const t0 = performance.now();
    await pipeline(createReadStream(rowsFile, { highWaterMark: 1 << 20 }), client.query(copyFrom('copy bench_bare from stdin')));
    const copySeconds = (performance.now() - t0) / 1000;
    const copyCpu = server ? serverCpuSeconds(clusterDir) - copyCpuBefore : NaN;
    client.release();
    await pool.query('drop table bench_bare');
    await pool.query('checkpoint');

    // The pipeline: the real CLI, as a user runs it (the launcher execs Node, so the pid is Node's).
    const serverCpuBefore = server ? serverCpuSeconds(clusterDir) : NaN;
    const t1 = performance.now();
    const child = spawn(BLOCKFEED, ['ingest', logFile, '--format', 'cowrie', ...BATCH], {
      env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const stopWatching = watchProcess(child.pid as number);
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const ingestSeconds = (performance.now() - t1) / 1000;
    const { peakKb, cpu } = stopWatching();
    const serverCpu = server ? serverCpuSeconds(clusterDir) - serverCpuBefore : NaN;
    if (code !== 0) throw new Error(`ingest exited ${code}: ${stdout}`);
    const { rows } = await pool.query<{ events: number; hourly: number; addresses: number }>(
      'select (select count(*)::int from events) as events, (select count(*)::int from ip_hourly) as hourly, (select count(*)::int from addresses) as addresses',
    );
    stored = rows[0] ?? stored;
    const ratio = copySeconds / ingestSeconds;
    ratios.push(ratio);
    peakMb = Math.max(peakMb, peakKb / 1024);
    process.stdout.write(
      `run ${run}/${RUNS}: COPY ${copySeconds.toFixed(2)} s${server ? ` (${copyCpu.toFixed(1)} s PostgreSQL CPU)` : ''}, ` +
        `ingest ${ingestSeconds.toFixed(2)} s (${cpu.toFixed(1)} s CPU in the process${server ? `, ${serverCpu.toFixed(1)} s PostgreSQL` : ''}), ` +
        `ratio ${ratio.toFixed(2)}, peak RSS ${(peakKb / 1024).toFixed(0)} MB\n`,
    );
  }
  await pool.end();

  process.stdout.write(
    [
      `events:                 ${fmt(EVENTS)} (stored ${fmt(stored.events)}; ${fmt(stored.hourly)} hourly rows, ${fmt(stored.addresses)} addresses)`,
      `ratio ingest / COPY:    ${median(ratios).toFixed(2)} median of ${RUNS} (${ratios.map((r) => r.toFixed(2)).join(' ')})  (target >= 0.40)`,
      `ingest peak RSS:        ${peakMb.toFixed(0)} MB  (target <= 300 MB)`,
      '',
    ].join('\n'),
  );
} finally {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
}

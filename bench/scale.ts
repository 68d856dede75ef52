// bench/scale: a month of a large sensor network (bench/scale-data.ts, written straight into the tables:
// every event counted in the rollups, only the raw events of the hours a measured request reads stored), its
// rollups built by compaction, then against the real `blockfeed serve`:
//
// 1. uncached (cache off) stats, export txt/json/csv at 24, 168 and 720 hours and dedup at 24 and 168 hours
//    (its longest window), each beside PostgreSQL's COPY of the same rows (psql \copy to /dev/null; stats
//    has no such baseline);
// 2. 200 identical concurrent pulls of a cold 720-hour export (cache on, fresh server) against one pull on
//    a fresh server, gzip-compressed and as it is: server CPU (blockfeed serve + PostgreSQL, user + system), p50/p99 latency, failures and
//    the server's peak RSS.
//
// Targets (printed, never asserted): uncached 720-hour json export ≤ 2× COPY of its rows; stats at 720 hours
// ≤ 1 s; the herd ≤ 1.2× the server CPU of one pull, none failing, memory bounded.
// Knobs: ADDRESSES (1,000,000), EVENTS (30,000,000), ROUNDS (3), HERD (200), HERD_FORMAT (json),
// HERD_CODINGS (gzip,identity: a herd for each Accept-Encoding);
// SERVE_CPU_PROF=dir writes a V8 CPU profile of each of the two herd-phase servers there (node --cpu-prof).
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createLogger } from '../common/logging.ts';
import { LIMITS } from '../common/vocabulary.ts';
import type { ExportQuery } from '../api-server/query/endpoint-params.ts';
import { addressesSql, recordsSql, type ListFilter } from '../api-server/query/list-sql.ts';
import { dedupFilter, exportFilter, listInstant } from '../api-server/query/lists.ts';
import { completeHours, hourOf, planWindow, windowRowsSql } from '../api-server/query/rollups.ts';
import { createKey } from '../api-server/keys/store.ts';
import { compactHourly } from '../api-server/retention/compaction.ts';
import { ensureDatabaseExists, withDatabase } from '../api-server/store/database.ts';
import { startEmbedded } from '../api-server/store/embedded.ts';
import { migrate } from '../api-server/store/migrate.ts';
import { median, requireCommands, startServeChild, timeCommand, type ServeChild } from './harness.ts';
import { buildScaleData, writePortTotals } from './scale-data.ts';

const ADDRESSES = Number(process.env.ADDRESSES ?? 1_000_000);
const EVENTS = Number(process.env.EVENTS ?? 30_000_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const HERD = Number(process.env.HERD ?? 200);
const HERD_FORMAT = process.env.HERD_FORMAT ?? 'json';
/** The Accept-Encoding of the herd's pulls, one herd each: gzip as pulling clients send it, identity for comparison. */
const HERD_CODINGS = (process.env.HERD_CODINGS ?? 'gzip,identity').split(',');
const SERVE_CPU_PROF = process.env.SERVE_CPU_PROF;
const DAYS = 30;
const WINDOWS = [24, 168, 720];
/** Hours of raw events stored from each window's start (the hour stats reads raw moves on as the bench runs), and up to the end. */
const KEPT_HOURS = 6;
const TICKS = 100; // clock ticks per second (USER_HZ)
const HOUR_MS = 3_600_000;

requireCommands('psql', 'curl');
const say = (line: string) => process.stderr.write(`${line}\n`);

const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-bench-scale-'));
await chmod(dir, 0o755);
const log = createLogger({ level: 'warn' });
const server = await startEmbedded({
  dataDir: dir,
  log,
  settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
});
await ensureDatabaseExists(server.url, 'bench');
const url = withDatabase(server.url, 'bench');
const pool = new pg.Pool({ connectionString: url, max: 4 });

/** CPU seconds, user and system. */
interface Cpu {
  user: number;
  system: number;
}

/** CPU of a process and its reaped children, plus its live children's (PostgreSQL's backends). */
async function processTreeCpu(pid: number): Promise<Cpu> {
  const stat = async (p: number) => {
    const text = await readFile(`/proc/${p}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  };
  const own = await stat(pid);
  // Fields after the name, from state (3rd field): utime 14, stime 15, cutime 16, cstime 17 → indexes 11..14.
  let user = Number(own[11]) + Number(own[13]);
  let system = Number(own[12]) + Number(own[14]);
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = await stat(Number(entry));
      if (Number(f[1]) !== pid) continue;
      user += Number(f[11]);
      system += Number(f[12]);
    } catch {
      /* gone meanwhile */
    }
  }
  return { user: user / TICKS, system: system / TICKS };
}

/** PostgreSQL's postmaster: the parent of every backend, this bench's own included. */
async function postmasterPid(): Promise<number> {
  const { rows } = await pool.query<{ pid: number }>('select pg_backend_pid() as pid');
  const stat = await readFile(`/proc/${rows[0]?.pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The server's CPU: blockfeed serve's (user, system) and PostgreSQL's. */
interface ServerCpu {
  serve: Cpu;
  postgres: number;
}

async function serverCpu(serve: ServeChild): Promise<ServerCpu> {
  const pgCpu = await processTreeCpu(await postmasterPid());
  return { serve: await processTreeCpu(serve.child.pid as number), postgres: pgCpu.user + pgCpu.system };
}

/** What the server spent between two readings: total, and its split. */
function spent(before: ServerCpu, after: ServerCpu): { total: number; split: string } {
  const user = after.serve.user - before.serve.user;
  const system = after.serve.system - before.serve.system;
  const postgres = after.postgres - before.postgres;
  return { total: user + system + postgres, split: `serve ${user.toFixed(2)} user + ${system.toFixed(2)} system, PostgreSQL ${postgres.toFixed(2)}` };
}

function exportQuery(hours: number, format: 'txt' | 'json' | 'csv'): ExportQuery {
  return { type: 'all', source: 'all', service: 'all', level: 'all', precision: 'standard', hours, include_research: 0, format, download: 0 };
}

/** The rows a list reads, as the server reads them: records over the window's coarsest complete rollups. */
async function recordsCopySql(filter: ListFilter): Promise<string> {
  const start = hourOf(filter.since);
  return recordsSql(filter, undefined, false, windowRowsSql(planWindow(start, await completeHours(pool, start))));
}

const copy = (sql: string) => timeCommand('psql', ['-X', '-q', url, '-c', `\\copy (${sql.replace(/\s+/g, ' ')}) to '/dev/null'`]);
const fmt = (values: number[]) => `median ${median(values).toFixed(3)} s (${values.map((v) => v.toFixed(2)).join(' ')})`;

try {
  await migrate(pool, log);
  let t = Date.now();
  // The month ends at the start of this hour: the last hour is the ragged edge read from the hourly rows.
  const now = hourOf(new Date());
  const keptHours = [...WINDOWS.map((hours) => now - hours * HOUR_MS), now - KEPT_HOURS * HOUR_MS].map((from) => ({ from, to: from + KEPT_HOURS * HOUR_MS }));
  await buildScaleData(pool, { addresses: ADDRESSES, events: EVENTS, days: DAYS, now, keptHours, progress: say });
  const built = (Date.now() - t) / 1000;
  t = Date.now();
  await pool.query(`insert into ip_hourly_dirty (day) select generate_series($1::date, $2::date, interval '1 day') on conflict do nothing`, [
    new Date(now - (DAYS + 1) * 86_400_000).toISOString().slice(0, 10),
    new Date(now).toISOString().slice(0, 10),
  ]);
  await compactHourly(pool);
  await writePortTotals(pool);
  await pool.query('analyze');
  const rolled = (Date.now() - t) / 1000;
  const { key } = await createKey(pool, 'enterprise', 'bench');
  const { rows: sizes } = await pool.query<Record<string, string>>(
    `select (select count(*) from addresses)::text as addresses, (select count(*) from ip_hourly)::text as hourly,
            (select sum(attacks) from ip_hourly)::text as attacks, (select count(*) from events)::text as stored,
            (select count(*) from ip_daily)::text as daily, pg_size_pretty(pg_database_size(current_database())) as size`,
  );
  const size = sizes[0] as Record<string, string>;
  const lines = [
    `bench/scale: ${EVENTS} events over ${DAYS} days from ${ADDRESSES} addresses; ${size.addresses} addresses, ${size.attacks} attacks in ${size.hourly} hourly rows, ${size.daily} daily rows, ${size.stored} raw events stored (${KEPT_HOURS} h at each window's start and the end), ${size.size}`,
    `  built in ${built.toFixed(0)} s, rollups (compaction) in ${rolled.toFixed(0)} s; ${ROUNDS} rounds, medians`,
  ];
  for (const line of lines) say(line);

  // 1. Uncached: the cache off, every request from the store.
  const uncached = await startServeChild(url, { BLOCKFEED_CACHE_MAX_BYTES: '0' });
  try {
    const get = (p: string) => timeCommand('curl', ['-sf', '-o', '/dev/null', '-H', `X-API-Key: ${key}`, `${uncached.base}${p}`]);
    for (const hours of WINDOWS) {
      const at = listInstant(new Date());
      const cases: [string, string, () => Promise<string> | undefined][] = [
        ['stats', `/api/stats?hours=${hours}`, () => undefined],
        ['export txt', `/api/export?hours=${hours}&format=txt`, async () => addressesSql(exportFilter(exportQuery(hours, 'txt'), at))],
        ['export json', `/api/export?hours=${hours}&format=json`, () => recordsCopySql(exportFilter(exportQuery(hours, 'json'), at))],
        ['export csv', `/api/export?hours=${hours}&format=csv`, () => recordsCopySql(exportFilter(exportQuery(hours, 'csv'), at))],
      ];
      // dedup's window is at most a week (LIMITS.dedupMaxHours).
      if (hours <= LIMITS.dedupMaxHours) cases.push(['dedup', `/api/dedup?hours=${hours}`, async () => addressesSql(dedupFilter({ hours }, at))]);
      for (const [name, p, baseline] of cases) {
        const sql = await baseline();
        const api: number[] = [];
        const copies: number[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          if (sql) copies.push(copy(sql));
          api.push(get(p));
        }
        const ratio = sql ? `  ${(median(api) / median(copies)).toFixed(2)}x COPY ${fmt(copies)}` : '';
        lines.push(`  ${String(hours).padStart(3)} h ${name.padEnd(11)} API ${fmt(api)}${ratio}`);
        say(lines.at(-1) as string);
      }
    }
  } finally {
    await uncached.stop();
  }

  // 2. The herd, in each coding: one pull on a fresh server, then HERD identical pulls at once on another
  // fresh server. The pulls count the bytes as sent (node:http does not decompress), as a client that stores
  // the list would.
  const herdPath = `/api/export?hours=720&format=${HERD_FORMAT}`;
  const pull = (base: string, coding: string) =>
    new Promise<{ ok: boolean; bytes: number; seconds: number }>((resolve, reject) => {
      const started = performance.now();
      const req = httpGet(`${base}${herdPath}`, { headers: { 'x-api-key': key, 'accept-encoding': coding } }, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => resolve({ ok: res.statusCode === 200, bytes, seconds: (performance.now() - started) / 1000 }));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
  const profiled = (name: string): Record<string, string> =>
    SERVE_CPU_PROF ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${SERVE_CPU_PROF} --cpu-prof-name=${name}.cpuprofile` } : {};
  lines.push(`  herd: GET ${herdPath}, cold`);
  for (const coding of HERD_CODINGS) {
    const single = await startServeChild(url, profiled(`one-pull-${coding}`));
    let one: { cpu: { total: number; split: string }; seconds: number; bytes: number; rss: number };
    try {
      const before = await serverCpu(single);
      const r = await pull(single.base, coding);
      if (!r.ok) throw new Error(`the single ${coding} pull failed`);
      one = { cpu: spent(before, await serverCpu(single)), seconds: r.seconds, bytes: r.bytes, rss: await single.peakRssMiB() };
    } finally {
      await single.stop();
    }
    const herdServer = await startServeChild(url, profiled(`herd-${coding}`));
    try {
      const before = await serverCpu(herdServer);
      const results = await Promise.all(
        Array.from({ length: HERD }, () => pull(herdServer.base, coding).catch(() => ({ ok: false, bytes: 0, seconds: Number.NaN }))),
      );
      const cpu = spent(before, await serverCpu(herdServer));
      const rss = await herdServer.peakRssMiB();
      const failed = results.filter((r) => !r.ok || r.bytes !== one.bytes).length;
      const times = results.map((r) => r.seconds).filter((s) => !Number.isNaN(s)).sort((a, b) => a - b);
      const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))] ?? Number.NaN;
      lines.push(
        `    accept-encoding: ${coding}, ${(one.bytes / 1048576).toFixed(1)} MiB each`,
        `      one pull:      ${one.seconds.toFixed(2)} s, server CPU ${one.cpu.total.toFixed(2)} s (${one.cpu.split}), serve peak RSS ${one.rss.toFixed(0)} MiB`,
        `      ${HERD} at once:  p50 ${pct(0.5).toFixed(2)} s, p99 ${pct(0.99).toFixed(2)} s, server CPU ${cpu.total.toFixed(2)} s = ${(cpu.total / one.cpu.total).toFixed(2)}x one pull (target <= 1.2x) (${cpu.split}), failed or short ${failed}, serve peak RSS ${rss.toFixed(0)} MiB`,
      );
      say(lines.slice(-3).join('\n'));
    } finally {
      await herdServer.stop();
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await pool.end();
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}

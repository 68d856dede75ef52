// bench/check: GET /api/check of random addresses under wrk (16 connections, 10 s a round), every answer from
// PostgreSQL (the check is never cached), on 100,000 stored addresses: with an unmetered key, with a metered
// key (one rate-counter upsert more per request), and with 1,000 exclusions in force. Target: ≥ 1,000
// requests/s. Beside the rate it prints where the time goes: the server's CPU and its PostgreSQL backends' CPU
// per request (from /proc), and the statement's planning and execution time (EXPLAIN ANALYZE).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKey } from '../api-server/keys/store.ts';
import { CHECK_SQL } from '../api-server/query/check.ts';
import { listInstant } from '../api-server/query/lists.ts';
import { benchStore, median, requireCommands, startServeChild } from './harness.ts';

const ADDRESSES = Number(process.env.BENCH_ADDRESSES ?? 100_000);
const DURATION = process.env.BENCH_DURATION ?? '10s';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const EXCLUSIONS = 1000;

/** CPU seconds (user + system) a process has used so far (clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0; // a backend that has gone
  }
}

requireCommands('wrk');
const store = await benchStore(ADDRESSES, 24);
const server = await startServeChild(store.url, { BLOCKFEED_TIER_QUOTAS: 'member=none,basic=100,pro=10000,enterprise=unlimited,bench=1000000000' });
const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-bench-check-'));
try {
  const metered = (await createKey(store.pool, 'bench', 'bench metered')).key;
  // Random addresses among the stored ones (11.0.0.0 + n, bench/harness.ts), one per request.
  const script = path.join(dir, 'check.lua');
  await writeFile(
    script,
    `math.randomseed(os.time())\n` +
      `request = function()\n` +
      `  local n = math.random(0, ${ADDRESSES - 1})\n` +
      `  local ip = "11." .. math.floor(n / 65536) .. "." .. (math.floor(n / 256) % 256) .. "." .. (n % 256)\n` +
      `  return wrk.format("GET", "/api/check?ip=" .. ip)\n` +
      `end\n`,
  );
  const probe = await fetch(`${server.base}/api/check?ip=11.0.0.1`, { headers: { 'x-api-key': store.key } });
  const answer = (await probe.json()) as { listed: boolean };
  if (probe.status !== 200 || !answer.listed) throw new Error(`the check does not answer as expected: ${probe.status} ${JSON.stringify(answer)}`);

  const backends = async () =>
    (await store.pool.query<{ pid: number }>(`select pid from pg_stat_activity where application_name = 'blockfeed-serve'`)).rows.map((r) => r.pid);

  async function round(key: string): Promise<{ rps: number; serverUs: number; postgresUs: number }> {
    const pids = await backends();
    const serverPid = server.child.pid ?? 0;
    const before = { server: cpuSeconds(serverPid), pg: pids.reduce((s, p) => s + cpuSeconds(p), 0) };
    const res = spawnSync('wrk', ['-t2', '-c16', `-d${DURATION}`, '-s', script, '-H', `X-API-Key: ${key}`, server.base], { encoding: 'utf8' });
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(res.stdout)?.[1]);
    const requests = Number(/(\d+) requests in/.exec(res.stdout)?.[1]);
    if (res.status !== 0 || !rps || /Non-2xx/.test(res.stdout)) throw new Error(`wrk failed:\n${res.stdout}${res.stderr}`);
    // The pool may have opened connections during the round: count those too (from zero).
    const after = await backends();
    const pg = after.reduce((s, p) => s + cpuSeconds(p), 0) - before.pg;
    return { rps, serverUs: ((cpuSeconds(serverPid) - before.server) / requests) * 1e6, postgresUs: (pg / requests) * 1e6 };
  }

  async function explain(): Promise<{ planMs: number; execMs: number }> {
    const plans: number[] = [];
    const execs: number[] = [];
    for (let i = 0; i < 50; i++) {
      const { rows } = await store.pool.query<{ 'QUERY PLAN': string }>(`explain (analyze, format text) ${CHECK_SQL}`, [`11.0.${i}.7`, listInstant(new Date())]);
      const text = rows.map((r) => r['QUERY PLAN']).join('\n');
      plans.push(Number(/Planning Time: ([\d.]+) ms/.exec(text)?.[1]));
      execs.push(Number(/Execution Time: ([\d.]+) ms/.exec(text)?.[1]));
    }
    return { planMs: median(plans), execMs: median(execs) };
  }

  const runs: Record<string, { rps: number; serverUs: number; postgresUs: number }[]> = { unmetered: [], metered: [], excluded: [] };
  for (let i = 0; i < ROUNDS; i++) {
    runs.unmetered?.push(await round(store.key));
    runs.metered?.push(await round(metered));
  }
  const plain = await explain();
  // 1,000 exclusions in force: /28s spread over the stored addresses, and IPv6 networks.
  await store.pool.query(
    `insert into exclusions (network, reason, created_by)
     select set_masklen('11.0.0.0'::inet + (g * ${Math.floor(ADDRESSES / 900)}), 28)::cidr, 'bench', 'bench' from generate_series(0, 899) g`,
  );
  await store.pool.query(`insert into exclusions (network, reason, created_by) select ('2001:db8:' || to_hex(g) || '::/48')::cidr, 'bench', 'bench' from generate_series(1, ${EXCLUSIONS - 900}) g`);
  for (let i = 0; i < ROUNDS; i++) runs.excluded?.push(await round(store.key));
  const withExclusions = await explain();

  const line = (name: string, xs: { rps: number; serverUs: number; postgresUs: number }[]) => {
    const rps = median(xs.map((x) => x.rps));
    return (
      `  ${name.padEnd(36)} median ${rps.toFixed(0)} req/s (${xs.map((x) => x.rps.toFixed(0)).join(' ')}) ${rps >= 1000 ? 'PASS' : 'FAIL'}; ` +
      `CPU per request: server ${median(xs.map((x) => x.serverUs)).toFixed(0)} us, PostgreSQL ${median(xs.map((x) => x.postgresUs)).toFixed(0)} us\n`
    );
  };
  process.stdout.write(
    `bench/check: wrk -t2 -c16 -d${DURATION}, ${ROUNDS} rounds, random addresses among ${ADDRESSES} stored; target >= 1000 req/s\n` +
      line('unmetered key (enterprise)', runs.unmetered ?? []) +
      line('metered key (a daily quota)', runs.metered ?? []) +
      line(`unmetered, ${EXCLUSIONS} exclusions in force`, runs.excluded ?? []) +
      `  the statement (median of 50 EXPLAIN ANALYZE): planning ${plain.planMs.toFixed(2)} ms, execution ${plain.execMs.toFixed(2)} ms; ` +
      `with ${EXCLUSIONS} exclusions: planning ${withExclusions.planMs.toFixed(2)} ms, execution ${withExclusions.execMs.toFixed(2)} ms\n`,
  );
} finally {
  await server.stop();
  await store.close();
  await rm(dir, { recursive: true, force: true });
}

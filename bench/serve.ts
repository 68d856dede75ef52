// bench/serve: throughput of cached answers under wrk (16 connections, 10 s), each against a baseline in the
// same run: a cached 100,000-address txt list vs Debian's nginx serving the same bytes as a static file
// (target ≥ 0.7×), and cached stats JSON vs a bare fastify hello-world route (target ≥ 0.8×); and, to tell
// the route from the headers, the same hello-world sending the headers a cached stats answer carries.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/cli.ts';
import { benchStore, median, requireCommands, startServeChild } from './harness.ts';

const ADDRESSES = Number(process.env.BENCH_ADDRESSES ?? 100_000);
const DURATION = process.env.BENCH_DURATION ?? '10s';
// Three rounds, so each median is a middle value: one round disturbed by other load on a shared machine
// does not decide the figure.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 1/100 s). */
function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Requests per second, and the server's CPU time per request (steadier than req/s on a shared machine). */
function measure(pid: number | undefined, url: string, headers: Record<string, string> = {}): { rps: number; cpuUs: number } {
  const before = cpuSeconds(pid);
  const { rps, requests } = wrk(url, headers);
  return { rps, cpuUs: ((cpuSeconds(pid) - before) / requests) * 1e6 };
}

function wrk(url: string, headers: Record<string, string> = {}): { rps: number; requests: number } {
  const args = ['-t2', '-c16', `-d${DURATION}`, ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), url];
  const res = spawnSync('wrk', args, { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(res.stdout)?.[1]);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(res.stdout)?.[1];
  const requests = Number(/(\d+) requests in/.exec(res.stdout)?.[1]);
  if (res.status !== 0 || !rps || !requests || non2xx) throw new Error(`wrk ${url} failed:\n${res.stdout}${res.stderr}`);
  return { rps, requests };
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

requireCommands('nginx', 'wrk');
const store = await benchStore(ADDRESSES, 24);
const server = await startServeChild(store.url);
const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-bench-nginx-'));
await chmod(dir, 0o755);
const children: ChildProcess[] = [];
try {
  const auth = { 'X-API-Key': store.key };
  const listUrl = `${server.base}/api/export?hours=24&format=txt`;
  const statsUrl = `${server.base}/api/stats?hours=24`;
  // The first answer streams from the store and fills the cache; the second must come from it (a cache hit).
  const body = Buffer.from(await (await fetch(listUrl, { headers: auth })).arrayBuffer());
  const cached = await fetch(listUrl, { headers: auth });
  const hits = /^blockfeed_response_cache_lookups_total\{endpoint="export",result="hit"[^}]*\} (\d+)/m.exec(await (await fetch(`${server.base}/metrics`)).text());
  if (Number(hits?.[1] ?? 0) < 1 || Buffer.compare(Buffer.from(await cached.arrayBuffer()), body) !== 0) throw new Error('the list was not cached');
  await (await fetch(statsUrl, { headers: auth })).text();

  // nginx with Debian's defaults that matter (worker_processes auto, sendfile on), the same bytes as a file.
  await writeFile(path.join(dir, 'list.txt'), body, { mode: 0o644 });
  const nginxPort = await freePort();
  await writeFile(
    path.join(dir, 'nginx.conf'),
    `daemon off;\nworker_processes auto;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\n` +
      `events { worker_connections 1024; }\n` +
      `http { sendfile on; tcp_nopush on; access_log off; default_type text/plain;\n` +
      `  server { listen 127.0.0.1:${nginxPort}; root ${dir}; } }\n`,
  );
  const nginx = spawn('nginx', ['-c', path.join(dir, 'nginx.conf'), '-p', dir], { stdio: 'inherit' });
  children.push(nginx);
  const nginxUrl = `http://127.0.0.1:${nginxPort}/list.txt`;
  await waitFor(nginxUrl);

  const startHello = async (headers: boolean) => {
    const port = await freePort();
    const env = { ...process.env, PORT: String(port), HEADERS: headers ? '1' : '0' };
    const child = spawn(process.execPath, [fileURLToPath(new URL('./hello.ts', import.meta.url))], { env, stdio: 'ignore' });
    children.push(child);
    await waitFor(`http://127.0.0.1:${port}/`);
    return { pid: child.pid, url: `http://127.0.0.1:${port}/` };
  };
  const hello = await startHello(false);
  const helloWithHeaders = await startHello(true);

  const runs = { nginx: [] as number[], list: [] as number[], hello: [] as number[], helloWithHeaders: [] as number[], stats: [] as number[] };
  const cpu = { hello: [] as number[], stats: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    runs.nginx.push(wrk(nginxUrl).rps);
    runs.list.push(wrk(listUrl, auth).rps);
    const h = measure(hello.pid, hello.url);
    runs.hello.push(h.rps);
    cpu.hello.push(h.cpuUs);
    runs.helloWithHeaders.push(wrk(helloWithHeaders.url).rps);
    const s = measure(server.child.pid, statsUrl, auth);
    runs.stats.push(s.rps);
    cpu.stats.push(s.cpuUs);
  }
  const listRatio = median(runs.list) / median(runs.nginx);
  const statsRatio = median(runs.stats) / median(runs.hello);
  const f = (xs: number[]) => `median ${median(xs).toFixed(0)} req/s (${xs.map((x) => x.toFixed(0)).join(' ')})`;
  process.stdout.write(
    `bench/serve: wrk -t2 -c16 -d${DURATION}, ${ROUNDS} rounds, list of ${ADDRESSES} addresses (${body.length} bytes)\n` +
      `  nginx static file            ${f(runs.nginx)}\n` +
      `  cached /api/export txt       ${f(runs.list)}\n` +
      `  ratio ${listRatio.toFixed(2)}x nginx (target >= 0.70x) ${listRatio >= 0.7 ? 'PASS' : 'FAIL'}\n` +
      `  bare fastify hello-world     ${f(runs.hello)}\n` +
      `  cached /api/stats json       ${f(runs.stats)}\n` +
      `  ratio ${statsRatio.toFixed(2)}x hello-world (target >= 0.80x) ${statsRatio >= 0.8 ? 'PASS' : 'FAIL'}\n` +
      `  hello-world, the answer's headers ${f(runs.helloWithHeaders)}: ` +
      `cached stats ${(median(runs.stats) / median(runs.helloWithHeaders)).toFixed(2)}x that (the rest of the gap is those headers)\n` +
      `  server CPU per request: hello-world ${median(cpu.hello).toFixed(1)} us, cached stats ${median(cpu.stats).toFixed(1)} us ` +
      `(${(median(cpu.hello) / median(cpu.stats)).toFixed(2)}x; the steadier figure when others share the cores)\n`,
  );
} finally {
  for (const c of children) await stopChild(c);
  await server.stop();
  await store.close();
  await rm(dir, { recursive: true, force: true });
}

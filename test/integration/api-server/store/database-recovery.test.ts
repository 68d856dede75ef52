// The store comes back. `blockfeed serve` on the embedded PostgreSQL: kill -9 of the postmaster under load →
// every answer meanwhile is a 503 with Retry-After (never a hang, never another error), answers are 200
// again within 10 s, and no event whose push was acknowledged is lost. The same with DATABASE_URL, for a
// server the test runs (and kills and starts again) itself. The recovery time is printed. A connection the
// server never answers is given up as the store being unavailable, not waited on.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { startEmbedded } from '../../../../api-server/store/embedded.ts';
import { ensureDatabaseExists, openDatabase, withDatabase } from '../../../../api-server/store/database.ts';
import { isStoreUnavailable } from '../../../../api-server/store/unavailable.ts';
import { runCli, startServe, tempDataDir, type ServeProcess } from '../../../support/cli.ts';
import { pushOneEvent, startLoad } from '../../../support/load.ts';

const TOKEN = 'database-recovery-ingest-token';
/** The promised bound: answers are 200 again within this long after the kill. */
const RECOVERY_BOUND_MS = 10_000;

function postmasterPid(clusterDir: string): number {
  return Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/** After a failed run: a server serve did not stop (it died first) is stopped here, not left behind. */
function stopLeftover(clusterDir: string): void {
  try {
    process.kill(postmasterPid(clusterDir), 'SIGINT');
  } catch {
    /* stopped already */
  }
}

/**
 * Four workers: pushes of one new event each (remembered when acknowledged), uncached lists, statistics and
 * readiness. A request that fails outright or takes longer than 5 s is recorded as status 0, a body that fails
 * or hangs as an error.
 */
function load(base: string, key: string) {
  const keyed = { headers: { 'x-api-key': key } };
  return startLoad(base, [
    (n) => pushOneEvent(n, TOKEN, 'hp-load'),
    (n) => ({ what: 'list', path: `/api/export?hours=${1 + (n % 24)}&format=json`, init: keyed }),
    (n) => ({ what: 'stats', path: `/api/stats?hours=${1 + (n % 24)}`, init: keyed }),
    () => ({ what: 'ready', path: '/readyz' }),
  ]);
}

/** Waits (at most RECOVERY_BOUND_MS after `since`) until readiness and a list both answer 200; returns when. */
async function recovered(base: string, key: string, since: number): Promise<number> {
  for (;;) {
    const ok = await Promise.all([
      fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200, () => false),
      fetch(`${base}/api/dedup?hours=2`, { headers: { 'x-api-key': key }, signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200, () => false),
    ]);
    if (ok.every(Boolean)) return Date.now();
    expect(Date.now() - since, 'the store did not come back within the bound').toBeLessThan(RECOVERY_BOUND_MS);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Kill -9 under load, then the checks every case shares; returns the recovery time in ms. */
async function crashUnderLoad(serve: ServeProcess, key: string, kill: () => void, startAgain: () => Promise<void>, storeUrl: () => string): Promise<number> {
  const base = `http://127.0.0.1:${serve.port}`;
  // Today's partitions first: ingest creating them while statistics read both tables can deadlock, a race
  // of its own (it makes the first pushes of a day fail now and then), not the crash under test.
  const warmUp = await fetch(`${base}/internal/v1/events?format=native`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-ndjson' },
    body: JSON.stringify({ ts: new Date().toISOString(), src_ip: '11.255.255.255', dst_port: 22, source: 'honeypot', sensor: 'hp-warm-up' }),
  });
  expect(warmUp.status).toBe(200);
  const traffic = load(base, key);
  try {
    while (traffic.acknowledged.length < 20) await new Promise((r) => setTimeout(r, 20));
    const killedAt = Date.now();
    kill();
    // Down for a while: every answer a 503 with Retry-After.
    while (!traffic.answers.some((a) => a.at > killedAt && a.status === 503 && a.what !== 'ready')) await new Promise((r) => setTimeout(r, 20));
    await startAgain();
    const back = await recovered(base, key, killedAt);
    const pushedBefore = traffic.acknowledged.length;
    while (traffic.acknowledged.length < pushedBefore + 10) await new Promise((r) => setTimeout(r, 20));
    await traffic.stop();

    const unexpected = traffic.answers.filter((a) => (a.status !== 200 && a.status !== 503) || (a.error && !(a.what === 'list' && a.cutOff)));
    const errors = serve.output().split('\n').filter((l) => /"level":"(error|fatal)"|request failed/.test(l));
    expect(unexpected, `only 200 and 503, no failed or hung request; server errors:\n${errors.join('\n')}`).toEqual([]);
    expect(traffic.answers.some((a) => a.status === 503)).toBe(true);
    for (const a of traffic.answers.filter((x) => x.status === 503)) {
      expect(a.retryAfter, `${a.what} 503`).toBe('5');
      if (a.what !== 'ready') expect(a.contentType, `${a.what} 503`).toMatch(/^application\/problem\+json/);
    }
    // Every acknowledged event is in the store.
    const client = new pg.Client({ connectionString: storeUrl() });
    await client.connect();
    try {
      const { rows } = await client.query<{ ip: string }>(`select host(src_ip) as ip from events where sensor = 'hp-load'`);
      const stored = new Set(rows.map((r) => r.ip));
      expect(traffic.acknowledged.map((a) => a.event).filter((ip) => !stored.has(ip)), 'acknowledged events missing after the crash').toEqual([]);
    } finally {
      await client.end();
    }
    return back - killedAt;
  } finally {
    await traffic.stop();
  }
}

async function enterpriseKey(env: Record<string, string>): Promise<string> {
  const created = await runCli(['keys', 'create', '--tier', 'enterprise', '--name', 'recovery'], env);
  expect(created.code, created.stderr).toBe(0);
  return created.stdout.trim();
}

describe('the store comes back', () => {
  it('embedded: serve starts a killed PostgreSQL again, requests recover, nothing committed is lost', async () => {
    const dataDir = await tempDataDir();
    const env = { BLOCKFEED_DATA_DIR: dataDir, BLOCKFEED_INGEST_TOKEN: TOKEN, BLOCKFEED_CACHE_MAX_BYTES: '0' };
    const serve = await startServe(env);
    try {
      const key = await enterpriseKey({ BLOCKFEED_DATA_DIR: dataDir });
      const clusterDir = path.join(dataDir, 'pg');
      const killed = postmasterPid(clusterDir);
      const info = JSON.parse(readFileSync(path.join(dataDir, 'embedded.json'), 'utf8')) as { port: number; user: string; password: string };
      const url = `postgresql://${info.user}:${encodeURIComponent(info.password)}@127.0.0.1:${info.port}/blockfeed`;
      const ms = await crashUnderLoad(serve, key, () => process.kill(killed, 'SIGKILL'), async () => {}, () => url);
      console.log(`embedded PostgreSQL killed under load: answers 200 again after ${ms} ms`);
      expect(postmasterPid(clusterDir)).not.toBe(killed);
      expect(serve.output()).toMatch(/embedded PostgreSQL started again \(crash recovery done\)/);
    } finally {
      serve.child.kill('SIGTERM');
      const code = await serve.exited;
      stopLeftover(path.join(dataDir, 'pg'));
      expect(code).toBe(0);
    }
  });

  it('DATABASE_URL: requests recover when the server is back, nothing committed is lost', async () => {
    const pgDir = await tempDataDir();
    const log = createLogger({ level: 'warn' });
    let server = await startEmbedded({ dataDir: pgDir, log });
    await ensureDatabaseExists(server.url, 'blockfeed');
    const url = withDatabase(server.url, 'blockfeed');
    const dataDir = await tempDataDir();
    const serve = await startServe({ DATABASE_URL: url, BLOCKFEED_DATA_DIR: dataDir, BLOCKFEED_INGEST_TOKEN: TOKEN, BLOCKFEED_CACHE_MAX_BYTES: '0' });
    try {
      const key = await enterpriseKey({ DATABASE_URL: url });
      const killed = postmasterPid(path.join(pgDir, 'pg'));
      const ms = await crashUnderLoad(
        serve,
        key,
        () => process.kill(killed, 'SIGKILL'),
        async () => {
          // Nobody supervises an external server: its operator (here, the test) starts it again.
          await new Promise((r) => setTimeout(r, 1000));
          server = await startEmbedded({ dataDir: pgDir, log });
          expect(server.port).toBe(Number(new URL(url).port));
        },
        () => url,
      );
      console.log(`DATABASE_URL server killed under load and started again after 1 s: answers 200 again after ${ms} ms`);
    } finally {
      serve.child.kill('SIGTERM');
      const code = await serve.exited;
      await server.stop();
      stopLeftover(path.join(pgDir, 'pg'));
      expect(code).toBe(0);
    }
  });

  it('gives up a connection the server never answers (a failover target gone): the store unavailable, not a hang', async () => {
    // A listener that takes connections and never says a word: to the pool, a connection whose packets go nowhere.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const db = await openDatabase({ config: { databaseUrl: `postgresql://blockfeed:x@127.0.0.1:${port}/blockfeed`, dataDir: await tempDataDir() }, log: createLogger({ level: 'silent' }) });
    try {
      const t0 = Date.now();
      const err: unknown = await db.pool.query('select 1').then(() => undefined, (e: unknown) => e);
      console.log(`a connection the server never answered failed after ${Date.now() - t0} ms: ${(err as Error).message}`);
      expect(sockets.length).toBeGreaterThan(0);
      expect(isStoreUnavailable(err)).toBe(true);
    } finally {
      await db.close();
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  it('a postmaster.pid left behind that names another live process does not stop a start', async () => {
    const dataDir = await tempDataDir();
    const log = createLogger({ level: 'silent' });
    const first = await startEmbedded({ dataDir, log });
    const clusterDir = path.join(dataDir, 'pg');
    const lockFile = readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8');
    await first.stop();
    // As after a crash and a reboot: the lock file stays, and its process number now belongs to another program.
    const other = spawn('sleep', ['60']);
    try {
      writeFileSync(path.join(clusterDir, 'postmaster.pid'), lockFile.replace(/^\d+/, String(other.pid)));
      const again = await startEmbedded({ dataDir, log });
      expect(again.owned).toBe(true);
      expect(postmasterPid(clusterDir)).not.toBe(other.pid);
      await again.stop();
    } finally {
      other.kill();
    }
  });
});

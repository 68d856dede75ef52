// `blockfeed serve` before and after its store. Started while its PostgreSQL is not up yet (a Helm install
// creating both at once), it stays up: /healthz answers, /readyz says what it waits for, every other request
// is a 503 with Retry-After, and the log says why at each attempt; once the database answers, it migrates
// and serves. Once ready it stays ready: a store that goes away afterwards is answered with 503s, not by
// leaving the load balancer. A SIGTERM while it still waits ends it cleanly.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../common/logging.ts';
import { startEmbedded, type EmbeddedServer } from '../../../api-server/store/embedded.ts';
import { ensureDatabaseExists, withDatabase } from '../../../api-server/store/database.ts';
import { BLOCKFEED, cliEnv, freePort, tempDataDir } from '../../support/cli.ts';

const log = createLogger({ level: 'silent' });

interface Serving {
  child: ChildProcessWithoutNullStreams;
  base: string;
  output: () => string;
  exited: Promise<number | null>;
}

/** A database made on a server that is then stopped: its URL, and a way to start the server again. */
async function databaseNotUpYet(): Promise<{ url: string; start: () => Promise<EmbeddedServer> }> {
  const dataDir = await tempDataDir();
  const server = await startEmbedded({ dataDir, log });
  await ensureDatabaseExists(server.url, 'blockfeed');
  const url = withDatabase(server.url, 'blockfeed');
  await server.stop();
  return { url, start: () => startEmbedded({ dataDir, log }) };
}

async function serve(databaseUrl: string): Promise<Serving> {
  const port = await freePort();
  const child = spawn(BLOCKFEED, ['serve'], { env: cliEnv({ DATABASE_URL: databaseUrl, BLOCKFEED_DATA_DIR: await tempDataDir(), HOST: '127.0.0.1', PORT: String(port) }) });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, base: `http://127.0.0.1:${port}`, output: () => out, exited };
}

/** Waits until `url` answers `status` (or the process exits: then fails with its output). */
async function until(s: Serving, path: string, status: number): Promise<Response> {
  for (;;) {
    if (s.child.exitCode !== null) throw new Error(`serve exited (${s.child.exitCode}):\n${s.output()}`);
    const res = await fetch(`${s.base}${path}`).catch(() => undefined);
    if (res?.status === status) return res;
    await res?.text();
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('serve and its store', () => {
  it('waits for a database that is not up yet, answering health and 503s, then migrates and serves; stays ready after', async () => {
    const db = await databaseNotUpYet();
    const s = await serve(db.url);
    let server: EmbeddedServer | undefined;
    try {
      expect(await (await until(s, '/healthz', 200)).json()).toEqual({ status: 'ok' });
      while (!/waiting for the database/.test(s.output())) await new Promise((r) => setTimeout(r, 50));
      expect(s.output()).toMatch(/"reason":"connection refused".*"msg":"waiting for the database"/);
      const readyz = await fetch(`${s.base}/readyz`);
      expect([readyz.status, readyz.headers.get('retry-after')]).toEqual([503, '5']);
      expect(await readyz.json()).toEqual({ status: 'starting', reason: 'waiting for the database: connection refused' });
      const stats = await fetch(`${s.base}/api/stats`);
      expect([stats.status, stats.headers.get('retry-after'), stats.headers.get('content-type')]).toEqual([503, '5', 'application/problem+json; charset=utf-8']);
      expect((await fetch(`${s.base}/metrics`)).status).toBe(200);

      server = await db.start();
      await until(s, '/readyz', 200);
      expect((await fetch(`${s.base}/api/stats`)).status).toBe(200);
      expect(s.output()).toMatch(/"msg":"migration applied"/);

      // Ready for good: the store gone, requests that need it are 503s, and the server stays in rotation.
      await server.stop();
      const gone = await fetch(`${s.base}/api/stats?hours=2`);
      expect([gone.status, gone.headers.get('retry-after')]).toEqual([503, '5']);
      expect((await fetch(`${s.base}/readyz`)).status).toBe(200);

      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    } finally {
      s.child.kill('SIGKILL');
      await server?.stop();
    }
  });

  it('ends cleanly on SIGTERM while it still waits for its database', async () => {
    const db = await databaseNotUpYet();
    const s = await serve(db.url);
    try {
      await until(s, '/healthz', 200);
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      expect(s.output()).toMatch(/"msg":"stopped"/);
    } finally {
      s.child.kill('SIGKILL');
    }
  });
});

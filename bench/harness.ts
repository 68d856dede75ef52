// What the benchmarks share: a throwaway embedded PostgreSQL with generated attack data, the real
// `blockfeed serve` as a child process, timing and peak-RSS helpers.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createLogger } from '../common/logging.ts';
import { startEmbedded, type EmbeddedServer } from '../api-server/store/embedded.ts';
import { ensureDatabaseExists, withDatabase } from '../api-server/store/database.ts';
import { migrate } from '../api-server/store/migrate.ts';
import { createKey } from '../api-server/keys/store.ts';
import { generateAddresses } from '../test/support/attack-fixtures.ts';
import { BLOCKFEED, freePort } from '../test/support/cli.ts';

export interface BenchStore {
  url: string;
  pool: pg.Pool;
  key: string;
  close(): Promise<void>;
}

/**
 * An embedded PostgreSQL holding `addresses` generated addresses seen within `hours`, plus an enterprise key.
 * Without flushes to disk unless `durable` (a bench that times commits wants PostgreSQL's defaults).
 */
export async function benchStore(addresses: number, hours: number, { durable = false } = {}): Promise<BenchStore> {
  const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-bench-'));
  await chmod(dir, 0o755);
  const log = createLogger({ level: 'warn' });
  const settings: Record<string, string> = durable ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' };
  const server: EmbeddedServer = await startEmbedded({ dataDir: dir, log, settings });
  await ensureDatabaseExists(server.url, 'bench');
  const url = withDatabase(server.url, 'bench');
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  await migrate(pool, log);
  const started = Date.now();
  await generateAddresses(pool, addresses, hours);
  process.stderr.write(`generated ${addresses} addresses in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  const { key } = await createKey(pool, 'enterprise', 'bench');
  return {
    url,
    pool,
    key,
    close: async () => {
      // An idle connection that has not quite closed when the server stops reports it: expected here.
      pool.on('error', () => undefined);
      await pool.end();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface ServeChild {
  base: string;
  child: ChildProcess;
  /** Peak resident set size of the server process so far, in MiB (VmHWM). */
  peakRssMiB(): Promise<number>;
  stop(): Promise<void>;
}

export async function startServeChild(databaseUrl: string, env: Record<string, string> = {}): Promise<ServeChild> {
  const port = await freePort();
  const child = spawn(BLOCKFEED, ['serve'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/readyz`)).ok) break;
    } catch {
      /* not yet */
    }
    if (i > 600) throw new Error('serve not ready after 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    child,
    peakRssMiB: async () => {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
      return kb / 1024;
    },
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Wall time of a command, in seconds; throws when it fails. */
export function timeCommand(cmd: string, args: string[]): number {
  const started = process.hrtime.bigint();
  const res = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 20 });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (res.status !== 0) throw new Error(`${cmd} failed (${res.status}): ${res.stderr.toString()}`);
  return seconds;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export function requireCommands(...names: string[]): void {
  const missing = names.filter((n) => spawnSync('sh', ['-c', `command -v ${n}`]).status !== 0);
  if (missing.length) {
    process.stderr.write(`bench: missing ${missing.join(', ')}; install with: apt-get install -y ${missing.join(' ')}\n`);
    process.exit(2);
  }
}

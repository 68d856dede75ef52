// Runs the real `bin/blockfeed` as a child process, as a user would.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, chmod } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const BLOCKFEED = fileURLToPath(new URL('../../bin/blockfeed', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', ...extra };
  for (const name of ['DATABASE_URL', 'BLOCKFEED_CONFIG'] as const) if (!(name in extra)) delete env[name];
  return env;
}

export function runCli(args: string[], env: Record<string, string | undefined> = {}, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(BLOCKFEED, args, { env: cliEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

export interface ServeProcess {
  child: ChildProcessWithoutNullStreams;
  port: number;
  output: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** A data dir the `postgres` user can reach (tests may run as root). */
/** The pid of the embedded PostgreSQL running on a data directory, from PostgreSQL's own lock file. */
export function postmasterPid(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
}

export async function tempDataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-cli-'));
  await chmod(dir, 0o755);
  return path.join(dir, 'data');
}

export async function startServe(env: Record<string, string>, timeoutMs = 60_000): Promise<ServeProcess> {
  const port = Number(env.PORT ?? (await freePort()));
  const child = spawn(BLOCKFEED, ['serve'], { env: cliEnv({ HOST: '127.0.0.1', ...env, PORT: String(port) }) });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`serve exited early (${child.exitCode}):\n${out}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (res.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`serve not ready after ${timeoutMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, port, output: () => out, exited };
}

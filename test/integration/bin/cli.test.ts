// The CLI as users run it: real processes, real embedded PostgreSQL on a temporary data dir.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BLOCKFEED, cliEnv, freePort, postmasterPid, runCli, startServe, tempDataDir } from '../../support/cli.ts';
import { processAlive } from '../../support/processes.ts';

/** Error output of a failed command: exactly one line, starting with "blockfeed: ". */
function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^blockfeed: /);
  return lines[0] ?? '';
}

describe('blockfeed CLI', () => {
  it('prints --version and --help', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect((await runCli(['--version'])).stdout.trim()).toBe(pkg.version);
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/serve/);
    expect(help.stdout).toMatch(/migrate/);
  });

  it('serve answers /healthz, /readyz and /metrics; a second CLI process reuses its database; SIGTERM leaves no postgres behind', async () => {
    const dataDir = await tempDataDir();
    const serve = await startServe({ BLOCKFEED_DATA_DIR: dataDir });
    const base = `http://127.0.0.1:${serve.port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^process_cpu_user_seconds_total/m);

    const pgPid = postmasterPid(dataDir);
    const migrateRun = await runCli(['migrate'], { BLOCKFEED_DATA_DIR: dataDir });
    expect(migrateRun.code).toBe(0);
    expect(migrateRun.stdout).toMatch(/schema up to date/);
    expect(migrateRun.stderr).toMatch(/reusing the embedded PostgreSQL/);
    // Still the same server, and still running after the second process left.
    expect(postmasterPid(dataDir)).toBe(pgPid);
    expect(processAlive(pgPid)).toBe(true);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    expect(processAlive(pgPid)).toBe(false);
  });

  it('an unknown command is an error whatever flags follow it', async () => {
    for (const args of [['forward', '--help'], ['keys', 'bogus', '--help'], ['forward', '--format', 'cowrie', 'x.json']]) {
      const res = await runCli(args);
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stdout).toBe('');
      expect(res.stderr).toMatch(/^error: unknown command '(forward|bogus)'/);
    }
    const typo = await runCli(['kees', 'list']);
    expect(typo.stderr).toMatch(/Did you mean keys\?/);
    // Known commands keep their help.
    for (const args of [['keys', 'list', '--help'], ['help', 'keys'], ['--help']]) expect((await runCli(args)).code, args.join(' ')).toBe(0);
  });

  it('bin/blockfeed on a fresh clone installs its npm dependencies first', async () => {
    // A copy of the package without node_modules, as `git clone` leaves it; its project-local Node is shared.
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const clone = await mkdtemp(path.join(tmpdir(), 'blockfeed-clone-'));
    try {
      const skip = new Set(['node_modules', '.cache', '.blockfeed', '.git', 'test', 'bench', 'docs', 'charts', 'crds', 'examples']);
      for (const entry of readdirSync(root)) if (!skip.has(entry)) cpSync(path.join(root, entry), path.join(clone, entry), { recursive: true });
      if (existsSync(path.join(root, '.cache'))) symlinkSync(path.join(root, '.cache'), path.join(clone, '.cache'));
      const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(path.join(clone, 'bin', 'blockfeed'), ['--version'], { env: cliEnv() });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.once('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/installing npm dependencies first/);
      expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
      expect(existsSync(path.join(clone, 'node_modules', 'commander'))).toBe(true);
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  }, 300_000);

  it('a server started by a short command stays up while serve uses it; serve, last out, stops it', async () => {
    const dataDir = await tempDataDir();
    // `ingest -` starts the embedded server and holds it while its stdin is open.
    const ingest = spawn(BLOCKFEED, ['ingest', '--format', 'native', '--sensor', 'hp-1', '-'], { env: cliEnv({ BLOCKFEED_DATA_DIR: dataDir }) });
    let ingestErr = '';
    ingest.stderr.on('data', (d: Buffer) => (ingestErr += d.toString()));
    const ingestExit = new Promise<number | null>((resolve) => ingest.once('exit', resolve));
    while (!/embedded PostgreSQL started/.test(ingestErr)) {
      if (ingest.exitCode !== null) throw new Error(`ingest exited early: ${ingestErr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const pgPid = postmasterPid(dataDir);
    const serve = await startServe({ BLOCKFEED_DATA_DIR: dataDir }).catch((err: unknown) => {
      ingest.kill('SIGKILL');
      throw err;
    });
    try {
      expect(serve.output()).toMatch(/reusing the embedded PostgreSQL/);
      ingest.stdin.end('{"ts":"2026-11-21T07:00:00Z","src_ip":"117.136.0.1","dst_port":3389}\n');
      expect(await ingestExit, ingestErr).toBe(0);
      expect(ingestErr).toMatch(/left running: other processes use it/);
      expect(processAlive(pgPid)).toBe(true);
      expect((await fetch(`http://127.0.0.1:${serve.port}/readyz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${serve.port}/api/stats`)).status).toBe(200);

      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
      expect(processAlive(pgPid)).toBe(false);
      expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    } finally {
      ingest.kill('SIGKILL');
      serve.child.kill('SIGKILL');
      if (processAlive(pgPid)) process.kill(pgPid, 'SIGKILL');
    }
  });

  it('migrate on a fresh data dir starts its own database and stops it again', async () => {
    const dataDir = await tempDataDir();
    const first = await runCli(['migrate'], { BLOCKFEED_DATA_DIR: dataDir });
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^applied 0001_/);
    // The server it started is gone: PostgreSQL removes its lock file on a clean shutdown.
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    const again = await runCli(['migrate'], { BLOCKFEED_DATA_DIR: dataDir });
    expect(again.stdout).toMatch(/schema up to date/);
  });

  it('an unwritable data dir is one clear error line and a non-zero exit', async () => {
    const parent = await tempDataDir();
    writeFileSync(`${parent}-file`, 'not a directory');
    const res = await runCli(['migrate'], { BLOCKFEED_DATA_DIR: `${parent}-file/data` });
    expect(res.code).not.toBe(0);
    expect(oneLine(res.stderr)).toMatch(/data dir .* is not writable/);
  });

  it('a port in use is one clear error line, a non-zero exit and no orphan postgres', async () => {
    const port = await freePort();
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', r));
    try {
      const dataDir = await tempDataDir();
      const res = await runCli(['serve'], { BLOCKFEED_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' });
      expect(res.code).not.toBe(0);
      expect(oneLine(res.stderr)).toBe(`blockfeed: port ${port} is already in use on 127.0.0.1; set PORT to a free port`);
      const pidFile = path.join(dataDir, 'pg', 'postmaster.pid');
      let pid = 0;
      try {
        pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      } catch {
        /* removed on clean shutdown: what we want */
      }
      if (pid) expect(processAlive(pid)).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it('a bad configuration value is one clear error line and a non-zero exit', async () => {
    const res = await runCli(['serve'], { PORT: 'eighty' });
    expect(res.code).not.toBe(0);
    expect(oneLine(res.stderr)).toBe('blockfeed: invalid configuration: PORT="eighty": must be an integer from 0 to 65535');
    const flag = await runCli(['serve', '--port', 'x']);
    expect(flag.code).not.toBe(0);
    expect(flag.stderr).toMatch(/--port must be an integer from 0 to 65535/);
  });
});

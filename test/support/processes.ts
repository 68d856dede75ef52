// Long-running programs started by a test as real processes (the api-server, the controller, Prometheus).
// Each runs under `setpriv --pdeathsig KILL`, as the control plane's do: the kernel kills it when the test
// worker that started it dies, even by SIGKILL, so a crashed run leaves no listener behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';

export interface ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** The last 50 kB of its stdout and stderr, for error messages. */
  output(): string;
  running(): boolean;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves once it has exited. */
  stop(timeoutMs?: number): Promise<void>;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Also append everything it writes to this file (a log to read while it runs). */
  logFile?: string;
}

export function startManaged(name: string, command: string, args: string[], { env = process.env, cwd, logFile }: StartOptions = {}): ManagedProcess {
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', command, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const file = logFile ? createWriteStream(logFile, { flags: 'a' }) : undefined;
  child.once('exit', () => file?.end());
  const keep = (d: Buffer) => {
    file?.write(d);
    out = (out + d.toString()).slice(-50_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    name,
    child,
    output: () => out,
    running,
    stop: async (timeoutMs = 15_000) => {
      if (!running()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Polls `ready` until it resolves true; fails early with the process's output when it exits, or after
 * `timeoutMs`.
 */
export async function waitUntilReady(proc: ManagedProcess, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  await waitWhileRunning(`${proc.name} ready`, [proc], ready, timeoutMs);
}

/** Polls `check` until it resolves true; fails early when one of `procs` exits (with its output), or after `timeoutMs`. */
export async function waitWhileRunning(what: string, procs: readonly ManagedProcess[], check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    const dead = procs.find((p) => !p.running());
    if (dead) throw new Error(`${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode}) while waiting for ${what}:\n${dead.output().slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}:\n${procs.map((p) => `--- ${p.name}\n${p.output().slice(-2000)}`).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** true when GET `url` answers 200. */
export async function answers200(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  await res.body?.cancel();
  return res.status === 200;
}

/** Whether process `pid` exists (signal 0 delivers nothing; EPERM means it exists under another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

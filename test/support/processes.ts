// Long-running programs started by a test as real processes (the api-server, the controller, Prometheus).
// Each runs under `setpriv --pdeathsig KILL`, as the control plane's do: the kernel kills it when the test
// worker that started it dies, even by SIGKILL, so a crashed run leaves no listener behind.
import { spawn, type ChildProcess } from 'node:child_process';

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
}

export function startManaged(name: string, command: string, args: string[], { env = process.env, cwd }: StartOptions = {}): ManagedProcess {
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', command, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-50_000));
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
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await ready().catch(() => false)) return;
    if (!proc.running()) throw new Error(`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before it was ready:\n${proc.output().slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`${proc.name} not ready after ${timeoutMs} ms:\n${proc.output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** true when GET `url` answers 200. */
export async function answers200(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  await res.body?.cancel();
  return res.status === 200;
}

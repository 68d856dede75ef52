// Linux namespaces for the cluster tier's node and its clients, held by a process rather than by a name under
// /run/netns. The holder runs under `setpriv --pdeathsig KILL`, so it dies with the test runner however that
// ends, and the kernel then tears down what only the holder kept alive: every process of a PID namespace
// (its init dies with the holder), the mounts of a mount namespace, the interfaces, routes and netfilter
// state of a network namespace.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Namespaces {
  /** A process inside, for nsenter --target (a pid of the host's PID namespace). */
  readonly pid: number;
  /**
   * The command that runs a program inside these namespaces and dies with its parent; start it under
   * `setpriv --pdeathsig KILL` to make it die with this process.
   */
  command(bin: string, args: readonly string[]): [string, string[]];
  /** Runs a command inside; resolves with its stdout, rejects with its stderr. */
  run(cmd: string, args: readonly string[], options?: RunOptions): Promise<string>;
  /** Kills the holder: every process of its PID namespace goes with it. */
  stop(): Promise<void>;
}

export interface RunOptions {
  input?: string;
  timeoutMs?: number;
}

export interface HoldOptions {
  /** A PID and a mount namespace too (a node: containers, mounts and daemons that must not outlive it). */
  node?: boolean;
}

const PDEATHSIG = ['setpriv', '--pdeathsig', 'KILL', '--'];

function ownNetns(pid: number | 'self'): string {
  return readlinkSync(`/proc/${pid}/ns/net`);
}

/** The first child of `pid` (unshare --fork's child), once it exists. */
function childOf(pid: number): number | undefined {
  try {
    const first = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)[0];
    return first ? Number(first) : undefined;
  } catch {
    return undefined;
  }
}

/** A program's failure: its stderr (or why it could not run) and the last lines of its stdout; `stdout` whole. */
export class ProgramFailed extends Error {
  readonly stdout: string;

  constructor(message: string, stdout: string) {
    super(message);
    this.stdout = stdout;
  }
}

/** Runs a program to its end; resolves with its stdout, rejects with a ProgramFailed. */
export function execFileText(cmd: string, args: readonly string[], { input, timeoutMs = 60_000 }: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const lastLines = stdout.trim().split('\n').slice(-8).join('\n');
      if (err) reject(new ProgramFailed(`${cmd} ${args.join(' ')}: ${stderr.trim() || err.message}${lastLines ? `\nlast lines of stdout:\n${lastLines}` : ''}`, stdout));
      else resolve(stdout);
    });
    child.stdin?.end(input);
  });
}

/**
 * Starts a holder in new namespaces: a network namespace, and with `node` a PID and a mount namespace whose
 * init is tini (it reaps the container shims that daemonise and land on it) with its own /proc.
 */
export async function holdNamespaces({ node = false }: HoldOptions = {}): Promise<Namespaces> {
  const args = node
    ? ['unshare', '--net', '--mount', '--pid', '--fork', '--kill-child', '--mount-proc', '--', 'tini', '-s', '--', 'sleep', 'infinity']
    : ['unshare', '--net', '--', 'sleep', 'infinity'];
  const [cmd, ...rest] = [...PDEATHSIG, ...args];
  const holder: ChildProcess = spawn(cmd!, rest, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  holder.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => holder.once('exit', () => resolve()));
  const host = ownNetns('self');

  // Inside once the target's network namespace differs from ours (unshare has done its work).
  let pid: number | undefined;
  for (let i = 0; pid === undefined; i++) {
    if (holder.exitCode !== null || holder.signalCode !== null) throw new Error(`${args.join(' ')} exited: ${stderr.trim()}`);
    if (i > 200) throw new Error(`${args.join(' ')}: no namespace after 10 s`);
    const candidate = node ? childOf(holder.pid!) : holder.pid!;
    try {
      if (candidate && ownNetns(candidate) !== host) pid = candidate;
    } catch {
      /* not there yet */
    }
    if (pid === undefined) await sleep(50);
  }
  const target = pid;
  return {
    ...enterNamespaces(target, { node }),
    stop: async () => {
      if (holder.exitCode === null && holder.signalCode === null) holder.kill('SIGKILL');
      await exited;
      // The namespace's init goes with unshare (--kill-child); wait until the kernel has reaped it.
      for (let i = 0; i < 200; i++) {
        try {
          readlinkSync(`/proc/${target}/ns/net`);
        } catch {
          return;
        }
        await sleep(50);
      }
    },
  };
}

/** The namespaces of process `pid` (held by someone else: stop() does nothing). */
export function enterNamespaces(pid: number, { node = false }: HoldOptions = {}): Namespaces {
  const enter = ['nsenter', `--target=${pid}`, '--net', ...(node ? ['--mount', '--pid'] : [])];
  return {
    pid,
    // nsenter --pid forks: the program is nsenter's child, and dies with it.
    command: (bin, argv) => [enter[0]!, [...enter.slice(1), '--', ...PDEATHSIG, bin, ...argv]],
    run: (c, argv, options) => execFileText(enter[0]!, [...enter.slice(1), '--', c, ...argv], options),
    stop: async () => undefined,
  };
}

export interface Forward {
  /** The port on this process's 127.0.0.1. */
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Makes host:port inside `ns` reachable at 127.0.0.1:<port> of this process's network namespace, the way kind
 * publishes its node's apiserver: socat listens here and hands each connection, through a Unix socket in
 * `dir` (a file both sides see), to a socat inside that connects to the target.
 */
export async function forward(ns: Namespaces, host: string, targetPort: number, dir: string, localPort: number): Promise<Forward> {
  const socket = path.join(dir, `forward-${host}-${targetPort}.sock`);
  const inner = spawn(PDEATHSIG[0]!, [...PDEATHSIG.slice(1), ...ns.command('socat', [`UNIX-LISTEN:${socket},fork,unlink-early,mode=600`, `TCP:${host}:${targetPort}`]).flat()], {
    stdio: 'ignore',
  });
  const outer = spawn(PDEATHSIG[0]!, [...PDEATHSIG.slice(1), 'socat', `TCP-LISTEN:${localPort},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${socket}`], {
    stdio: 'ignore',
  });
  const stopOne = async (child: ChildProcess) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  };
  for (let i = 0; !existsSync(socket); i++) {
    if (inner.exitCode !== null) throw new Error(`socat inside the namespace exited (${inner.exitCode}) before listening on ${socket}`);
    if (i > 200) throw new Error(`socat: no ${socket} after 10 s`);
    await sleep(50);
  }
  return { port: localPort, stop: async () => void (await Promise.all([stopOne(outer), stopOne(inner)])) };
}

// `blockfeed ship` and `blockfeed serve` as real processes for the shipper's tests: an api-server with the
// push route on, a shipper following files into it, lines that are each an event of their own, and the
// counts that say whether anything was lost or stored twice.
import { readFileSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { BLOCKFEED, cliEnv, freePort } from './cli.ts';
import { answers200, startManaged, waitWhileRunning, type ManagedProcess } from './processes.ts';

export const INGEST_TOKEN = 'shipper-test-ingest-token-0123456789';

export interface PushServer {
  port: number;
  proc: ManagedProcess;
  stop(): Promise<void>;
}

/** `blockfeed serve` with the push route on, on `port`, ready; `env` names its store (DATABASE_URL or BLOCKFEED_DATA_DIR). */
export async function startPushServer(env: Record<string, string>, port?: number): Promise<PushServer> {
  const listenOn = port ?? (await freePort());
  const proc = startManaged('serve', BLOCKFEED, ['serve'], {
    env: cliEnv({ HOST: '127.0.0.1', PORT: String(listenOn), BLOCKFEED_INGEST_TOKEN: INGEST_TOKEN, LOG_LEVEL: 'warn', ...env }),
  });
  await waitWhileRunning('serve ready', [proc], () => answers200(`http://127.0.0.1:${listenOn}/readyz`), 90_000);
  return { port: listenOn, proc, stop: () => proc.stop(30_000) };
}

export interface Shipper {
  proc: ManagedProcess;
  /** Everything it logged (its log file). */
  log(): string;
  /** Its log lines as objects (JSON lines only). */
  records(): { level: string; msg: string; [k: string]: unknown }[];
  exited: Promise<number | null>;
}

/** `blockfeed ship` with `args` after `ship`, its output kept in `logFile`. */
export function startShipper(args: string[], logFile: string, env: Record<string, string> = {}): Shipper {
  const proc = startManaged('ship', BLOCKFEED, ['ship', ...args], { env: cliEnv({ LOG_LEVEL: 'info', ...env }), logFile });
  const exited = new Promise<number | null>((resolve) => {
    if (!proc.running()) resolve(proc.child.exitCode);
    else proc.child.once('exit', (code) => resolve(code));
  });
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const records = () =>
    log()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: string; msg: string });
  return { proc, log, records, exited };
}

/** The usual arguments: follow `files` as native NDJSON into `server`. */
export function shipArgs(files: string[], server: { port: number }, dir: string, extra: string[] = []): string[] {
  return [...files, '--format', 'native', '--url', `http://127.0.0.1:${server.port}`, '--token-file', path.join(dir, 'token'), '--state-file', path.join(dir, 'state.json'), ...extra];
}

export async function writeToken(dir: string, token = INGEST_TOKEN): Promise<void> {
  await writeFile(path.join(dir, 'token'), `${token}\n`, { mode: 0o600 });
}

/** A test's shippers and their working directories (token, state file, logs), all stopped and removed at the end. */
export class ShipperRuns {
  readonly #running: Shipper[] = [];
  readonly #dirs: string[] = [];

  /** A new working directory holding the ingest token. */
  async workDir(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-ship-'));
    this.#dirs.push(dir);
    await writeToken(dir);
    return dir;
  }

  /** Starts a shipper with `args`, its output logged in `dir`. */
  ship(args: string[], dir: string): Shipper {
    const shipper = startShipper(args, path.join(dir, `ship-${this.#running.length}.log`));
    this.#running.push(shipper);
    return shipper;
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.#running.map((s) => s.proc.stop()));
  }

  async removeDirs(): Promise<void> {
    for (const dir of this.#dirs) await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Line `i` of a test's log: a native event of its own (source 11.`net`.x.y, username `u<i>`), an hour ago plus
 * i ms, so that every line is one stored event and `net` keeps one test's addresses apart from another's.
 */
export function eventLine(net: number, i: number, sensor: string, base: number): string {
  return JSON.stringify({
    ts: new Date(base + i).toISOString(),
    src_ip: `11.${net}.${(i >> 8) & 255}.${i & 255}`,
    dst_port: 22,
    source: 'honeypot',
    sensor,
    username: `u${i}`,
  });
}

export function eventLines(net: number, from: number, to: number, sensor: string, base: number): string {
  let text = '';
  for (let i = from; i < to; i++) text += `${eventLine(net, i, sensor, base)}\n`;
  return text;
}

export const append = (file: string, text: string) => appendFile(file, text);

/** What the store holds of one test: events of `sensor`, and the attacks the hourly rollups count for 11.`net`.0.0/16. */
export async function stored(url: string, sensor: string, net: number): Promise<{ events: number; attacks: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ events: number; attacks: number }>(
      `select (select count(*)::int from events where sensor = $1) as events,
              (select coalesce(sum(attacks), 0)::int from ip_hourly where ip << $2::inet) as attacks`,
      [sensor, `11.${net}.0.0/16`],
    );
    return rows[0]!;
  } finally {
    await client.end();
  }
}

/** Polls until `check` holds (or fails with `what` and the processes' output after `timeoutMs`). */
export async function eventually(what: string, procs: ManagedProcess[], check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  await waitWhileRunning(what, procs, check, timeoutMs);
}

export interface StatePosition {
  ino: string;
  offset: number;
  line: number;
  reading?: string;
}

export async function statePosition(dir: string, file: string): Promise<StatePosition | undefined> {
  try {
    const state = JSON.parse(await readFile(path.join(dir, 'state.json'), 'utf8')) as { files: Record<string, StatePosition> };
    return state.files[file];
  } catch {
    return undefined;
  }
}

/** Resident memory of process `pid` in MB (VmRSS). */
export function rssMb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

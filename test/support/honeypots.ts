// The real honeypots the integration tier attacks: Cowrie and OpenCanary from PyPI, in the virtualenvs that
// `make sensor-venvs` (hack/sensors/install.sh) puts under .cache/sensors/. Each runs in a directory of its
// own, in the lab's sensor namespace (attack-lab.ts), as an unprivileged system user: Cowrie refuses root,
// and a honeypot is not a program to give it.
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { blockingParent, systemUser, type SystemUser } from '../../common/system-user.ts';
import type { Namespaces } from './namespaces.ts';
import { startManaged, waitWhileRunning, type ManagedProcess } from './processes.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The user the honeypots run as, made when missing (as embedded.ts makes `postgres`). */
export const SENSOR_USER = 'blockfeed-sensor';

export type HoneypotName = 'cowrie' | 'opencanary';

/** hack/sensors/versions.env: COWRIE_VERSION, OPENCANARY_VERSION. */
export function sensorVersions(): Record<HoneypotName, string> {
  const env = Object.fromEntries(
    readFileSync(path.join(ROOT, 'hack/sensors/versions.env'), 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.split('=', 2) as [string, string]),
  );
  return { cowrie: env.COWRIE_VERSION as string, opencanary: env.OPENCANARY_VERSION as string };
}

/** The honeypot's virtualenv; fails, naming the make target, when it is not installed. */
function venv(name: HoneypotName, user: SystemUser): string {
  const dir = path.join(ROOT, '.cache/sensors', `${name}-${sensorVersions()[name]}`);
  if (!existsSync(path.join(dir, '.installed'))) throw new Error(`${name} is not installed in ${dir}: run make sensor-venvs (hack/sensors/install.sh)`);
  const blocking = blockingParent(path.join(dir, 'bin', 'python3'), user.uid);
  if (blocking) throw new Error(`the ${SENSOR_USER} user cannot reach ${dir}: ${blocking.dir} has mode ${blocking.mode.toString(8)}; chmod o+x ${blocking.dir}`);
  return dir;
}

export interface Honeypot {
  /** Its working directory (a temporary one: the caller removes it). */
  readonly dir: string;
  /** Its JSON log, as the program writes it. */
  readonly log: string;
  readonly process: ManagedProcess;
  /** SIGTERM, and waits for it to exit: every line is in the log by then. */
  stop(): Promise<void>;
}

/** A working directory the sensor user owns, in a parent anyone can traverse. */
async function workDir(name: string, user: SystemUser): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), `blockfeed-${name}-`));
  await chmod(dir, 0o755);
  await chown(dir, user.uid, user.gid);
  return dir;
}

/** Makes the directories `relative` under `dir`, each of their parts owned by the sensor user. */
async function ownedBy(user: SystemUser, dir: string, ...relative: string[]): Promise<void> {
  for (const rel of relative) {
    let at = dir;
    for (const part of rel.split('/')) {
      at = path.join(at, part);
      await mkdir(at, { recursive: true });
      await chown(at, user.uid, user.gid);
    }
  }
}

/**
 * Runs `bin args` in `ns` as the sensor user. The parent-death signal is set again after the change of user,
 * which clears it: the honeypot dies with the test runner however that ends.
 */
function runAsSensor(name: string, ns: Namespaces, user: SystemUser, cwd: string, env: NodeJS.ProcessEnv, bin: string, args: string[]): ManagedProcess {
  const [cmd, argv] = ns.command('setpriv', [
    `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--', 'setpriv', '--pdeathsig', 'KILL', '--', bin, ...args,
  ]);
  return startManaged(name, cmd, argv, { cwd, env });
}

/** Whether `address:port` is listened on in `ns`, for each port. */
async function listening(ns: Namespaces, address: string, ports: readonly number[]): Promise<boolean> {
  const out = await ns.run('ss', ['-Hltn']);
  return ports.every((p) => out.includes(`${address}:${p} `));
}

export interface CowrieOptions {
  ns: Namespaces;
  address: string;
  sshPort: number;
  telnetPort: number;
  /** sensor_name: what the log's `sensor` field says. */
  sensorName: string;
  /** The one login Cowrie accepts (etc/userdb.txt); every other fails. */
  login: { username: string; password: string };
}

/** Cowrie with SSH and telnet on `address`, writing var/log/cowrie/cowrie.json in its directory. */
export async function startCowrie(o: CowrieOptions): Promise<Honeypot> {
  const user = systemUser(SENSOR_USER);
  const home = venv('cowrie', user);
  const dir = await workDir('cowrie', user);
  // `cowrie init` would write the whole default configuration; only what differs from it is set here.
  await ownedBy(user, dir, 'etc', 'var/log/cowrie', 'var/lib/cowrie/downloads', 'var/lib/cowrie/tty');
  await writeFile(
    path.join(dir, 'etc/cowrie.cfg'),
    [
      '[honeypot]', `sensor_name = ${o.sensorName}`,
      '[ssh]', `listen_endpoints = tcp:${o.sshPort}:interface=${o.address}`,
      '[telnet]', 'enabled = true', `listen_endpoints = tcp:${o.telnetPort}:interface=${o.address}`, '',
    ].join('\n'),
  );
  await writeFile(path.join(dir, 'etc/userdb.txt'), `${o.login.username}:x:${o.login.password}\n`);
  // `cowrie start` runs `twistd` from PATH; COWRIE_STDOUT keeps it in the foreground.
  const env = { PATH: `${home}/bin:/usr/bin:/bin`, HOME: dir, COWRIE_STDOUT: 'yes', LANG: 'C.UTF-8' };
  const proc = runAsSensor('cowrie', o.ns, user, dir, env, path.join(home, 'bin/cowrie'), ['start']);
  await waitWhileRunning('cowrie to listen', [proc], () => listening(o.ns, o.address, [o.sshPort, o.telnetPort]), 60_000);
  return { dir, log: path.join(dir, 'var/log/cowrie/cowrie.json'), process: proc, stop: () => proc.stop() };
}

export interface OpenCanaryOptions {
  ns: Namespaces;
  address: string;
  /** device.node_id: the log's `node_id`. */
  nodeId: string;
  /** Module ports: ftp, ssh, mysql, redis. */
  ports: { ftp: number; ssh: number; mysql: number; redis: number };
}

/** OpenCanary with its FTP, SSH, MySQL and redis modules on `address`, writing opencanary.log in its directory. */
export async function startOpenCanary(o: OpenCanaryOptions): Promise<Honeypot> {
  const user = systemUser(SENSOR_USER);
  const home = venv('opencanary', user);
  const dir = await workDir('opencanary', user);
  const log = path.join(dir, 'opencanary.log');
  const config = {
    'device.node_id': o.nodeId,
    'device.listen_addr': o.address,
    'ip.ignorelist': [],
    'logtype.ignorelist': [],
    logger: {
      class: 'PyLogger',
      kwargs: {
        formatters: { plain: { format: '%(message)s' } },
        handlers: { file: { class: 'logging.FileHandler', filename: log } },
      },
    },
    'ftp.enabled': true,
    'ftp.port': o.ports.ftp,
    'ftp.banner': 'FTP server ready',
    // Both "connection made" lines, which are off by default: what they become is tested too.
    'ftp.log_auth_attempt_initiated': true,
    'ssh.enabled': true,
    'ssh.port': o.ports.ssh,
    'ssh.version': 'SSH-2.0-OpenSSH_5.1p1 Debian-4',
    'mysql.enabled': true,
    'mysql.port': o.ports.mysql,
    'mysql.banner': '5.5.43-0ubuntu0.14.04.1',
    'mysql.log_connection_made': true,
    'redis.enabled': true,
    'redis.port': o.ports.redis,
  };
  // OpenCanary reads /etc/opencanaryd/opencanary.conf first, then ~/.opencanary.conf: HOME is this directory.
  const file = path.join(dir, '.opencanary.conf');
  await writeFile(file, JSON.stringify(config, null, 2));
  const env = { PATH: `${home}/bin:/usr/bin:/bin`, HOME: dir, LANG: 'C.UTF-8' };
  // What `opencanaryd --dev` runs, without its pid file in /var/run (which only root may write).
  const proc = runAsSensor('opencanary', o.ns, user, dir, env, path.join(home, 'bin/twistd'), ['-noy', path.join(home, 'bin/opencanary.tac'), '--pidfile=']);
  const ports = Object.values(o.ports);
  // Listening is not enough: it logs that it runs once every service is set up (the SSH one loads its keys).
  const running = async () => (await readFile(log, 'utf8').catch(() => '')).includes('Canary running!!!');
  await waitWhileRunning('opencanary to listen and run', [proc], async () => (await listening(o.ns, o.address, ports)) && (await running()), 60_000);
  if (!proc.output().includes(`Using config file: ${file}`)) throw new Error(`opencanary did not read ${file}:\n${proc.output()}`);
  return { dir, log, process: proc, stop: () => proc.stop() };
}

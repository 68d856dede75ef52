// What a real sensor log must become, read from the log by rules written from the sensors' own output
// contract rather than from blockfeed's parsers: which lines carry an attack and the row each must be stored
// as, and which are housekeeping. An eventid or logtype these rules do not know fails loudly, so that a new
// version of a sensor that writes something new gets a decision instead of a silent skip.

/** A stored event's facts, as the events table and AttackEvent both give them. */
export interface ExpectedEvent {
  ts: number;
  src: string;
  dstPort: number | null;
  service: string | null;
  action: number;
  username: string | null;
  command: string | null;
}

export interface Expectation {
  /** Lines that carry an attack, in log order, each as the row it must be stored as. */
  events: ExpectedEvent[];
  /** Lines to skip (a sensor's housekeeping). */
  housekeeping: number;
}

/** The log's non-blank lines as JSON objects. */
export function logObjects(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** An ISO time or `YYYY-MM-DD HH:MM:SS.ffffff` (UTC), to the millisecond (finer digits are dropped). */
function ms(text: unknown): number {
  const t = String(text).replace(' ', 'T').replace(/(\.\d{3})\d*/, '$1');
  return Date.parse(/[Zz]|[+-]\d\d:?\d\d$/.test(t) ? t : `${t}Z`);
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

// Cowrie (docs/OUTPUT.rst of Cowrie 3): every line carries session, src_ip, src_port, dst_ip, dst_port and
// protocol. An attack is the connection, each login attempt, each command, each file moved, each forward.
const COWRIE_HOUSEKEEPING = new Set([
  'cowrie.client.version', 'cowrie.client.kex', 'cowrie.client.fingerprint', 'cowrie.client.size', 'cowrie.client.var',
  'cowrie.session.params', 'cowrie.session.closed', 'cowrie.log.open', 'cowrie.log.closed', 'cowrie.telnet.option',
  // what was typed at a command's own prompt (passwd) or the users it changed (chpasswd): the command is stored
  'cowrie.command.success', 'cowrie.command.chpasswd',
]);

function cowrieCommand(o: Record<string, unknown>): { action: number; username: string | null; command: string | null } {
  switch (o.eventid) {
    case 'cowrie.session.connect':
      return { action: 0, username: null, command: null };
    case 'cowrie.login.failed':
    case 'cowrie.login.success':
      return { action: 1, username: str(o.username), command: null };
    case 'cowrie.command.input':
    case 'cowrie.command.failed':
      return { action: 2, username: null, command: str(o.input) };
    case 'cowrie.session.file_download':
    case 'cowrie.session.file_download.failed':
      return { action: 2, username: null, command: `download ${str(o.url) ?? ''}`.trim() };
    case 'cowrie.session.file_upload':
      return { action: 2, username: null, command: `upload ${str(o.url) ?? str(o.filename) ?? ''}`.trim() };
    default:
      throw new Error(`Cowrie eventid ${String(o.eventid)} is new to these rules: decide whether it carries an attack`);
  }
}

export function expectCowrie(text: string): Expectation {
  const events: ExpectedEvent[] = [];
  let housekeeping = 0;
  for (const o of logObjects(text)) {
    if (COWRIE_HOUSEKEEPING.has(String(o.eventid))) {
      housekeeping++;
      continue;
    }
    // The honeypot listens on 2222 / 2223 (as deployments behind a redirect do): the protocol names the service.
    events.push({ ts: ms(o.timestamp), src: String(o.src_ip), dstPort: o.dst_port as number, service: String(o.protocol), ...cowrieCommand(o) });
  }
  return { events, housekeeping };
}

// OpenCanary (opencanary/logger.py): every line carries src_host, src_port, dst_port, utc_time and logdata.
const CANARY_SERVICE_BY_PORT: Readonly<Record<number, string>> = { 22: 'ssh', 3306: 'db', 6379: 'db' };

function canaryFacts(o: Record<string, unknown>): { action: number; username: string | null; command: string | null } | undefined {
  const data = (o.logdata ?? {}) as Record<string, unknown>;
  switch (o.logtype) {
    case 1001: // the canary's own messages
    case 4001: // the SSH client's version, after every 4000
      return undefined;
    case 2001: // FTP login begun
    case 4000: // SSH connection
    case 9003: // MySQL connection
      return { action: 0, username: null, command: null };
    case 2000: // FTP login
    case 4002: // SSH login
    case 8001: // MySQL login
      return { action: 1, username: str(data.USERNAME), command: null };
    case 17001: {
      // redis: AUTH [username] password is a login attempt (its password not kept), the rest are commands
      const cmd = str(data.CMD) ?? '';
      const args = str(data.ARGS) ?? '';
      if (cmd.toUpperCase() === 'AUTH') {
        const words = args.split(' ').filter(Boolean);
        return { action: 1, username: words.length >= 2 ? (words[0] as string) : null, command: null };
      }
      return { action: 2, username: null, command: `${cmd} ${args}`.trim() };
    }
    default:
      throw new Error(`OpenCanary logtype ${String(o.logtype)} is new to these rules: decide whether it carries an attack`);
  }
}

export function expectOpenCanary(text: string): Expectation {
  const events: ExpectedEvent[] = [];
  let housekeeping = 0;
  for (const o of logObjects(text)) {
    const facts = canaryFacts(o);
    if (!facts) {
      housekeeping++;
      continue;
    }
    const dstPort = o.dst_port as number;
    events.push({ ts: ms(o.utc_time), src: String(o.src_host), dstPort, service: CANARY_SERVICE_BY_PORT[dstPort] ?? null, ...facts });
  }
  return { events, housekeeping };
}

/** Events sorted into one order, for comparing two lists as multisets. */
export function sortedEvents(events: readonly ExpectedEvent[]): ExpectedEvent[] {
  const key = (e: ExpectedEvent) => JSON.stringify([e.ts, e.src, e.dstPort, e.action, e.username, e.command, e.service]);
  return [...events].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

// `cowrie`: Cowrie's JSON log (cowrie.json), one event object a line. Fields used: eventid, timestamp,
// src_ip, dst_port and protocol (on cowrie.session.connect), session, sensor, username (logins), input
// (commands), url / filename (file transfers). Only the connect line carries the destination port, so the
// parser remembers each session's port and protocol for the lines that follow it.
import { serviceOfPort, type Service } from '../../../common/vocabulary.ts';
import {
  FieldError, guarded, optionalPort, optionalText, parseJsonObject, requireAddress, requireSensor, requireTime, withId,
  type Action, type LineParser, type ParserOptions,
} from '../event.ts';
import { readFlatObject } from '../flat-json.ts';

/** What each kept eventid means; other eventids (client.version, kex, session.closed, ...) are housekeeping. */
const ACTIONS: Readonly<Record<string, Action>> = {
  'cowrie.session.connect': 0,
  'cowrie.login.failed': 1,
  'cowrie.login.success': 1,
  'cowrie.command.input': 2,
  'cowrie.command.failed': 2,
  'cowrie.session.file_download': 2,
  'cowrie.session.file_download.failed': 2,
  'cowrie.session.file_upload': 2,
  'cowrie.direct-tcpip.request': 2,
};

/** Every field the parser reads (the flat reader keeps only these). */
export const COWRIE_FIELDS: ReadonlySet<string> = new Set([
  'eventid', 'session', 'protocol', 'dst_port', 'timestamp', 'src_ip', 'sensor', 'username', 'input', 'dst_ip', 'url', 'filename', 'outfile',
]);

/** The fields whose values outlive the line (in rollups, sensor ids, sessions); the others need no copy. */
const KEPT_FIELDS: ReadonlySet<string> = new Set(['src_ip', 'sensor', 'session']);

/** Reads a line as Cowrie writes it with the flat reader, anything unusual with JSON.parse (same result). */
export const readCowrieLine = (line: string): Record<string, unknown> => readFlatObject(line, COWRIE_FIELDS, KEPT_FIELDS) ?? parseJsonObject(line);

const MAX_SESSIONS = 100_000;

interface Session {
  port: number | null;
  proto: string;
}

/**
 * The sessions seen lately, bounded without per-line cost: two generations of at most MAX_SESSIONS / 2 each;
 * when the young one fills, the old one is dropped whole. (Evicting the oldest key of one Map walks past
 * every deleted slot before it, which made long logs quadratic.)
 */
class RecentSessions {
  private young = new Map<string, Session>();
  private old = new Map<string, Session>();

  get(id: string): Session | undefined {
    return this.young.get(id) ?? this.old.get(id);
  }

  set(id: string, session: Session): void {
    if (this.young.size >= MAX_SESSIONS / 2) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(id, session);
  }

  delete(id: string): void {
    this.young.delete(id);
    this.old.delete(id);
  }
}

/** `read` turns a line into its fields; the default is the fast one (tests compare it with parseJsonObject). */
export function cowrieParser(options: ParserOptions = {}, read: (line: string) => Record<string, unknown> = readCowrieLine): LineParser {
  const sessions = new RecentSessions();
  return (line) =>
    guarded(() => {
      const o = read(line);
      if (typeof o.eventid !== 'string') throw new FieldError('eventid is missing');
      const sessionId = typeof o.session === 'string' ? o.session : undefined;
      if (o.eventid === 'cowrie.session.closed' && sessionId) sessions.delete(sessionId);
      const action = ACTIONS[o.eventid];
      if (action === undefined) return { skip: true };
      let session = sessionId ? sessions.get(sessionId) : undefined;
      if (o.eventid === 'cowrie.session.connect') {
        const proto = o.protocol === 'telnet' ? 'telnet' : 'ssh';
        session = { port: optionalPort(o.dst_port, 'dst_port'), proto };
        if (sessionId) sessions.set(sessionId, session);
      }
      // direct-tcpip's dst_port is the port the attacker asked to be forwarded to, not the honeypot's.
      const forward = o.eventid === 'cowrie.direct-tcpip.request';
      const port = !forward && o.dst_port !== undefined ? optionalPort(o.dst_port, 'dst_port') : (session?.port ?? null);
      const proto = session?.proto ?? (o.protocol === 'telnet' ? 'telnet' : 'ssh');
      // Cowrie often listens on 2222/2223 behind a redirect; the protocol names the service either way.
      const service: Service = (port !== null ? serviceOfPort(port) : undefined) ?? (proto === 'telnet' ? 'telnet' : 'ssh');
      let command: string | null = null;
      if (action === 2) {
        if (o.eventid.startsWith('cowrie.command.')) command = optionalText(o.input, 'input');
        else if (forward) {
          command = `tcpip ${optionalText(o.dst_ip, 'dst_ip') ?? ''}:${optionalPort(o.dst_port, 'dst_port') ?? ''}`;
        } else {
          const target = optionalText(o.url, 'url') ?? optionalText(o.filename, 'filename') ?? optionalText(o.outfile, 'outfile');
          command = `${o.eventid.includes('upload') ? 'upload' : 'download'} ${target ?? ''}`.trim();
        }
        if (command === null) throw new FieldError('input is missing');
      }
      return {
        event: withId({
          ts: requireTime(o.timestamp, 'timestamp'),
          src: requireAddress(o.src_ip, 'src_ip'),
          dstPort: port,
          service,
          proto: 'tcp',
          source: 'honeypot',
          sensor: requireSensor(o.sensor, options.sensor ?? 'cowrie', 'sensor'),
          action,
          username: action === 1 ? optionalText(o.username, 'username') : null,
          command,
        }),
      };
    });
}

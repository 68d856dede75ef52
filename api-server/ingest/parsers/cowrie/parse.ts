// `cowrie`: Cowrie's JSON log (cowrie.json), one event object a line. Fields used: eventid, timestamp,
// src_ip, dst_port and protocol (on cowrie.session.connect; Cowrie 3 repeats them on every line), session
// (also the event's connection, for its id), sensor, username (logins), input (commands), url / filename /
// outfile (file transfers), dst_ip (tcpip forwards).
//
// This parser, on JSON.parse, is the reference: the byte reader (bytes.ts) reads the common lines faster and
// must answer as it does.
import { serviceOfPort, type Service } from '../../../../common/vocabulary.ts';
import {
  FieldError, guarded, idCountsConnection, optionalPort, optionalText, parseJsonObject, requireAddress, requireSensor, requireTime, withId,
  type LineParser, type LineResult, type ParserOptions,
} from '../../event.ts';
import { cowrieBytesReader } from './bytes.ts';
import { EVENTIDS, RecentSessions, SESSION_CLOSED, packSession, sessionKey, sessionPort, sessionTelnet } from './sessions.ts';

/** The event of one Cowrie object, or a skip; throws FieldError for a line that cannot be stored. */
function cowrieEvent(o: Record<string, unknown>, sessions: RecentSessions, fallbackSensor: string, legacyIdsUntil: number | undefined): LineResult {
  if (typeof o.eventid !== 'string') throw new FieldError('eventid is missing');
  const session = typeof o.session === 'string' && o.session !== '' ? o.session : undefined;
  const sessionId = session === undefined ? undefined : sessionKey(session);
  if (o.eventid === SESSION_CLOSED && sessionId !== undefined) sessions.delete(sessionId);
  const known = EVENTIDS.get(o.eventid);
  if (known === undefined) return { skip: true };
  const { action, kind } = known;
  let remembered = sessionId === undefined ? undefined : sessions.get(sessionId);
  if (kind === 'connect') {
    remembered = packSession(optionalPort(o.dst_port, 'dst_port'), o.protocol === 'telnet');
    if (sessionId !== undefined) sessions.set(sessionId, remembered);
  }
  // direct-tcpip's dst_port is the port the attacker asked to be forwarded to, not the honeypot's.
  const port = kind !== 'forward' && o.dst_port !== undefined ? optionalPort(o.dst_port, 'dst_port') : remembered === undefined ? null : sessionPort(remembered);
  const telnet = remembered === undefined ? o.protocol === 'telnet' : sessionTelnet(remembered);
  // Cowrie often listens on 2222/2223 behind a redirect; the protocol names the service either way.
  const service: Service = (port !== null ? serviceOfPort(port) : undefined) ?? (telnet ? 'telnet' : 'ssh');
  let command: string | null = null;
  if (kind === 'command') command = optionalText(o.input, 'input');
  else if (kind === 'forward') command = `tcpip ${optionalText(o.dst_ip, 'dst_ip') ?? ''}:${optionalPort(o.dst_port, 'dst_port') ?? ''}`;
  else if (kind === 'download' || kind === 'upload') {
    const target = optionalText(o.url, 'url') ?? optionalText(o.filename, 'filename') ?? optionalText(o.outfile, 'outfile');
    command = `${kind} ${target ?? ''}`.trim();
  }
  if (action === 2 && command === null) throw new FieldError('input is missing');
  const ts = requireTime(o.timestamp, 'timestamp');
  return {
    event: withId({
      ts,
      src: requireAddress(o.src_ip, 'src_ip'),
      dstPort: port,
      service,
      proto: 'tcp',
      source: 'honeypot',
      sensor: requireSensor(o.sensor, fallbackSensor, 'sensor'),
      action,
      username: kind === 'login' ? optionalText(o.username, 'username') : null,
      command,
      // Cowrie's session ids are random per connection: hydra's parallel attempts in one millisecond differ by it.
      connection: session !== undefined && idCountsConnection(ts, legacyIdsUntil) ? session : null,
    }),
  };
}

export function cowrieParser(options: ParserOptions = {}): LineParser {
  const sessions = new RecentSessions();
  const sensor = options.sensor ?? 'cowrie';
  return {
    line: (text) => guarded(() => cowrieEvent(parseJsonObject(text), sessions, sensor, options.legacyIdsUntil)),
    bytes: cowrieBytesReader(sessions, sensor, options.legacyIdsUntil),
  };
}

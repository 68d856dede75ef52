// The byte reader of the common Cowrie line: for a line that is a flat object of plain ASCII values it fills a
// RawEvent — byte ranges of the line — without making a string or an object, and gives exactly what the
// parser (parse.ts) gives: the same outcome, the same stored row. Anything it is not sure of, it declines, and
// the parser reads that line. Everything that could make the parser refuse a line is checked before any
// session changes.
import { parseIPv4Bytes } from '../../../../common/ip.ts';
import { SERVICE_INDEX, serviceOfPort } from '../../../../common/vocabulary.ts';
import { idCountsConnection, inTimeRange, isoUtcMs, MAX_SENSOR_NAME, MAX_TEXT, requireSensor, type LineParser } from '../../event.ts';
import { ABSENT, ByteNames, FlatFields, NULL, NUMBER, STRING, bytesEqual } from '../flat-json.ts';
import { EVENTIDS, SESSION_CLOSED, packSession, sessionKeyOfBytes, sessionPort, sessionTelnet, type RecentSessions } from './sessions.ts';

const FIELDS = ['eventid', 'session', 'protocol', 'dst_port', 'timestamp', 'src_ip', 'sensor', 'username', 'input', 'url', 'filename', 'outfile'] as const;
const F = Object.fromEntries(FIELDS.map((name, i) => [name, i])) as Record<(typeof FIELDS)[number], number>;
const TELNET = Buffer.from('telnet');
const PREFIX = { download: Buffer.from('download '), upload: Buffer.from('upload '), bareDownload: Buffer.from('download'), bareUpload: Buffer.from('upload') };
const SSH = SERVICE_INDEX.get('ssh') as number;
const TELNET_SERVICE = SERVICE_INDEX.get('telnet') as number;
const SPACE = 32;
/** The eventids that matter, the kept ones (EVENTIDS) and the one that ends a session, read from their bytes. */
const KEPT = [...EVENTIDS.values()];
const EVENTID_NAMES = new ByteNames([...EVENTIDS.keys(), SESSION_CLOSED]);
const CLOSED = KEPT.length;

/** A number token that is a plain integer port (no sign, fraction or exponent), or -1: the parser decides. */
function plainPort(line: Buffer, from: number, to: number): number {
  if (to - from > 5) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = (line[i] as number) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n <= 65535 ? n : -1;
}

/**
 * One scanner per thread for every Cowrie reader: a reader takes what it needs from a line's scan before it
 * returns, so readers that take turns on one thread never see each other's fields.
 */
let sharedFields: FlatFields | undefined;

/**
 * The byte reader of a Cowrie parser with these sessions, this sensor name for lines without one, and the
 * store's legacyIdsUntil (ParserOptions).
 */
export function cowrieBytesReader(sessions: RecentSessions, fallbackSensor: string, legacyIdsUntil?: number): NonNullable<LineParser['bytes']> {
  const fields = (sharedFields ??= new FlatFields(FIELDS));
  const { kind, start, end } = fields;
  // The fallback's bytes are written as they are: only when the parser would keep the name unchanged.
  let fallbackKept = false;
  try {
    fallbackKept = /^[\x20-\x7e]*$/.test(fallbackSensor) && requireSensor(undefined, fallbackSensor, 'sensor') === fallbackSensor;
  } catch {
    /* the parser refuses lines without a sensor: so does this reader */
  }
  const fallbackBytes = Buffer.from(fallbackSensor);
  /** A string field's text as optionalText gives it: 1 = present, 0 = null or absent, -1 = decline. */
  const text = (f: number): number => {
    if (kind[f] === ABSENT || kind[f] === NULL) return 0;
    return kind[f] === STRING && (end[f] as number) - (start[f] as number) <= MAX_TEXT ? 1 : -1;
  };

  return (line, lineStart, lineEnd, out) => {
    if (!fields.read(line, lineStart, lineEnd) || kind[F.eventid] !== STRING) return 'declined';
    const eventid = EVENTID_NAMES.indexOf(line, start[F.eventid] as number, end[F.eventid] as number);
    const sessionId = kind[F.session] === STRING && end[F.session] !== start[F.session]
      ? sessionKeyOfBytes(line, start[F.session] as number, end[F.session] as number)
      : undefined;
    if (eventid === CLOSED && sessionId !== undefined) sessions.delete(sessionId);
    const known = KEPT[eventid];
    if (known === undefined) return 'skip';
    const what = known.kind;
    if (what === 'forward') return 'declined';

    const telnet = kind[F.protocol] === STRING && bytesEqual(line, start[F.protocol] as number, end[F.protocol] as number, TELNET);
    let linePort = -1;
    if (kind[F.dst_port] === NUMBER) {
      linePort = plainPort(line, start[F.dst_port] as number, end[F.dst_port] as number);
      if (linePort < 0) return 'declined';
    } else if (kind[F.dst_port] !== ABSENT && kind[F.dst_port] !== NULL) return 'declined';
    if (kind[F.timestamp] !== STRING || kind[F.src_ip] !== STRING) return 'declined';
    const ts = isoUtcMs(line, start[F.timestamp] as number, end[F.timestamp] as number);
    if (!inTimeRange(ts, Date.now())) return 'declined';
    const src = parseIPv4Bytes(line, start[F.src_ip] as number, end[F.src_ip] as number);
    if (src < 0) return 'declined';
    let sensorBytes = line;
    let s0 = start[F.sensor] as number;
    let s1 = end[F.sensor] as number;
    if (kind[F.sensor] === STRING && s1 > s0) {
      // requireSensor trims the name and refuses a long one: such names go to the parser.
      if (s1 - s0 > MAX_SENSOR_NAME || line[s0] === SPACE || line[s1 - 1] === SPACE) return 'declined';
    } else if (kind[F.sensor] === ABSENT || kind[F.sensor] === NULL || kind[F.sensor] === STRING) {
      if (!fallbackKept) return 'declined';
      sensorBytes = fallbackBytes;
      s0 = 0;
      s1 = fallbackBytes.length;
    } else return 'declined';

    out.userStart = -1;
    out.commandStart = -1;
    out.commandPrefix = null;
    if (what === 'login') {
      const t = text(F.username);
      if (t < 0) return 'declined';
      if (t > 0) {
        out.userStart = start[F.username] as number;
        out.userEnd = end[F.username] as number;
      }
    } else if (what === 'command') {
      if (text(F.input) <= 0) return 'declined';
      out.commandStart = start[F.input] as number;
      out.commandEnd = end[F.input] as number;
    } else if (what === 'download' || what === 'upload') {
      // url ?? filename ?? outfile, each read only when those before it are null.
      let target = F.url;
      let t = text(target);
      if (t === 0) t = text((target = F.filename));
      if (t === 0) t = text((target = F.outfile));
      if (t < 0) return 'declined';
      const from = t > 0 ? (start[target] as number) : 0;
      const to = t > 0 ? (end[target] as number) : 0;
      // `${kind} ${target}`.trim(): a target with a space at either end goes to the parser.
      if (to > from && (line[from] === SPACE || line[to - 1] === SPACE)) return 'declined';
      const upload = what === 'upload';
      out.commandPrefix = to > from ? (upload ? PREFIX.upload : PREFIX.download) : upload ? PREFIX.bareUpload : PREFIX.bareDownload;
      out.commandStart = from;
      out.commandEnd = to;
    }

    let session = sessionId === undefined ? undefined : sessions.get(sessionId);
    if (what === 'connect') {
      session = packSession(linePort < 0 ? null : linePort, telnet);
      if (sessionId !== undefined) sessions.set(sessionId, session);
    }
    const port = kind[F.dst_port] !== ABSENT ? linePort : session === undefined ? -1 : (sessionPort(session) ?? -1);
    const byPort = SERVICE_INDEX.get(serviceOfPort(port) ?? '') ?? -1;
    out.line = line;
    out.ts = ts;
    out.src = src;
    out.srcStart = start[F.src_ip] as number;
    out.srcEnd = end[F.src_ip] as number;
    out.port = port;
    // Cowrie often listens on 2222/2223 behind a redirect; the protocol names the service either way.
    out.service = byPort >= 0 ? byPort : (session === undefined ? telnet : sessionTelnet(session)) ? TELNET_SERVICE : SSH;
    out.sensorBytes = sensorBytes;
    out.sensorStart = s0;
    out.sensorEnd = s1;
    out.action = known.action;
    // The session is the event's connection (parse.ts).
    const counted = sessionId !== undefined && idCountsConnection(ts, legacyIdsUntil);
    out.connectionStart = counted ? (start[F.session] as number) : -1;
    out.connectionEnd = counted ? (end[F.session] as number) : -1;
    return 'event';
  };
}

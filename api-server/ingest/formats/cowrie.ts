// `cowrie`: Cowrie's JSON log (cowrie.json), one event object a line. Fields used: eventid, timestamp,
// src_ip, dst_port and protocol (on cowrie.session.connect), session, sensor, username (logins), input
// (commands), url / filename (file transfers). Only the connect line carries the destination port, so the
// parser remembers each session's port and protocol for the lines that follow it.
import { SERVICE_INDEX, serviceIndexOfPort, serviceOfPort, type Service } from '../../../common/vocabulary.ts';
import { parseIPv4Bytes } from '../../../common/ipv4.ts';
import type { RawEvent } from '../batch.ts';
import {
  BYTES_DECLINED, BYTES_EVENT, BYTES_SKIP, FieldError, MAX_SENSOR_NAME, MAX_TEXT, guarded, inTimeRange, IsoUtcBytes, optionalPort,
  optionalText, parseJsonObject, requireAddress, requireSensor, requireTime, withId, type ByteLineReader, type LineParser,
  type ParserOptions,
} from '../event.ts';
import type { Action } from '../../classify/classification.ts';
import { readFlatObject } from '../flat-json.ts';
import { ABSENT, FlatFields, NULL, NUMBER, STRING, bytesEqual, decodeAscii, plainInteger } from '../flat-json-bytes.ts';
import type { SensorNames } from '../sensors.ts';

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

/**
 * What a session's connect line said, packed in one small integer — (port + 1) * 2 + (telnet ? 1 : 0), port
 * -1 when none — so that the hundreds of thousands of sessions a long log holds are no objects to trace.
 */
type Session = number;
const NO_SESSION = -1;
const packSession = (port: number | null, telnet: boolean): Session => ((port ?? -1) + 1) * 2 + (telnet ? 1 : 0);
const sessionPort = (s: Session): number | null => (s >> 1 === 0 ? null : (s >> 1) - 1);
const sessionTelnet = (s: Session): boolean => (s & 1) === 1;

/**
 * A session id as a Map key: Cowrie's ids (up to 12 lowercase hex digits) as a number — no string to make per
 * line on the byte path — with the digit count folded in so that "0f" and "f" stay apart; any other id as is.
 */
type SessionKey = number | string;

function sessionKey(id: string): SessionKey {
  if (id.length === 0 || id.length > 12) return id;
  let n = 0;
  for (let i = 0; i < id.length; i++) {
    const d = HEX[id.charCodeAt(i)] ?? -1;
    if (d < 0) return id;
    n = n * 16 + d;
  }
  return n * 16 + id.length;
}

function sessionKeyOfBytes(b: Buffer, start: number, end: number): SessionKey {
  const length = end - start;
  if (length === 0 || length > 12) return b.toString('latin1', start, end);
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = HEX[b[i] as number] ?? -1;
    if (d < 0) return b.toString('latin1', start, end);
    n = n * 16 + d;
  }
  return n * 16 + length;
}

/** Lowercase hex digit (by character code) → its value; -1 for anything else. */
const HEX = Array.from({ length: 128 }, (_, c) => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1));

/**
 * The sessions seen lately, bounded without per-line cost: two generations of at most MAX_SESSIONS / 2 each;
 * when the young one fills, the old one is dropped whole. (Evicting the oldest key of one Map walks past
 * every deleted slot before it, which made long logs quadratic.)
 */
class RecentSessions {
  private young = new Map<SessionKey, Session>();
  private old = new Map<SessionKey, Session>();

  constructor() {
    // Turned over once here: V8 takes a field stored only once as a constant, and the byte reader's
    // optimized code (~30 ms to compile) was thrown away when the first generation filled.
    this.turnOver();
  }

  /** The session, or NO_SESSION. */
  get(id: SessionKey): Session {
    return this.young.get(id) ?? this.old.get(id) ?? NO_SESSION;
  }

  set(id: SessionKey, session: Session): void {
    if (this.young.size >= MAX_SESSIONS / 2) this.turnOver();
    this.young.set(id, session);
  }

  private turnOver(): void {
    this.old = this.young;
    this.young = new Map();
  }

  delete(id: SessionKey): void {
    this.young.delete(id);
    this.old.delete(id);
  }
}

/** `read` turns a line into its fields; the default is the fast one (tests compare it with parseJsonObject). */
export function cowrieParser(options: ParserOptions = {}, read: (line: string) => Record<string, unknown> = readCowrieLine): LineParser {
  const sessions = new RecentSessions();
  const parse = (line: string) =>
    guarded(() => {
      const o = read(line);
      if (typeof o.eventid !== 'string') throw new FieldError('eventid is missing');
      const sessionId = typeof o.session === 'string' && o.session !== '' ? sessionKey(o.session) : undefined;
      if (o.eventid === 'cowrie.session.closed' && sessionId !== undefined) sessions.delete(sessionId);
      // Own keys only: an eventid such as "toString" is not an action.
      const action = Object.hasOwn(ACTIONS, o.eventid) ? ACTIONS[o.eventid] : undefined;
      if (action === undefined) return { skip: true };
      let session = sessionId !== undefined ? sessions.get(sessionId) : NO_SESSION;
      if (o.eventid === 'cowrie.session.connect') {
        session = packSession(optionalPort(o.dst_port, 'dst_port'), o.protocol === 'telnet');
        if (sessionId !== undefined) sessions.set(sessionId, session);
      }
      // direct-tcpip's dst_port is the port the attacker asked to be forwarded to, not the honeypot's.
      const forward = o.eventid === 'cowrie.direct-tcpip.request';
      const port = !forward && o.dst_port !== undefined ? optionalPort(o.dst_port, 'dst_port') : session === NO_SESSION ? null : sessionPort(session);
      const proto = session !== NO_SESSION ? (sessionTelnet(session) ? 'telnet' : 'ssh') : o.protocol === 'telnet' ? 'telnet' : 'ssh';
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
  return Object.assign(parse, { bytes: cowrieBytesReader(sessions, options.sensor ?? 'cowrie') });
}

// The byte-level reader of the common Cowrie line: the same result as the parser above, for lines that are
// flat objects of plain ASCII values; anything it is not sure of, it declines.

const FIELDS = ['eventid', 'session', 'protocol', 'dst_port', 'timestamp', 'src_ip', 'sensor', 'username', 'input', 'url', 'filename', 'outfile'] as const;
const F = Object.fromEntries(FIELDS.map((name, i) => [name, i])) as Record<(typeof FIELDS)[number], number>;
/** Fields compared or kept as their bytes: they must be plain (no escapes) for the byte reader. */
const PLAIN_FIELDS = [F.eventid, F.session, F.protocol, F.timestamp, F.src_ip, F.sensor];

/** What the reader does with each eventid it knows; the forwards (direct-tcpip) go the general way. */
const CONNECT = 1;
const LOGIN = 2;
const COMMAND = 3;
const DOWNLOAD = 4;
const UPLOAD = 5;
const CLOSED = 6;
const FORWARD = 7;
/** The eventids the reader knows, by length (an eventid is found with one or two comparisons). */
const KINDS_BY_LENGTH: [Buffer, number][][] = [];
for (const [name, kind] of [
  ['cowrie.session.connect', CONNECT],
  ['cowrie.login.failed', LOGIN],
  ['cowrie.login.success', LOGIN],
  ['cowrie.command.input', COMMAND],
  ['cowrie.command.failed', COMMAND],
  ['cowrie.session.file_download', DOWNLOAD],
  ['cowrie.session.file_download.failed', DOWNLOAD],
  ['cowrie.session.file_upload', UPLOAD],
  ['cowrie.session.closed', CLOSED],
  ['cowrie.direct-tcpip.request', FORWARD],
] as const) (KINDS_BY_LENGTH[name.length] ??= []).push([Buffer.from(name), kind]);
const TELNET = Buffer.from('telnet');
const PREFIX = { download: Buffer.from('download '), upload: Buffer.from('upload '), bareDownload: Buffer.from('download'), bareUpload: Buffer.from('upload') };
const SSH = SERVICE_INDEX.get('ssh') as number;
const CLOCK_LINES = 4096;
/** The ASCII characters String.prototype.trim removes: tab, line feed, vertical tab, form feed, return, space. */
const isTrimmed = (c: number) => (c >= 9 && c <= 13) || c === 32;
const TELNET_SERVICE = SERVICE_INDEX.get('telnet') as number;

/** The sensor name the parser makes of a line without one when given `fallback`, or undefined if it refuses. */
function keptSensor(fallback: string): string | undefined {
  try {
    return requireSensor(undefined, fallback, 'sensor');
  } catch {
    return undefined;
  }
}

/**
 * One scanner per thread for every Cowrie parser (an instance costs ~0.1 ms, too much for each small push to
 * the ingest route): a reader takes what it needs from a line's scan before it returns, so parsers that take
 * turns on one thread never see each other's fields.
 */
let sharedFields: FlatFields | undefined;

function cowrieBytesReader(sessions: RecentSessions, fallbackSensor: string): ByteLineReader {
  const fields = (sharedFields ??= new FlatFields(FIELDS));
  const times = new IsoUtcBytes();
  // The clock, read every CLOCK_LINES lines: an older "now" only makes the range check stricter (a line it
  // refuses goes to the parser, which reads the clock itself), never looser.
  let now = Date.now();
  let untilClock = CLOCK_LINES;
  const { escaped } = fields;
  // Decoded escaped values (at most MAX_TEXT characters, so the raw text is at most six times that).
  const userScratch = Buffer.alloc(MAX_TEXT * 6);
  const commandScratch = Buffer.alloc(MAX_TEXT * 6);
  const { kind, start, end } = fields;
  // The fallback's bytes are written as they are: only when the parser would keep the name unchanged.
  const fallbackOk = /^[\x20-\x7e]*$/.test(fallbackSensor) && keptSensor(fallbackSensor) === fallbackSensor;
  const fallbackBytes = Buffer.from(fallbackSensor);

  /**
   * A string field as optionalText would give it, pointed at by (bytes, from, to): its bytes in the line, or
   * its characters decoded into `scratch` when it holds escapes. Returns 1 = present, 0 = null, -1 = decline.
   */
  let bytes: Buffer = userScratch; // set by text() before it is read
  let from = 0;
  let to = 0;
  const text = (line: Buffer, f: number, scratch: Buffer): number => {
    const k = kind[f];
    if (k === ABSENT || k === NULL) return 0;
    if (k !== STRING) return -1;
    const s = start[f] as number;
    const e = end[f] as number;
    if (escaped[f] === 0) {
      if (e - s > MAX_TEXT) return -1;
      bytes = line;
      from = s;
      to = e;
      return 1;
    }
    if (e - s > scratch.length) return -1;
    const n = decodeAscii(line, s, e, scratch);
    if (n < 0 || n > MAX_TEXT) return -1;
    bytes = scratch;
    from = 0;
    to = n;
    return 1;
  };
  /** optionalPort of a field: the port, null (-1), or undefined when the general path must decide. */
  const port = (line: Buffer, f: number): number | undefined => {
    const k = kind[f];
    if (k === NULL) return -1;
    if (k !== NUMBER) return undefined;
    const n = plainInteger(line, start[f] as number, end[f] as number);
    return n >= 0 && n <= 65535 ? n : undefined;
  };

  return (line: Buffer, lineStart: number, lineEnd: number, out: RawEvent, sensors: SensorNames): number => {
    if (!fields.read(line, lineStart, lineEnd)) return BYTES_DECLINED;
    if (kind[F.eventid] !== STRING) return BYTES_DECLINED;
    // Fields compared or kept as their bytes must be plain: escapes in them go the general way.
    for (const f of PLAIN_FIELDS) if (escaped[f] !== 0) return BYTES_DECLINED;
    const e0 = start[F.eventid] as number;
    const e1 = end[F.eventid] as number;
    let what = 0;
    for (const [name, k] of KINDS_BY_LENGTH[e1 - e0] ?? []) {
      if (bytesEqual(line, e0, e1, name)) {
        what = k;
        break;
      }
    }
    if (what === FORWARD) return BYTES_DECLINED;
    const sessionId = kind[F.session] === STRING && end[F.session] !== start[F.session]
      ? sessionKeyOfBytes(line, start[F.session] as number, end[F.session] as number)
      : undefined;
    if (what === CLOSED || what === 0) {
      if (what === CLOSED && sessionId !== undefined) sessions.delete(sessionId);
      return BYTES_SKIP;
    }

    // Everything that could make the parser refuse the line is checked before any state changes.
    const telnet = kind[F.protocol] === STRING && bytesEqual(line, start[F.protocol] as number, end[F.protocol] as number, TELNET);
    let linePort: number | undefined = -1;
    if (kind[F.dst_port] !== ABSENT) {
      linePort = port(line, F.dst_port);
      if (linePort === undefined) return BYTES_DECLINED;
    }
    if (kind[F.timestamp] !== STRING) return BYTES_DECLINED;
    const ts = times.read(line, start[F.timestamp] as number, end[F.timestamp] as number);
    if (--untilClock === 0) {
      untilClock = CLOCK_LINES;
      now = Date.now();
    }
    if (!(ts === ts && inTimeRange(ts, now))) return BYTES_DECLINED;
    if (kind[F.src_ip] !== STRING) return BYTES_DECLINED;
    const src = parseIPv4Bytes(line, start[F.src_ip] as number, end[F.src_ip] as number);
    if (src < 0) return BYTES_DECLINED;
    let sensorBytes = line;
    let s0 = start[F.sensor] as number;
    let s1 = end[F.sensor] as number;
    const k = kind[F.sensor];
    if (k === STRING && s1 > s0) {
      if (s1 - s0 > MAX_SENSOR_NAME || line[s0] === 32 || line[s1 - 1] === 32) return BYTES_DECLINED;
    } else if (k === ABSENT || k === NULL || k === STRING) {
      if (!fallbackOk) return BYTES_DECLINED;
      sensorBytes = fallbackBytes;
      s0 = 0;
      s1 = fallbackBytes.length;
    } else return BYTES_DECLINED;
    out.userStart = -1;
    out.commandStart = -1;
    out.commandPrefix = null;
    let action = 0;
    if (what === LOGIN) {
      action = 1;
      const u = text(line, F.username, userScratch);
      if (u < 0) return BYTES_DECLINED;
      if (u > 0) {
        out.userBytes = bytes;
        out.userStart = from;
        out.userEnd = to;
      }
    } else if (what === COMMAND) {
      action = 2;
      if (text(line, F.input, commandScratch) <= 0) return BYTES_DECLINED;
      out.commandBytes = bytes;
      out.commandStart = from;
      out.commandEnd = to;
    } else if (what === DOWNLOAD || what === UPLOAD) {
      action = 2;
      // url ?? filename ?? outfile, each checked only if those before it are null.
      let t = text(line, F.url, commandScratch);
      if (t === 0) t = text(line, F.filename, commandScratch);
      if (t === 0) t = text(line, F.outfile, commandScratch);
      if (t < 0) return BYTES_DECLINED;
      if (t === 0) from = to = 0;
      // `${kind} ${target}`.trim(): a target with white space at its ends goes the general way.
      if (to > from && (isTrimmed(bytes[from] as number) || isTrimmed(bytes[to - 1] as number))) return BYTES_DECLINED;
      const upload = what === UPLOAD;
      out.commandPrefix = to > from ? (upload ? PREFIX.upload : PREFIX.download) : upload ? PREFIX.bareUpload : PREFIX.bareDownload;
      out.commandBytes = bytes;
      out.commandStart = from;
      out.commandEnd = to;
    }

    const sensor = sensorBytes === line ? sensors.localOfBytes(line, s0, s1) : sensors.local(fallbackSensor);
    let session = sessionId !== undefined ? sessions.get(sessionId) : NO_SESSION;
    if (what === CONNECT) {
      session = packSession(linePort < 0 ? null : linePort, telnet);
      if (sessionId !== undefined) sessions.set(sessionId, session);
    }
    const eventPort = kind[F.dst_port] !== ABSENT ? linePort : session === NO_SESSION ? -1 : (sessionPort(session) ?? -1);
    const viaTelnet = session !== NO_SESSION ? sessionTelnet(session) : telnet;
    const known = eventPort >= 0 ? serviceIndexOfPort(eventPort) : -1;
    out.line = line;
    out.ts = ts;
    out.src = src;
    out.srcStart = start[F.src_ip] as number;
    out.srcEnd = end[F.src_ip] as number;
    out.port = eventPort;
    out.service = known >= 0 ? known : viaTelnet ? TELNET_SERVICE : SSH;
    out.source = 0;
    out.sensor = sensor;
    out.sensorBytes = sensorBytes;
    out.sensorStart = s0;
    out.sensorEnd = s1;
    out.action = action;
    return BYTES_EVENT;
  };
}

// `opencanary`: OpenCanary's JSON log, one object a line. Fields used: logtype (the numeric codes of
// opencanary/logger.py), src_host, src_port (the event's connection, for its id), dst_port, utc_time
// ("YYYY-MM-DD HH:MM:SS.ffffff", UTC; local_time as a fallback), node_id (the sensor), logdata (USERNAME for
// login attempts, CMD/ARGS for redis, FILENAME for SMB).
import {
  FieldError, guarded, idCountsConnection, optionalPort, optionalText, parseJsonObject, requireAddress, requireSensor, requireTime, serviceFor,
  withId, type LineParser, type ParserOptions,
} from '../event.ts';
import type { Service } from '../../../common/vocabulary.ts';
import type { Action } from '../../classify/classification.ts';

interface LogType {
  action: Action;
  /** Service when the destination port does not name one (OpenCanary runs services on any port). */
  service: Service | null;
}

const LOGTYPES: Readonly<Record<number, LogType>> = {
  2000: { action: 1, service: null }, // FTP login attempt
  3000: { action: 0, service: 'web' }, // HTTP GET
  3001: { action: 1, service: 'web' }, // HTTP POST login attempt
  4000: { action: 0, service: 'ssh' }, // SSH new connection
  4001: { action: 0, service: 'ssh' }, // SSH remote version sent
  4002: { action: 1, service: 'ssh' }, // SSH login attempt
  5000: { action: 2, service: 'smb' }, // SMB file open
  5001: { action: 0, service: null }, // port scan: SYN
  5002: { action: 0, service: null }, // port scan: nmap OS
  5003: { action: 0, service: null }, // port scan: nmap NULL
  5004: { action: 0, service: null }, // port scan: nmap XMAS
  5005: { action: 0, service: null }, // port scan: nmap FIN
  6001: { action: 1, service: 'telnet' }, // telnet login attempt
  7001: { action: 1, service: 'proxy' }, // HTTP proxy login attempt
  8001: { action: 1, service: 'db' }, // MySQL login attempt
  9001: { action: 1, service: 'db' }, // MSSQL login, SQL auth
  9002: { action: 1, service: 'db' }, // MSSQL login, Windows auth
  10001: { action: 0, service: null }, // TFTP
  11001: { action: 0, service: null }, // NTP monlist
  12001: { action: 1, service: 'vnc' }, // VNC (password attempt)
  13001: { action: 0, service: null }, // SNMP command
  14001: { action: 1, service: 'rdp' }, // RDP
  15001: { action: 0, service: null }, // SIP request
  16001: { action: 0, service: null }, // git clone request
  17001: { action: 2, service: 'db' }, // redis command
  18001: { action: 0, service: null }, // TCP banner: connection made
  18002: { action: 0, service: null },
  18003: { action: 1, service: null }, // TCP banner: keep-alive secret received
  18004: { action: 0, service: null },
  18005: { action: 0, service: null },
};

function logdataText(logdata: unknown, key: string): string | null {
  if (!logdata || typeof logdata !== 'object') return null;
  const v = (logdata as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : null;
}

/** The source port as the event's connection, when it is one (OpenCanary writes -1 where there is none). */
function sourcePort(value: unknown): string | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 65535 ? String(value) : null;
}

export function opencanaryParser(options: ParserOptions = {}): LineParser {
  const line = (text: string) =>
    guarded(() => {
      const o = parseJsonObject(text);
      const code = typeof o.logtype === 'string' ? Number(o.logtype) : o.logtype;
      if (typeof code !== 'number' || !Number.isInteger(code)) throw new FieldError('logtype is missing');
      // 1000-1999 are the canary's own messages (boot, ping, errors); 99000+ are user-defined.
      if (code < 2000 || code >= 99000) return { skip: true };
      const kind = LOGTYPES[code];
      if (!kind) return { skip: true };
      const dstPort = optionalPort(o.dst_port, 'dst_port');
      const username = optionalText(logdataText(o.logdata, 'USERNAME'), 'logdata.USERNAME');
      let command: string | null = null;
      if (code === 17001) command = [logdataText(o.logdata, 'CMD'), logdataText(o.logdata, 'ARGS')].filter(Boolean).join(' ') || 'redis';
      if (code === 5000) command = `open ${logdataText(o.logdata, 'FILENAME') ?? ''}`.trim();
      const ts = requireTime(o.utc_time ?? o.local_time, 'utc_time');
      const connection = sourcePort(o.src_port);
      return {
        event: withId({
          ts,
          src: requireAddress(o.src_host, 'src_host'),
          dstPort,
          service: serviceFor(undefined, dstPort, 'service') ?? kind.service,
          proto: code >= 5001 && code <= 5005 ? 'tcp' : null,
          source: 'honeypot',
          sensor: requireSensor(o.node_id, options.sensor ?? 'opencanary', 'node_id'),
          action: kind.action,
          username,
          command: command === null ? null : optionalText(command, 'command'),
          // hydra's parallel tasks log attempts in the same millisecond from different source ports.
          connection: connection !== null && idCountsConnection(ts, options.legacyIdsUntil) ? connection : null,
        }),
      };
    });
  return { line };
}

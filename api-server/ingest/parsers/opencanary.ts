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

// Codes not listed are housekeeping: the canary's own messages (1000-1999), the SSH client's version (4001,
// which follows every 4000 as Cowrie's client.version follows its connect), LLMNR answers on the canary's
// own network (19001), user modules (99000+).
const LOGTYPES: Readonly<Record<number, LogType>> = {
  2000: { action: 1, service: null }, // FTP login attempt
  2001: { action: 0, service: null }, // FTP login begun (ftp.log_auth_attempt_initiated)
  3000: { action: 0, service: 'web' }, // HTTP GET
  3001: { action: 1, service: 'web' }, // HTTP POST login attempt
  3002: { action: 0, service: 'web' }, // HTTP request with an unimplemented method
  3003: { action: 0, service: 'web' }, // HTTP request redirected
  4000: { action: 0, service: 'ssh' }, // SSH new connection
  4002: { action: 1, service: 'ssh' }, // SSH login attempt
  5000: { action: 2, service: 'smb' }, // SMB file open
  5001: { action: 0, service: null }, // port scan: SYN
  5002: { action: 0, service: null }, // port scan: nmap OS
  5003: { action: 0, service: null }, // port scan: nmap NULL
  5004: { action: 0, service: null }, // port scan: nmap XMAS
  5005: { action: 0, service: null }, // port scan: nmap FIN
  6001: { action: 1, service: 'telnet' }, // telnet login attempt
  6002: { action: 0, service: 'telnet' }, // telnet connection made (telnet.log_tcp_connection)
  7001: { action: 1, service: 'proxy' }, // HTTP proxy login attempt
  8001: { action: 1, service: 'db' }, // MySQL login attempt
  9001: { action: 1, service: 'db' }, // MSSQL login, SQL auth
  9002: { action: 1, service: 'db' }, // MSSQL login, Windows auth
  9003: { action: 0, service: 'db' }, // MySQL connection made (mysql.log_connection_made)
  10001: { action: 0, service: null }, // TFTP
  11001: { action: 0, service: null }, // NTP monlist
  12001: { action: 1, service: 'vnc' }, // VNC (password attempt)
  13001: { action: 0, service: null }, // SNMP command
  14001: { action: 1, service: 'rdp' }, // RDP
  15001: { action: 0, service: null }, // SIP request
  16001: { action: 0, service: null }, // git clone request
  17001: { action: 2, service: 'db' }, // redis command (AUTH: a login attempt, see redisAuth)
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

/**
 * A redis AUTH is a login attempt, not a command: its arguments are `[username] password`, and the password
 * is not kept. Undefined for any other command.
 */
function redisAuth(cmd: string | null, args: string | null): { username: string | null } | undefined {
  if (cmd?.toUpperCase() !== 'AUTH') return undefined;
  const words = (args ?? '').split(' ').filter(Boolean);
  return { username: words.length >= 2 ? (words[0] as string) : null };
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
      const kind = LOGTYPES[code];
      if (!kind) return { skip: true };
      const dstPort = optionalPort(o.dst_port, 'dst_port');
      let action = kind.action;
      let username = logdataText(o.logdata, 'USERNAME');
      let command: string | null = null;
      if (code === 17001) {
        const cmd = logdataText(o.logdata, 'CMD');
        const args = logdataText(o.logdata, 'ARGS');
        const auth = redisAuth(cmd, args);
        if (auth) {
          username = auth.username;
          action = 1;
        } else command = [cmd, args].filter(Boolean).join(' ') || 'redis';
      }
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
          action,
          username: optionalText(username, 'logdata.USERNAME'),
          command: command === null ? null : optionalText(command, 'command'),
          // hydra's parallel tasks log attempts in the same millisecond from different source ports.
          connection: connection !== null && idCountsConnection(ts, options.legacyIdsUntil) ? connection : null,
        }),
      };
    });
  return { line };
}

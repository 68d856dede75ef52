// pino JSON logging with secrets removed at the source: credentials in headers and the `key` query
// parameter never reach a log line, whatever logs them.
import { pino, type Logger, type DestinationStream, type LevelWithSilent } from 'pino';
import { UserError } from './errors.ts';

export type { Logger };

const REDACTED = '[REDACTED]';

/** Query parameters that carry credentials (variant B's `key=`; `token`/`access_token` by habit of clients). */
const SECRET_QUERY_PARAMS = new Set(['key', 'api_key', 'apikey', 'token', 'access_token']);

/** Paths pino blanks wherever headers are logged, under any of the usual keys. */
const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'authorization',
  '["x-api-key"]',
  'apiKey',
  'password',
  'res.headers["set-cookie"]',
];

/** Replaces the value of every credential-bearing query parameter in a URL or path with [REDACTED]. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const redacted = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        /* keep the raw name */
      }
      return SECRET_QUERY_PARAMS.has(decoded.toLowerCase()) ? `${name}=${REDACTED}` : pair;
    })
    .join('&');
  return url.slice(0, q + 1) + redacted + (hash < 0 ? '' : url.slice(hash));
}

interface LoggableRequest {
  method: string;
  url: string;
  ip?: string;
  id?: string | number;
  headers?: Record<string, string | string[] | undefined>;
}

/** The request as logged: no headers at all except a safe few, the URL with credentials removed. */
function serializeRequest(req: LoggableRequest): Record<string, unknown> {
  return {
    id: req.id,
    method: req.method,
    url: redactUrl(req.url),
    remoteAddress: req.ip,
    userAgent: req.headers?.['user-agent'],
  };
}

interface LoggerOptions {
  level?: LevelWithSilent;
  name?: string;
  destination?: DestinationStream;
}

export function createLogger({ level = 'info', name = 'blockfeed', destination }: LoggerOptions = {}): Logger {
  const options = {
    level,
    name,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    serializers: { req: serializeRequest, err: pino.stdSerializers.err },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return destination ? pino(options, destination) : pino(options, pino.destination({ fd: 2, sync: false }));
}

/** pino's levels, as LOG_LEVEL takes them (the api-server's configuration too). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** LOG_LEVEL from the environment (default info); an unknown level is a UserError naming the allowed ones. */
export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): LevelWithSilent {
  const level = env.LOG_LEVEL?.trim() || 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new UserError(`invalid configuration: LOG_LEVEL="${level}": must be one of: ${LOG_LEVELS.join(', ')}`);
  return level as LevelWithSilent;
}

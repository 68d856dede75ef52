// Configuration: one schema, three sources. Defaults < optional YAML file (BLOCKFEED_CONFIG) < environment.
// An invalid value stops start-up with one line naming the variable and what it allows.
//
// The schema is plain JSON Schema (each setting carries its environment variable), checked by TypeBox's JSON
// Schema validator and typed by TypeBox's inference from it.
import { readFileSync } from 'node:fs';
import { Check, type XStatic } from 'typebox/schema';
import { describeAllowed, type JsonSchemaLike } from './schema-text.ts';
import { UserError } from '../common/errors.ts';
import { LOG_LEVELS } from '../common/logging.ts';
import { parse as parseYaml } from 'yaml';

/**
 * Every setting, with the environment variable that sets it. Later capabilities add their settings here so
 * there is one list to document and validate.
 */
export const ConfigSchema = {
  type: 'object',
  required: [
    'port', 'host', 'dataDir', 'logLevel', 'shutdownGraceSeconds', 'trustedProxies', 'anonymousPerMinute', 'tierQuotas',
    'cacheMaxBytes', 'cacheLifetimes', 'keyCacheSeconds', 'longPollsMax', 'longPollsPerKey',
  ],
  properties: {
    port: { type: 'integer', minimum: 0, maximum: 65535, default: 8080, env: 'PORT', description: 'HTTP port of `serve`' },
    host: { type: 'string', minLength: 1, default: '0.0.0.0', env: 'HOST', description: 'HTTP listen address' },
    databaseUrl: {
      type: 'string',
      pattern: '^postgres(ql)?://',
      env: 'DATABASE_URL',
      description: 'PostgreSQL URL; unset = embedded PostgreSQL in the data dir',
    },
    databaseReadUrl: {
      type: 'string',
      pattern: '^postgres(ql)?://',
      env: 'DATABASE_READ_URL',
      description: "PostgreSQL URL of read-only standbys for lists, exports and statistics (user, password and database default to DATABASE_URL's); unset = the primary",
    },
    dataDir: {
      type: 'string',
      minLength: 1,
      default: './.blockfeed',
      env: 'BLOCKFEED_DATA_DIR',
      description: 'directory of the embedded PostgreSQL and local state',
    },
    logLevel: {
      enum: LOG_LEVELS,
      default: 'info',
      env: 'LOG_LEVEL',
      description: 'pino log level',
    },
    ingestToken: {
      type: 'string',
      minLength: 16,
      env: 'BLOCKFEED_INGEST_TOKEN',
      description: 'bearer token sensors use for POST /internal/v1/events; unset = the route is off',
    },
    shutdownGraceSeconds: {
      type: 'integer',
      minimum: 0,
      maximum: 600,
      default: 10,
      env: 'BLOCKFEED_SHUTDOWN_GRACE_SECONDS',
      description: 'how long SIGTERM waits for in-flight requests',
    },
    // --- blocklist HTTP API ---
    trustedProxies: {
      type: 'array',
      items: { type: 'string', pattern: '^[0-9a-fA-F:.]+(/[0-9]{1,3})?$' },
      default: [],
      env: 'TRUSTED_PROXIES',
      description: 'comma-separated addresses/CIDRs of proxies whose X-Forwarded-For is believed',
    },
    anonymousPerMinute: {
      type: 'integer',
      minimum: 1,
      maximum: 100000,
      default: 5,
      env: 'BLOCKFEED_ANONYMOUS_PER_MINUTE',
      description: 'requests per minute per client address without a credential',
    },
    tierQuotas: {
      type: 'string',
      pattern: '^[a-z][a-z0-9_-]*=(none|unlimited|[0-9]+)(,[a-z][a-z0-9_-]*=(none|unlimited|[0-9]+))*$',
      default: 'member=none,basic=100,pro=10000,enterprise=unlimited',
      env: 'BLOCKFEED_TIER_QUOTAS',
      description: 'tier=calls per UTC day (none = website download only, no API; unlimited), comma-separated',
    },
    cacheMaxBytes: {
      type: 'integer',
      minimum: 0,
      default: 128 * 1024 * 1024,
      env: 'BLOCKFEED_CACHE_MAX_BYTES',
      description: 'response cache size in bytes (0 = no cache)',
    },
    cacheLifetimes: {
      type: 'string',
      pattern: '^((variantA|upTo24h|upTo72h|over72h|recent)=[0-9]+(,(variantA|upTo24h|upTo72h|over72h|recent)=[0-9]+)*)?$',
      default: '',
      env: 'BLOCKFEED_CACHE_LIFETIMES',
      description: "response lifetimes in seconds over the built-in ones: variantA (the token API's answers) 300, upTo24h 1800, upTo72h 3600, over72h 7200 (the key API's, by window), recent 60",
    },
    keyCacheSeconds: {
      type: 'integer',
      minimum: 0,
      maximum: 300,
      default: 10,
      env: 'BLOCKFEED_KEY_CACHE_SECONDS',
      description: 'how long a verified API key is remembered in memory (a revocation reaches every replica within this time)',
    },
    longPollsMax: {
      type: 'integer',
      minimum: 1,
      maximum: 1_000_000,
      default: 10_000,
      env: 'BLOCKFEED_LONG_POLLS',
      description: 'list requests with wait= one server holds at once at most; beyond, 503 with Retry-After',
    },
    longPollsPerKey: {
      type: 'integer',
      minimum: 1,
      maximum: 100_000,
      default: 64,
      env: 'BLOCKFEED_LONG_POLLS_PER_KEY',
      description: 'list requests with wait= one API key holds at once on one server at most; beyond, 429 with Retry-After',
    },
    // --- the member centre website ---
    siteUrl: {
      type: 'string',
      pattern: '^https?://[^/?#\\s]+(/[^?#\\s]*)?$',
      env: 'BLOCKFEED_SITE_URL',
      description: 'public base URL of the website and API (links in emails, feed URLs); unset = taken from each request',
    },
    smtpUrl: {
      type: 'string',
      pattern: '^smtps?://',
      env: 'BLOCKFEED_SMTP_URL',
      description: 'SMTP server for email verification (smtp[s]://user:password@host:port); unset = the operator approves new accounts',
    },
    mailFrom: {
      type: 'string',
      minLength: 3,
      env: 'BLOCKFEED_MAIL_FROM',
      description: 'sender of the verification emails; unset = noreply@ the host of BLOCKFEED_SITE_URL',
    },
    sessionSecret: {
      type: 'string',
      minLength: 32,
      env: 'BLOCKFEED_SESSION_SECRET',
      description: 'signs the website session cookies (32+ characters); unset = one generated once and kept in the database',
    },
  },
} as const;
export type Config = XStatic<typeof ConfigSchema>;

interface SettingSchema extends JsonSchemaLike {
  env: string;
  default?: unknown;
}

function settings(): [key: string, schema: SettingSchema][] {
  return Object.entries(ConfigSchema.properties as Record<string, SettingSchema>);
}

/** The documented list of environment variables, for `--help` and the README. */
export function describeSettings(): { env: string; description: string; default?: unknown }[] {
  return settings().map(([, s]) => ({ env: s.env, description: s.description ?? '', default: s.default }));
}

function coerce(raw: unknown, schema: SettingSchema): unknown {
  if (typeof raw !== 'string') return raw;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const text = raw.trim();
  if (type === 'integer' || type === 'number') return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : raw;
  if (type === 'boolean') return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : raw;
  if (type === 'array') return text === '' ? [] : text.split(',').map((s) => s.trim());
  return raw;
}

export interface ConfigSources {
  env?: NodeJS.ProcessEnv;
  /** Extra values from CLI flags, highest precedence. */
  overrides?: Partial<Config>;
}

/** Reads, coerces and validates the configuration; throws UserError naming the offending setting. */
export function loadConfig({ env = process.env, overrides = {} }: ConfigSources = {}): Config {
  const merged: Record<string, unknown> = {};
  const origin: Record<string, string> = {};
  const file = env.BLOCKFEED_CONFIG;
  if (file) {
    let doc: unknown;
    try {
      doc = parseYaml(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new UserError(`BLOCKFEED_CONFIG=${file}: cannot read YAML (${(err as Error).message.split('\n')[0]})`);
    }
    if (doc !== null && doc !== undefined && (typeof doc !== 'object' || Array.isArray(doc))) {
      throw new UserError(`BLOCKFEED_CONFIG=${file}: expected a mapping of settings`);
    }
    const known = new Map(settings());
    for (const [key, value] of Object.entries((doc ?? {}) as Record<string, unknown>)) {
      if (!known.has(key)) {
        throw new UserError(`${file}: unknown setting "${key}" (known: ${[...known.keys()].join(', ')})`);
      }
      merged[key] = value;
      origin[key] = `${file}: ${key}`;
    }
  }
  for (const [key, schema] of settings()) {
    const raw = env[schema.env];
    if (raw !== undefined && raw !== '') {
      merged[key] = raw;
      origin[key] = schema.env;
    }
  }
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) {
      merged[key] = value;
      origin[key] ??= key;
    }
  }
  for (const [key, schema] of settings()) {
    if (key in merged) {
      const value = coerce(merged[key], schema);
      if (!Check(schema, value)) {
        const shown = typeof merged[key] === 'string' ? JSON.stringify(merged[key]) : String(merged[key]);
        throw new UserError(`invalid configuration: ${origin[key] ?? schema.env}=${shown}: must be ${describeAllowed(schema)}`);
      }
      merged[key] = value;
    }
  }
  for (const [key, schema] of settings()) {
    // Defaults are copied, so that no caller can change another's (the list one, say).
    if (!(key in merged) && schema.default !== undefined) merged[key] = structuredClone(schema.default);
  }
  return merged as Config;
}

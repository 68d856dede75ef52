// The store's connections: an external PostgreSQL (DATABASE_URL) or the embedded one in the data dir, and
// optionally read-only standbys (DATABASE_READ_URL) for the reads that may lag behind the primary by a moment.
import pg from 'pg';
import type { Config } from '../config.ts';
import { UserError } from '../../common/errors.ts';
import type { Logger } from '../../common/logging.ts';
import { startEmbedded, type EmbeddedServer } from './embedded.ts';
import { isStoreUnavailable, storeUnavailableReason } from './unavailable.ts';

/**
 * The two ways to the store. `pool` is the primary: every write, and every read that must see the latest
 * commit (keys, rate limits and quotas, sessions, ingest). `readPool` is for reads that may lag behind it by
 * the replication delay (lists, exports, statistics, the website's charts): the standbys of DATABASE_READ_URL,
 * or the primary's pool itself when there are none.
 */
export interface StorePools {
  readonly pool: pg.Pool;
  readonly readPool: pg.Pool;
}

export interface Database extends StorePools {
  /** The URL the pool connects to (contains a password: never log it). */
  readonly url: string;
  /** The URL the read pool connects to: the standbys', or `url`. */
  readonly readUrl: string;
  readonly embedded?: EmbeddedServer;
  /** Closes the pools, then stops the embedded server unless other processes still use it. */
  close(): Promise<void>;
}

export interface OpenOptions {
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'databaseReadUrl'>>;
  log: Logger;
  /** Name shown in pg_stat_activity (the read pool's sessions add `-read`). */
  applicationName?: string;
  poolSize?: number;
  /** Settings for a newly started embedded server (tests turn fsync off). */
  embeddedSettings?: Record<string, string>;
  /** Start the embedded server again whenever it dies, until close() (`serve`). */
  superviseEmbedded?: boolean;
}

/** Whether a store has standbys to read from (a read pool of its own). */
export function hasStandbys(pools: StorePools): boolean {
  return pools.readPool !== pools.pool;
}

/**
 * Runs a read that may lag on the read pool; when the standbys cannot be reached (all gone, or none left
 * after a failover promoted the last one), on the primary. Any other error is the read's own.
 */
export async function readFromStandbys<T>(pools: StorePools, read: (pool: pg.Pool) => Promise<T>): Promise<T> {
  if (!hasStandbys(pools)) return read(pools.pool);
  try {
    return await read(pools.readPool);
  } catch (err) {
    if (!isStoreUnavailable(err)) throw err;
    return read(pools.pool);
  }
}

/**
 * The standbys' URL with what it leaves out taken from the primary's: a URL without a user (and password)
 * uses DATABASE_URL's, one without a database name DATABASE_URL's database. So a deployment names only the
 * standbys' host and TLS settings, and the credentials stay in one place, exactly as the primary's URL holds
 * them (already encoded). Pure.
 */
export function completeReadUrl(readUrl: string, primaryUrl: string): string {
  const read = new URL(readUrl);
  const primary = new URL(primaryUrl);
  if (!read.username) {
    read.username = primary.username;
    read.password = primary.password;
  }
  if (read.pathname === '' || read.pathname === '/') read.pathname = primary.pathname;
  return read.toString();
}

/** Replaces the database name in a PostgreSQL URL. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

/**
 * How long getting a connection may take (a new one, or a free one of a full pool); then the caller's query
 * fails as the store being unavailable (503). Without a bound, a connection whose packets go nowhere waits for
 * the kernel to give up, about two minutes: in a failover, a Service can still send a new connection to the
 * former primary's address after its pod is gone, and the ingest windows, which take turns, all wait behind it.
 */
const CONNECT_TIMEOUT_MS = 5_000;

function makePool(url: string, applicationName: string, poolSize: number, log: Logger): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, application_name: applicationName, idleTimeoutMillis: 30_000, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  // A client losing its connection (the server restarted or died) must not crash the process. An idle one is
  // reported by the pool; one checked out between two queries (an ingest window, a list's snapshot) emits the
  // error on itself, unheard unless listened for here: its holder learns of it from its next query, and the
  // pool drops it on release. New connections are opened as they are asked for, so the pool works again as
  // soon as the server does.
  pool.on('error', (err) => log.warn({ err: { message: err.message }, pool: applicationName }, 'idle database connection lost'));
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

export async function openDatabase({ config, log, applicationName = 'blockfeed', poolSize = 10, embeddedSettings, superviseEmbedded }: OpenOptions): Promise<Database> {
  let embedded: EmbeddedServer | undefined;
  let url = config.databaseUrl;
  if (!url) {
    embedded = await startEmbedded({ dataDir: config.dataDir, log, settings: embeddedSettings, supervise: superviseEmbedded });
    url = withDatabase(embedded.url, 'blockfeed');
    await ensureDatabaseExists(embedded.url, 'blockfeed');
  }
  const pool = makePool(url, applicationName, poolSize, log);
  const readUrl = config.databaseReadUrl ? completeReadUrl(config.databaseReadUrl, url) : url;
  const readPool = config.databaseReadUrl ? makePool(readUrl, `${applicationName}-read`, poolSize, log) : pool;
  let closing: Promise<void> | undefined;
  return {
    pool,
    readPool,
    url,
    readUrl,
    embedded,
    close: () =>
      (closing ??= (async () => {
        await Promise.all([pool.end(), readPool === pool ? undefined : readPool.end()]);
        await embedded?.release();
      })()),
  };
}

/** host:port/database as user — a database URL without its password, for messages. */
export function describeDatabaseUrl(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '5432'}${u.pathname} as ${decodeURIComponent(u.username) || 'the default user'}`;
}

/**
 * Connects once. For commands: a database that cannot be used fails them with one line naming it (without its
 * password) and why, instead of a stack trace from their first query.
 */
async function checkConnection(db: Database): Promise<void> {
  try {
    await db.pool.query('select 1');
  } catch (err) {
    const reason = storeUnavailableReason(err);
    if (reason === undefined) throw err;
    const code = (err as { code?: unknown }).code;
    throw new UserError(
      `cannot use the database at ${describeDatabaseUrl(db.url)}: ${reason}${typeof code === 'string' ? ` (${code})` : ''}; set DATABASE_URL, or leave it unset for the embedded database`,
      1,
      { cause: err },
    );
  }
}

/** openDatabase, connected once (checkConnection): for commands, which fail at once and clearly without it. */
export async function openCheckedDatabase(options: OpenOptions): Promise<Database> {
  const db = await openDatabase(options);
  try {
    await checkConnection(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

/** Creates `name` on the server behind `maintenanceUrl` unless it exists (safe under concurrent callers). */
export async function ensureDatabaseExists(maintenanceUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: maintenanceUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) {
      await client.query(`create database ${client.escapeIdentifier(name)}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04' && err.code !== '23505') throw err; // created meanwhile by another process
      });
    }
  } finally {
    await client.end();
  }
}

// A primary and a hot standby in streaming replication on loopback, from the embedded PostgreSQL binaries
// (which have no pg_basebackup): the primary's cluster, migrated and stopped cleanly, is copied (a cold base
// backup, consistent because nothing runs on it), and the copy starts as a standby that streams from the
// primary through a physical replication slot. The test can stop and start the primary, and pause the
// standby's replay to make it lag.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync, appendFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Logger } from '../../common/logging.ts';
import { startEmbedded, type EmbeddedServer } from '../../api-server/store/embedded.ts';
import { ensureDatabaseExists, withDatabase } from '../../api-server/store/database.ts';
import { migrate } from '../../api-server/store/migrate.ts';
import { tempDataDir } from './cli.ts';
import { THROWAWAY_SETTINGS } from './postgres-global.ts';

const run = promisify(execFile);
const SLOT = 'blockfeed_standby';

export interface ReplicatedStore {
  /** The `blockfeed` database on the primary and on the standby. */
  readonly primaryUrl: string;
  readonly standbyUrl: string;
  /** A pool on the primary (while it runs) and one on the standby, for the test's own reads and writes. */
  readonly primary: pg.Pool;
  readonly standby: pg.Pool;
  stopPrimary(): Promise<void>;
  startPrimary(): Promise<void>;
  /** pg_wal_replay_pause(): the standby receives WAL and applies none of it. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Resolves once the standby has applied everything the primary has written so far. */
  caughtUp(): Promise<void>;
  close(): Promise<void>;
}

export async function startReplicatedStore(log: Logger): Promise<ReplicatedStore> {
  const primaryDir = await tempDataDir();
  let primaryServer: EmbeddedServer | undefined = await startEmbedded({ dataDir: primaryDir, log, settings: THROWAWAY_SETTINGS });
  const info = JSON.parse(readFileSync(path.join(primaryDir, 'embedded.json'), 'utf8')) as { port: number; user: string; password: string };
  await ensureDatabaseExists(primaryServer.url, 'blockfeed');
  const primaryUrl = withDatabase(primaryServer.url, 'blockfeed');
  const setup = new pg.Pool({ connectionString: primaryUrl, max: 1 });
  // end() resolves before the socket has closed, and the primary is stopped right after: its "terminating
  // connection" reaches the pool's closing client, and a pool without a listener throws it uncaught.
  setup.on('error', () => undefined);
  try {
    await migrate(setup, log);
    await setup.query('select pg_create_physical_replication_slot($1)', [SLOT]);
  } finally {
    await setup.end();
  }
  await primaryServer.stop();

  // The copy, as the server's user owns it (cp -a keeps owners and modes), set to follow the primary.
  const standbyDir = await tempDataDir();
  await run('cp', ['-a', primaryDir, standbyDir]);
  rmSync(path.join(standbyDir, 'server-users'), { recursive: true, force: true });
  const cluster = path.join(standbyDir, 'pg');
  writeFileSync(path.join(cluster, 'standby.signal'), '');
  appendFileSync(
    path.join(cluster, 'postgresql.auto.conf'),
    `primary_conninfo = 'host=127.0.0.1 port=${info.port} user=${info.user} password=${info.password} application_name=standby'\nprimary_slot_name = '${SLOT}'\n`,
  );

  primaryServer = await startEmbedded({ dataDir: primaryDir, log, settings: THROWAWAY_SETTINGS });
  // On another port: the copy's credentials file names the primary's, which is taken, and is rewritten.
  const standbyServer = await startEmbedded({ dataDir: standbyDir, log, settings: THROWAWAY_SETTINGS });
  const standbyUrl = withDatabase(standbyServer.url, 'blockfeed');
  const primary = new pg.Pool({ connectionString: primaryUrl, max: 2 });
  const standby = new pg.Pool({ connectionString: standbyUrl, max: 2 });
  // The primary is stopped under these pools: a connection lost while idle or checked out must not be an
  // uncaught error. As the api-server's pools do.
  for (const pool of [primary, standby]) {
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
  }

  const store: ReplicatedStore = {
    primaryUrl,
    standbyUrl,
    primary,
    standby,
    stopPrimary: async () => {
      await primaryServer?.stop();
      primaryServer = undefined;
    },
    startPrimary: async () => {
      primaryServer = await startEmbedded({ dataDir: primaryDir, log, settings: THROWAWAY_SETTINGS });
      if (primaryServer.port !== info.port) throw new Error(`the primary came back on port ${primaryServer.port}, not ${info.port}`);
    },
    pauseReplay: async () => {
      await standby.query('select pg_wal_replay_pause()');
    },
    resumeReplay: async () => {
      await standby.query('select pg_wal_replay_resume()');
    },
    caughtUp: async () => {
      const { rows } = await primary.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn');
      const target = rows[0]?.lsn ?? '0/0';
      for (;;) {
        const { rows: replayed } = await standby.query<{ done: boolean }>('select pg_last_wal_replay_lsn() >= $1::pg_lsn as done', [target]);
        if (replayed[0]?.done) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: async () => {
      await Promise.all([primary.end(), standby.end()]);
      await standbyServer.stop();
      await primaryServer?.stop();
    },
  };
  await store.caughtUp();
  return store;
}

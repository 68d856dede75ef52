// Versioned migrations: ordered SQL files `NNNN_name.sql` beside this module, each applied in its own
// transaction and recorded with a checksum. Concurrent migrators (several replicas starting at once)
// serialise on an advisory lock; an edited, already-applied file is refused rather than silently skipped.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Logger } from '../../common/logging.ts';
import { UserError } from '../../common/errors.ts';
import { openCheckedDatabase, type Database, type OpenOptions } from './database.ts';
import { ATTACK_DATA_LOCK } from './locks.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

/** Parses the file names of a migrations folder into an ordered list; rejects gaps and duplicates. */
export function orderMigrations(files: { file: string; sql: string }[]): Migration[] {
  const migrations = files
    .filter(({ file }) => file.endsWith('.sql'))
    .map(({ file, sql }) => {
      const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
      if (!m) throw new Error(`migration file name ${file} must look like 0001_name.sql`);
      return { version: Number(m[1]), name: m[2] ?? '', sql, checksum: createHash('sha256').update(sql).digest('hex') };
    })
    .sort((a, b) => a.version - b.version);
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migrations must be numbered 0001, 0002, ... without gaps; found ${m.version} at position ${i + 1}`);
  });
  return migrations;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = await readdir(dir);
  return orderMigrations(await Promise.all(files.map(async (file) => ({ file, sql: await readFile(path.join(dir, file), 'utf8') }))));
}

interface MigrateResult {
  applied: Migration[];
  current: number;
}

export async function migrate(pool: pg.Pool, log: Logger, migrations?: Migration[]): Promise<MigrateResult> {
  const list = migrations ?? (await loadMigrations());
  const client = await pool.connect();
  try {
    // The key all blockfeed migrators agree on; writers of attack data take it too (locks.ts).
    await client.query('select pg_advisory_lock($1)', [ATTACK_DATA_LOCK]);
    await client.query(`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`);
    const { rows } = await client.query<{ version: number; name: string; checksum: string }>('select version, name, checksum from schema_migrations order by version');
    const done = new Map(rows.map((r) => [r.version, r]));
    for (const m of list) {
      const prior = done.get(m.version);
      if (prior && prior.checksum !== m.checksum) {
        throw new UserError(`migration ${m.version}_${m.name} was changed after it was applied (checksum differs); add a new migration instead`);
      }
    }
    const newest = Math.max(0, ...done.keys());
    if (newest > list.length) {
      throw new UserError(`the database is at migration ${newest}, newer than this blockfeed (${list.length}); upgrade blockfeed`);
    }
    const applied: Migration[] = [];
    for (const m of list) {
      if (done.has(m.version)) continue;
      const started = Date.now();
      await client.query('begin');
      try {
        await client.query(m.sql);
        await client.query('insert into schema_migrations (version, name, checksum) values ($1, $2, $3)', [m.version, m.name, m.checksum]);
        await client.query('commit');
      } catch (err) {
        await client.query('rollback');
        throw new UserError(`migration ${m.version}_${m.name} failed: ${(err as Error).message}`, 1, { cause: err });
      }
      log.info({ version: m.version, migration: m.name, ms: Date.now() - started }, 'migration applied');
      applied.push(m);
    }
    return { applied, current: list.length };
  } finally {
    await client.query('select pg_advisory_unlock($1)', [ATTACK_DATA_LOCK]).catch(() => undefined);
    client.release();
  }
}

/** The store for a command: opened, connected once (a clear error if it cannot be used), and migrated. */
export async function openMigratedDatabase(options: OpenOptions): Promise<Database> {
  const db = await openCheckedDatabase(options);
  try {
    await migrate(db.pool, options.log);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

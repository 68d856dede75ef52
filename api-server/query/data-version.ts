// The version of the list data (list_data_version, migration 0007): what a list's ETag carries, and what
// tells whether a standby is behind a list someone holds. Pure, but for the one query that reads it.
import type pg from 'pg';

/** Reads the version as `<epoch>:<version>` (a snapshot's first statement reads it so: query/stream.ts). */
export const DATA_VERSION_SQL = `select epoch::text || ':' || version::text as v from list_data_version`;

/** A data version, comparable with another of the same database. */
export interface DataVersion {
  /** The first 8 hex digits of the database's epoch (a random UUID made with the table): tells databases apart. */
  epoch: string;
  version: bigint;
}

/** `<epoch uuid>:<version>` → its comparable form; undefined for anything else. */
export function parseDataVersion(text: string): DataVersion | undefined {
  const m = /^([0-9a-f]{8})-?[0-9a-f-]*:(\d+)$/i.exec(text);
  return m?.[1] && m[2] ? { epoch: m[1].toLowerCase(), version: BigInt(m[2]) } : undefined;
}

/**
 * Is `a` older than `b`: the same database, a lower version? Versions of two databases say nothing about each
 * other: false.
 */
export function isOlder(a: DataVersion, b: DataVersion): boolean {
  return a.epoch === b.epoch && a.version < b.version;
}

/** The newer of two versions of one database; `a` when they are of two. */
export function newer(a: DataVersion, b: DataVersion): DataVersion {
  return isOlder(a, b) ? b : a;
}

/** The data version `pool`'s server has committed now (one single-row read). */
export async function readDataVersion(pool: pg.Pool): Promise<DataVersion> {
  const { rows } = await pool.query<{ v: string }>(DATA_VERSION_SQL);
  const parsed = parseDataVersion(rows[0]?.v ?? '');
  if (!parsed) throw new Error(`list_data_version holds no version (${rows[0]?.v ?? 'no row'})`);
  return parsed;
}

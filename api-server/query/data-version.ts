// The version of the data lists are made of (list_data_version, migrations 0007 and 0009): bumped by
// PostgreSQL at the end of every statement that writes addresses or ip_hourly, and announced on a channel when
// the writer commits. A list's ETag carries it (http/cache.ts listEtag), which tells whether a standby is
// behind a list someone holds (list-source.ts), and a long poll waits for it to move (http/long-poll.ts).
// Pure, but for the one query that reads it.
import type pg from 'pg';

/** Where every change of the data version is announced, with `<epoch>:<version>` as payload (migration 0009). */
export const DATA_VERSION_CHANNEL = 'blockfeed_list_data_version';

/** The query every reader of the version runs (inside a list's snapshot, or alone): `<epoch>:<version>`, and when. */
export const DATA_VERSION_SQL = `select epoch::text || ':' || version::text as v, changed_at from list_data_version`;

/** A data version, comparable with another of the same database. */
export interface DataVersion {
  /** The first 8 hex digits of the database's epoch (a random UUID made with the table): tells databases apart. */
  readonly epoch: string;
  readonly version: bigint;
}

/** A version as read from the store: also its text and when the data last changed (the end of the statement that bumped it). */
export interface DataVersionRow extends DataVersion {
  /** `<epoch>:<version>`: equal for two reads only when they see the same addresses and rollups. */
  readonly text: string;
  readonly changedAt: Date;
}

/** `<epoch uuid>:<version>` (a notice's payload, a row's text) → its comparable form; undefined for anything else. Pure. */
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

/**
 * Has the data moved from `earlier` to `later`: a higher version, or one of another database (the store was
 * replaced, so whatever was read before is not its data)? What wakes a long poll. Pure.
 */
export function isNewer(later: DataVersion, earlier: DataVersion): boolean {
  return later.epoch !== earlier.epoch || later.version > earlier.version;
}

export function dataVersionOf(row: { v: string; changed_at: Date } | undefined): DataVersionRow {
  const parsed = row && parseDataVersion(row.v);
  if (!row || !parsed) throw new Error(`list_data_version holds no version (${row?.v ?? 'no row'})`);
  return { ...parsed, text: row.v, changedAt: row.changed_at };
}

/** The data version the server `db` is on has committed now (one single-row read). */
export async function readDataVersion(db: pg.Pool | pg.PoolClient): Promise<DataVersionRow> {
  const { rows } = await db.query<{ v: string; changed_at: Date }>(DATA_VERSION_SQL);
  return dataVersionOf(rows[0]);
}

/** The same version of the same database. Pure. */
export function sameVersion(a: DataVersion, b: DataVersion): boolean {
  return a.epoch === b.epoch && a.version === b.version;
}

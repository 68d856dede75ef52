// The credential store: subscription keys in PostgreSQL, only their hashes kept.
import type pg from 'pg';
import { hasStandbys, type StorePools } from '../store/database.ts';
import { isStoreUnavailable } from '../store/unavailable.ts';
import { generateKey, keyMatches, keyPrefix, revocationTarget } from './secret.ts';

export interface ApiKey {
  id: number;
  prefix: string;
  name: string;
  tier: string;
  createdAt: Date;
  revokedAt: Date | null;
  /** The member who created it on the website; null for keys made with `blockfeed keys create`. */
  memberId: number | null;
  lastUsedAt: Date | null;
}

interface KeyRow {
  id: number;
  prefix: string;
  hash: Buffer;
  name: string;
  tier: string;
  created_at: Date;
  revoked_at: Date | null;
  member_id: number | null;
  last_used_at: Date | null;
}

function toKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    prefix: row.prefix,
    name: row.name,
    tier: row.tier,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    memberId: row.member_id,
    lastUsedAt: row.last_used_at,
  };
}

/** Creates a key (for a member of the website, or for nobody in particular); the returned secret is shown once and never stored. */
export async function createKey(pool: pg.Pool, tier: string, name: string, memberId: number | null = null): Promise<{ key: string; record: ApiKey }> {
  for (;;) {
    const made = generateKey();
    const { rows } = await pool.query<KeyRow>(
      `insert into api_keys (prefix, hash, name, tier, member_id) values ($1, $2, $3, $4, $5)
       on conflict (prefix) do nothing returning *`,
      [made.prefix, made.hash, name, tier, memberId],
    );
    if (rows[0]) return { key: made.key, record: toKey(rows[0]) };
  }
}

/** Every key, or one member's (active first, newest first). */
export async function listKeys(pool: pg.Pool, memberId?: number): Promise<ApiKey[]> {
  const { rows } =
    memberId === undefined
      ? await pool.query<KeyRow>('select * from api_keys order by id')
      : await pool.query<KeyRow>('select * from api_keys where member_id = $1 order by revoked_at is not null, id desc', [memberId]);
  return rows.map(toKey);
}

/** Servers LISTEN on this channel and forget remembered keys when a revocation is announced. */
export const REVOCATION_CHANNEL = 'blockfeed_key_revoked';

/**
 * Revokes by id or prefix (only among `memberId`'s keys when given) and announces it to running servers;
 * returns the key, or undefined when none matches.
 */
export async function revokeKey(pool: pg.Pool, idOrPrefix: string, memberId?: number): Promise<ApiKey | undefined> {
  const target = revocationTarget(idOrPrefix);
  const owner = memberId === undefined ? '' : ' and member_id = $2';
  const { rows } = await pool.query<KeyRow>(
    `with revoked as (
       update api_keys set revoked_at = coalesce(revoked_at, now())
       where ${'id' in target ? 'id = $1' : 'prefix = $1'}${owner} returning *)
     select revoked.*, pg_notify('${REVOCATION_CHANNEL}', revoked.prefix) from revoked`,
    ['id' in target ? target.id : target.prefix, ...(memberId === undefined ? [] : [memberId])],
  );
  return rows[0] ? toKey(rows[0]) : undefined;
}

/** Revokes every active key of a member (a disabled account) and announces it; returns how many. */
export async function revokeMemberKeys(pool: pg.Pool, memberId: number): Promise<number> {
  const { rowCount } = await pool.query(
    `with revoked as (update api_keys set revoked_at = now() where member_id = $1 and revoked_at is null returning prefix)
     select pg_notify('${REVOCATION_CHANNEL}', prefix) from revoked`,
    [memberId],
  );
  return rowCount ?? 0;
}

/**
 * Moves a member's keys to their new tier. Servers pick the change up when they next verify a key, within
 * BLOCKFEED_KEY_CACHE_SECONDS (a tier change is not a revocation, so nothing is announced). `db` may be a
 * client in a transaction (the member's own tier moves with them: members/store.ts).
 */
export async function setMemberKeysTier(db: pg.Pool | pg.PoolClient, memberId: number, tier: string): Promise<void> {
  await db.query('update api_keys set tier = $2 where member_id = $1', [memberId, tier]);
}

/** The active key a presented secret belongs to, or undefined (unknown, malformed or revoked). */
export async function verifyKey(pool: pg.Pool, presented: string): Promise<ApiKey | undefined> {
  const prefix = keyPrefix(presented);
  if (!prefix) return undefined;
  const { rows } = await pool.query<KeyRow>('select * from api_keys where prefix = $1 and revoked_at is null', [prefix]);
  const row = rows[0];
  if (!row || !keyMatches(presented, row.hash)) return undefined;
  // Only here, on a verification against the store: remembered keys cost no write (the member centre shows it).
  await pool.query('update api_keys set last_used_at = now() where id = $1', [row.id]);
  return toKey(row);
}

/**
 * verifyKey on the primary; while the primary cannot be reached, on a standby, so that unmetered callers keep
 * their lists through a failover. A key is revoked by a write on the primary, so none can be revoked while it
 * is away; one revoked before is on a standby that has replayed all it received (with synchronous
 * replication, every acknowledged commit is). So a standby's word is taken only when it has nothing left to
 * replay, and only for a key it finds active: an unknown or revoked key, or a standby behind, is the primary's
 * unavailability again (503), never a 401 the primary might not give. The use is not recorded (a write).
 */
export async function verifyKeyWithStandbys(pools: StorePools, presented: string): Promise<ApiKey | undefined> {
  try {
    return await verifyKey(pools.pool, presented);
  } catch (err) {
    if (!hasStandbys(pools) || !isStoreUnavailable(err)) throw err;
    const key = await activeKeyOnStandby(pools.readPool, presented);
    if (!key) throw err;
    return key;
  }
}

/** The active key a secret belongs to, read on a standby that has replayed all it received; else undefined. */
async function activeKeyOnStandby(pool: pg.Pool, presented: string): Promise<ApiKey | undefined> {
  const prefix = keyPrefix(presented);
  if (!prefix) return undefined;
  // One statement, so the position and the key are of one server (a Service spreads connections over several).
  // On a server that is no standby (promoted in a failover) both positions are null: it is up to date.
  const { rows } = await pool.query<KeyRow & { caught_up: boolean }>(
    `select k.*, not pg_is_in_recovery() or coalesce(pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(), false) as caught_up
     from api_keys k where k.prefix = $1 and k.revoked_at is null`,
    [prefix],
  );
  const row = rows[0];
  return row?.caught_up && keyMatches(presented, row.hash) ? toKey(row) : undefined;
}

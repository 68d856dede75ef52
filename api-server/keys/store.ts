// The credential store: subscription keys in PostgreSQL, only their hashes kept.
import type pg from 'pg';
import { generateKey, keyMatches, keyPrefix, revocationTarget } from './secret.ts';

export interface ApiKey {
  id: number;
  prefix: string;
  name: string;
  tier: string;
  createdAt: Date;
  revokedAt: Date | null;
}

interface KeyRow {
  id: number;
  prefix: string;
  hash: Buffer;
  name: string;
  tier: string;
  created_at: Date;
  revoked_at: Date | null;
}

function toKey(row: KeyRow): ApiKey {
  return { id: row.id, prefix: row.prefix, name: row.name, tier: row.tier, createdAt: row.created_at, revokedAt: row.revoked_at };
}

/** Creates a key; the returned secret is shown once and never stored. */
export async function createKey(pool: pg.Pool, tier: string, name: string): Promise<{ key: string; record: ApiKey }> {
  for (;;) {
    const made = generateKey();
    const { rows } = await pool.query<KeyRow>(
      `insert into api_keys (prefix, hash, name, tier) values ($1, $2, $3, $4)
       on conflict (prefix) do nothing returning *`,
      [made.prefix, made.hash, name, tier],
    );
    if (rows[0]) return { key: made.key, record: toKey(rows[0]) };
  }
}

export async function listKeys(pool: pg.Pool): Promise<ApiKey[]> {
  const { rows } = await pool.query<KeyRow>('select * from api_keys order by id');
  return rows.map(toKey);
}

/** Servers LISTEN on this channel and forget remembered keys when a revocation is announced. */
export const REVOCATION_CHANNEL = 'blockfeed_key_revoked';

/** Revokes by id or prefix and announces it to running servers; returns the key, or undefined when none matches. */
export async function revokeKey(pool: pg.Pool, idOrPrefix: string): Promise<ApiKey | undefined> {
  const target = revocationTarget(idOrPrefix);
  const { rows } = await pool.query<KeyRow>(
    `with revoked as (
       update api_keys set revoked_at = coalesce(revoked_at, now())
       where ${'id' in target ? 'id = $1' : 'prefix = $1'} returning *)
     select revoked.*, pg_notify('${REVOCATION_CHANNEL}', revoked.prefix) from revoked`,
    ['id' in target ? target.id : target.prefix],
  );
  return rows[0] ? toKey(rows[0]) : undefined;
}

/** The active key a presented secret belongs to, or undefined (unknown, malformed or revoked). */
export async function verifyKey(pool: pg.Pool, presented: string): Promise<ApiKey | undefined> {
  const prefix = keyPrefix(presented);
  if (!prefix) return undefined;
  const { rows } = await pool.query<KeyRow>('select * from api_keys where prefix = $1 and revoked_at is null', [prefix]);
  const row = rows[0];
  return row && keyMatches(presented, row.hash) ? toKey(row) : undefined;
}

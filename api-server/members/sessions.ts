// Website sessions kept server-side in PostgreSQL (web_sessions, migration 0006), as @fastify/session's
// store. Every replica sees every session, and a session ends when its row goes: at sign-out, for all of a
// member's sessions when the password changes or the account is disabled. Rows are found by the SHA-256 of
// the session id, so the table holds nothing a cookie could be made from.
//
// Not connect-pg-simple: it keeps the member only inside its JSON blob (ending a member's sessions would
// mean searching it) and stores the ids as they are.
import { createHash, randomBytes } from 'node:crypto';
import type { Session } from 'fastify';
import type { SessionStore as FastifySessionStore } from '@fastify/session';
import type pg from 'pg';

declare module 'fastify' {
  interface Session {
    /** The signed-in member: only a member's session is ever stored (a visitor's forms keep their CSRF secret in a cookie). */
    memberId?: number;
  }
}

type Done = (err?: Error) => void;

function idHash(sessionId: string): Buffer {
  return createHash('sha256').update(sessionId).digest();
}

export class SessionStore implements FastifySessionStore {
  readonly #pool: pg.Pool;
  readonly #lifetimeMs: number;

  /** `lifetimeMs`: how long a session without an expiry of its own is kept. */
  constructor(pool: pg.Pool, lifetimeMs: number) {
    this.#pool = pool;
    this.#lifetimeMs = lifetimeMs;
  }

  get(sessionId: string, done: (err: Error | null, session?: Session | null) => void): void {
    this.#pool
      .query<{ data: Session }>('select data from web_sessions where id_hash = $1 and expires_at > now()', [idHash(sessionId)])
      .then(({ rows }) => done(null, rows[0]?.data ?? null), (err: Error) => done(err));
  }

  set(sessionId: string, session: Session, done: Done): void {
    const expires = session.cookie.expires ? new Date(session.cookie.expires) : new Date(Date.now() + this.#lifetimeMs);
    this.#pool
      .query(
        `insert into web_sessions (id_hash, member_id, data, expires_at) values ($1, $2, $3, $4)
         on conflict (id_hash) do update set member_id = excluded.member_id, data = excluded.data, expires_at = excluded.expires_at`,
        [idHash(sessionId), session.memberId ?? null, JSON.stringify(session), expires],
      )
      .then(() => done(), done);
  }

  destroy(sessionId: string, done: Done): void {
    this.#pool.query('delete from web_sessions where id_hash = $1', [idHash(sessionId)]).then(() => done(), done);
  }
}

/** Ends every session of a member, except `keepSessionId` when given. */
export async function endSessions(pool: pg.Pool, memberId: number, keepSessionId?: string): Promise<void> {
  await pool.query('delete from web_sessions where member_id = $1 and id_hash is distinct from $2', [memberId, keepSessionId === undefined ? null : idHash(keepSessionId)]);
}

/** Deletes expired sessions. */
export async function pruneSessions(pool: pg.Pool): Promise<void> {
  await pool.query('delete from web_sessions where expires_at <= now()');
}

/**
 * The secret that signs session cookies when BLOCKFEED_SESSION_SECRET is unset: made once, kept in the
 * database, so every replica on it signs and checks alike and restarts keep sessions valid.
 */
export async function storedSessionSecret(pool: pg.Pool): Promise<string> {
  await pool.query(`insert into instance_settings (key, value) values ('website_session_secret', to_jsonb($1::text)) on conflict (key) do nothing`, [
    randomBytes(32).toString('base64url'),
  ]);
  const { rows } = await pool.query<{ value: string }>(`select value from instance_settings where key = 'website_session_secret'`);
  const secret = rows[0]?.value;
  if (!secret) throw new Error('the session secret could not be stored');
  return secret;
}

// Member accounts in PostgreSQL (migration 0006): email, argon2id password hash, tier and status. Keys and
// sessions of a member live in their own stores (keys/store.ts, members/sessions.ts); the operations that
// touch all three (disable, set tier) are composed here.
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { revokeMemberKeys, setMemberKeysTier } from '../keys/store.ts';
import { inTransaction } from '../store/transaction.ts';
import { endSessions } from './sessions.ts';

export const MEMBER_STATUSES = ['unverified', 'pending', 'active', 'disabled'] as const;
export type MemberStatus = (typeof MEMBER_STATUSES)[number];

export interface Member {
  id: number;
  email: string;
  tier: string;
  status: MemberStatus;
  createdAt: Date;
  activatedAt: Date | null;
  passwordChangedAt: Date;
}

interface MemberRow {
  id: number;
  email: string;
  password_hash: string;
  tier: string;
  status: MemberStatus;
  created_at: Date;
  activated_at: Date | null;
  password_changed_at: Date;
}

function toMember(row: MemberRow): Member {
  return {
    id: row.id,
    email: row.email,
    tier: row.tier,
    status: row.status,
    createdAt: row.created_at,
    activatedAt: row.activated_at,
    passwordChangedAt: row.password_changed_at,
  };
}

const EMAIL_MAX_LENGTH = 254;
const LOCAL_PART_MAX_LENGTH = 64;

// An address as people have them, in RFC 5322's dot-atom form with RFC 6531's letters of any script: the
// local part of letters, digits and !#$%&'*+/=?^_`{|}~- in dot-separated runs, a domain of two or more
// labels of letters, digits and inner hyphens. Nothing else: no spaces or control characters, and none of
// the quotes, commas, angle brackets or parentheses that would make a mail header read it as a display
// name or a list of recipients.
const LOCAL_RUN = "[\\p{L}\\p{M}\\p{N}!#$%&'*+/=?^_`{|}~-]+";
const LABEL = '[\\p{L}\\p{M}\\p{N}](?:[\\p{L}\\p{M}\\p{N}-]*[\\p{L}\\p{M}\\p{N}])?';
const EMAIL = new RegExp(`^(${LOCAL_RUN}(?:\\.${LOCAL_RUN})*)@${LABEL}(?:\\.${LABEL})+$`, 'u');

/** One account per address however it is typed: trimmed and lower-cased. */
export function normalizeEmail(text: string): string {
  return text.trim().toLowerCase();
}

/** Whether a (normalized) address can be an account's: see EMAIL; at most 254 characters, 64 before the @. */
export function isEmailAddress(email: string): boolean {
  if (email.length > EMAIL_MAX_LENGTH) return false;
  const local = EMAIL.exec(email)?.[1];
  return local !== undefined && local.length <= LOCAL_PART_MAX_LENGTH;
}

/** A verification token for an emailed link: the token goes in the link, only its SHA-256 is stored. */
export function newVerificationToken(): { token: string; hash: Buffer } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: tokenHash(token) };
}

function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** How long an emailed verification link stays valid. */
export const VERIFICATION_HOURS = 24;

interface NewMember {
  email: string;
  passwordHash: string;
  status: Extract<MemberStatus, 'unverified' | 'pending'>;
  /** For `unverified`: the hash of the emailed token. */
  verifyTokenHash?: Buffer;
}

/** Creates an account; undefined when the address already has one (nothing is changed then). */
export async function createMember(pool: pg.Pool, m: NewMember): Promise<Member | undefined> {
  const { rows } = await pool.query<MemberRow>(
    `insert into members (email, password_hash, status, verify_token_hash, verify_expires_at)
     values ($1, $2, $3, $4, case when $4::bytea is null then null else now() + make_interval(hours => $5) end)
     on conflict (email) do nothing returning *`,
    [normalizeEmail(m.email), m.passwordHash, m.status, m.verifyTokenHash ?? null, VERIFICATION_HOURS],
  );
  return rows[0] ? toMember(rows[0]) : undefined;
}

/** A new verification link for an account still waiting for one (a second sign-up with the same address). */
export async function renewVerification(pool: pg.Pool, memberId: number, verifyTokenHash: Buffer): Promise<void> {
  await pool.query(
    `update members set verify_token_hash = $2, verify_expires_at = now() + make_interval(hours => $3)
     where id = $1 and status = 'unverified'`,
    [memberId, verifyTokenHash, VERIFICATION_HOURS],
  );
}

/** Activates the unverified account a valid, unexpired token belongs to; undefined otherwise. The token works once. */
export async function verifyEmail(pool: pg.Pool, token: string): Promise<Member | undefined> {
  const { rows } = await pool.query<MemberRow>(
    `update members set status = 'active', activated_at = now(), verify_token_hash = null, verify_expires_at = null
     where verify_token_hash = $1 and verify_expires_at > now() and status = 'unverified' returning *`,
    [tokenHash(token)],
  );
  return rows[0] ? toMember(rows[0]) : undefined;
}

export async function findMember(pool: pg.Pool, id: number): Promise<Member | undefined> {
  const { rows } = await pool.query<MemberRow>('select * from members where id = $1', [id]);
  return rows[0] ? toMember(rows[0]) : undefined;
}

/** The account of an address with its password hash (for signing in and changing the password). */
export async function findCredentials(pool: pg.Pool, email: string): Promise<{ member: Member; passwordHash: string } | undefined> {
  const { rows } = await pool.query<MemberRow>('select * from members where email = $1', [normalizeEmail(email)]);
  const row = rows[0];
  return row ? { member: toMember(row), passwordHash: row.password_hash } : undefined;
}

/** An account named by the operator: its numeric id or its address. */
export async function findMemberByRef(pool: pg.Pool, ref: string): Promise<Member | undefined> {
  const text = ref.trim();
  const { rows } = /^\d{1,9}$/.test(text)
    ? await pool.query<MemberRow>('select * from members where id = $1', [Number(text)])
    : await pool.query<MemberRow>('select * from members where email = $1', [normalizeEmail(text)]);
  return rows[0] ? toMember(rows[0]) : undefined;
}

export async function listMembers(pool: pg.Pool): Promise<(Member & { activeKeys: number })[]> {
  const { rows } = await pool.query<MemberRow & { active_keys: number }>(
    `select m.*, (select count(*)::int from api_keys k where k.member_id = m.id and k.revoked_at is null) as active_keys
     from members m order by m.id`,
  );
  return rows.map((r) => ({ ...toMember(r), activeKeys: r.active_keys }));
}

/** Activates an account waiting for approval, or enables a disabled one again (its revoked keys stay revoked). */
export async function activateMember(pool: pg.Pool, id: number): Promise<Member | undefined> {
  const { rows } = await pool.query<MemberRow>(
    `update members set status = 'active', activated_at = now(), disabled_at = null, verify_token_hash = null, verify_expires_at = null
     where id = $1 returning *`,
    [id],
  );
  return rows[0] ? toMember(rows[0]) : undefined;
}

/** Moves an account and every key it created to another tier, in one transaction: both move or neither does. */
export async function setMemberTier(pool: pg.Pool, id: number, tier: string): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query('update members set tier = $2 where id = $1', [id, tier]);
    await setMemberKeysTier(client, id, tier);
  });
}

/**
 * Disables an account: it can no longer sign in, its sessions end and its keys are revoked (announced to
 * every server). Each step is idempotent and the status goes first, so a repeated call finishes an interrupted one.
 */
export async function disableMember(pool: pg.Pool, id: number): Promise<{ revokedKeys: number }> {
  await pool.query(`update members set status = 'disabled', disabled_at = coalesce(disabled_at, now()) where id = $1`, [id]);
  const revokedKeys = await revokeMemberKeys(pool, id);
  await endSessions(pool, id);
  return { revokedKeys };
}

/** Stores a new password hash and ends the member's other sessions (`keepSessionId`: the one that changed it). */
export async function changePassword(pool: pg.Pool, id: number, passwordHash: string, keepSessionId: string): Promise<void> {
  await pool.query('update members set password_hash = $2, password_changed_at = now() where id = $1', [id, passwordHash]);
  await endSessions(pool, id, keepSessionId);
}

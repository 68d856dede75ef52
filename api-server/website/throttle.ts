// Throttles of the account forms, counted in the API's PostgreSQL limiter (rate_counters, fixed windows) in
// buckets of their own, so they hold across replicas: sign-in per account and per client address (the
// password change's check of the current one counts per account too), sign-up per client address, an IPv6
// client by its /64 (clientSubject). Every attempt counts before its password is checked (parallel guesses
// cannot slip between a check and a count); a successful sign-in clears its account's count. Accounts are
// counted by a hash of the address typed, whether or not an account has it (no enumeration, and no addresses
// kept in the counters).
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { clearHits, clientSubject, countHit } from '../http/limits.ts';

interface Throttle {
  prefix: string;
  limit: number;
  windowSeconds: number;
}

/** Five wrong passwords for one account in a quarter of an hour, then it waits for the next quarter. */
export const SIGN_IN_PER_ACCOUNT: Throttle = { prefix: 'sign-in:account:', limit: 5, windowSeconds: 900 };
/** One address guessing across accounts. */
export const SIGN_IN_PER_ADDRESS: Throttle = { prefix: 'sign-in:address:', limit: 30, windowSeconds: 900 };
/** Account requests (each a password hash and perhaps an email) from one address per hour. */
export const SIGN_UP_PER_ADDRESS: Throttle = { prefix: 'sign-up:address:', limit: 10, windowSeconds: 3600 };

function bucketOf(t: Throttle, subject: string): { bucket: string; windowSeconds: number } {
  return { bucket: t.prefix + subject, windowSeconds: t.windowSeconds };
}

function accountSubject(email: string): string {
  return createHash('sha256').update(email).digest('base64url').slice(0, 22);
}

/** Seconds until the caller may try again, or 0 when this attempt may go ahead. */
export type Wait = number;

/** A wait in whole minutes, as the forms tell it (at least one). */
export const minutesOf = (wait: Wait): number => Math.max(1, Math.ceil(wait / 60));

async function admit(pool: pg.Pool, now: Date, checks: [Throttle, string][]): Promise<Wait> {
  const counts = await Promise.all(checks.map(([t, subject]) => countHit(pool, bucketOf(t, subject), now)));
  return Math.max(0, ...counts.map((c, i) => (c.hits > (checks[i]?.[0].limit ?? 0) ? c.resetSeconds : 0)));
}

export function admitSignIn(pool: pg.Pool, email: string, address: string, now: Date): Promise<Wait> {
  return admit(pool, now, [
    [SIGN_IN_PER_ACCOUNT, accountSubject(email)],
    [SIGN_IN_PER_ADDRESS, clientSubject(address)],
  ]);
}

/** A signed-in member's current password, checked before a change: guessed as at sign-in, counted alike. */
export function admitPasswordCheck(pool: pg.Pool, email: string, now: Date): Promise<Wait> {
  return admit(pool, now, [[SIGN_IN_PER_ACCOUNT, accountSubject(email)]]);
}

export function signInSucceeded(pool: pg.Pool, email: string, now: Date): Promise<void> {
  return clearHits(pool, bucketOf(SIGN_IN_PER_ACCOUNT, accountSubject(email)), now);
}

export function admitSignUp(pool: pg.Pool, address: string, now: Date): Promise<Wait> {
  return admit(pool, now, [[SIGN_UP_PER_ADDRESS, clientSubject(address)]]);
}

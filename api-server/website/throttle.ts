// Throttles of the account forms, counted in the store's rate counters (store/rate-counters.ts, fixed windows)
// in buckets of their own, so they hold across replicas. Sign-in follows OWASP's advice against both guessing
// and lock-out (Authentication Cheat Sheet, "Slow Down Online Guessing Attacks with Device Cookies"):
//
// - a browser without a device cookie for the account is counted by its client network (across accounts),
//   by the pair of account and client network, and by the account alone under a far higher ceiling, in that
//   order: an attempt refused by one is not counted by the next, so guesses from one network fill its own
//   buckets and reach the account's only as far as the pair lets them (they cannot lock the owner out);
// - a browser that signed in to the account before carries a device cookie (signed, naming the account):
//   it is counted by the device and by the pair, never by the account's ceiling, so the owner still signs in
//   while guesses from many networks hold that ceiling.
//
// Every attempt counts before its password is checked (parallel guesses cannot slip between a check and a
// count). Accounts are counted by a hash of the address typed, whether or not an account has it (no
// enumeration, no addresses in the counters); client networks as the API limits them (an IPv6 client by
// its /64, clientSubject). The password change's check of the current password has a throttle of its own,
// per account: one who holds a session can guess there, but cannot lock the owner out of signing in.
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { clearHits, clientSubject, countHit, type CounterWindow } from '../store/rate-counters.ts';

interface Throttle {
  prefix: string;
  limit: number;
  windowSeconds: number;
}

/** One client network guessing across accounts. */
export const SIGN_IN_PER_ADDRESS: Throttle = { prefix: 'sign-in:address:', limit: 30, windowSeconds: 900 };
/** Five wrong passwords for one account from one client network in a quarter of an hour, then it waits. */
export const SIGN_IN_PER_PAIR: Throttle = { prefix: 'sign-in:pair:', limit: 5, windowSeconds: 900 };
/** Guesses at one account from many networks (without its device cookie): a far higher ceiling, per hour. */
export const SIGN_IN_PER_ACCOUNT: Throttle = { prefix: 'sign-in:account:', limit: 100, windowSeconds: 3600 };
/** Wrong passwords through one device cookie, wherever it is used from. */
export const SIGN_IN_PER_DEVICE: Throttle = { prefix: 'sign-in:device:', limit: 5, windowSeconds: 900 };
/** Guesses of a signed-in member's current password on the account page. */
export const PASSWORD_CHECK_PER_ACCOUNT: Throttle = { prefix: 'password-check:account:', limit: 5, windowSeconds: 900 };
/** Account requests (each a password hash and perhaps an email) from one address per hour. */
export const SIGN_UP_PER_ADDRESS: Throttle = { prefix: 'sign-up:address:', limit: 10, windowSeconds: 3600 };

/** Address checks on the check page from one client network, as many as its sign-in attempts. */
export const CHECK_PER_ADDRESS: Throttle = { prefix: 'check:address:', limit: 30, windowSeconds: 900 };
/** Removal requests (each stored, and perhaps an email) from one client network per hour. */
export const REMOVAL_PER_ADDRESS: Throttle = { prefix: 'removal:address:', limit: 5, windowSeconds: 3600 };

/** How long a device cookie lets its browser past the account's ceiling (renewed at every sign-in). */
export const DEVICE_DAYS = 180;

function bucketOf(t: Throttle, subject: string): CounterWindow {
  return { bucket: t.prefix + subject, windowSeconds: t.windowSeconds };
}

function accountSubject(email: string): string {
  return createHash('sha256').update(email).digest('base64url').slice(0, 22);
}

function pairSubject(email: string, address: string): string {
  return `${accountSubject(email)}:${clientSubject(address)}`;
}

/** Seconds until the caller may try again, or 0 when this attempt may go ahead. */
export type Wait = number;

/** A wait in whole minutes, as the forms tell it (at least one). */
export const minutesOf = (wait: Wait): number => Math.max(1, Math.ceil(wait / 60));

/** Counts the attempt in each throttle in turn, stopping at the first that refuses it. */
async function admit(pool: pg.Pool, now: Date, checks: [Throttle, string][]): Promise<Wait> {
  for (const [throttle, subject] of checks) {
    const count = await countHit(pool, bucketOf(throttle, subject), now);
    if (count.hits > throttle.limit) return count.resetSeconds;
  }
  return 0;
}

export interface SignInAttempt {
  /** The address typed (normalized). */
  email: string;
  /** The client's address. */
  address: string;
  /** The id of the browser's device cookie, when it is valid for this account (deviceOf). */
  device?: string;
}

export function admitSignIn(pool: pg.Pool, { email, address, device }: SignInAttempt, now: Date): Promise<Wait> {
  const pair: [Throttle, string] = [SIGN_IN_PER_PAIR, pairSubject(email, address)];
  if (device) return admit(pool, now, [[SIGN_IN_PER_DEVICE, device], pair]);
  return admit(pool, now, [[SIGN_IN_PER_ADDRESS, clientSubject(address)], pair, [SIGN_IN_PER_ACCOUNT, accountSubject(email)]]);
}

/**
 * The right password: the pair's and the device's failures are forgotten. The account's count is not: the
 * owner signing in says nothing of guesses from elsewhere, which would get a fresh start.
 */
export async function signInSucceeded(pool: pg.Pool, { email, address, device }: SignInAttempt, now: Date): Promise<void> {
  await clearHits(pool, bucketOf(SIGN_IN_PER_PAIR, pairSubject(email, address)), now);
  if (device) await clearHits(pool, bucketOf(SIGN_IN_PER_DEVICE, device), now);
}

/** A signed-in member's current password, checked before a change. */
export function admitPasswordCheck(pool: pg.Pool, email: string, now: Date): Promise<Wait> {
  return admit(pool, now, [[PASSWORD_CHECK_PER_ACCOUNT, accountSubject(email)]]);
}

export function passwordCheckSucceeded(pool: pg.Pool, email: string, now: Date): Promise<void> {
  return clearHits(pool, bucketOf(PASSWORD_CHECK_PER_ACCOUNT, accountSubject(email)), now);
}

export function admitSignUp(pool: pg.Pool, address: string, now: Date): Promise<Wait> {
  return admit(pool, now, [[SIGN_UP_PER_ADDRESS, clientSubject(address)]]);
}

export function admitCheck(pool: pg.Pool, address: string, now: Date): Promise<Wait> {
  return admit(pool, now, [[CHECK_PER_ADDRESS, clientSubject(address)]]);
}

export function admitRemovalRequest(pool: pg.Pool, address: string, now: Date): Promise<Wait> {
  return admit(pool, now, [[REMOVAL_PER_ADDRESS, clientSubject(address)]]);
}

/**
 * The value of a new device cookie for an account: `<account>.<id>.<issued, epoch seconds>`, signed by the
 * caller (the cookie plugin). The id, 128 random bits, names the device's throttle bucket.
 */
export function newDeviceValue(email: string, now: Date): string {
  return `${accountSubject(email)}.${randomBytes(16).toString('base64url')}.${Math.floor(now.getTime() / 1000)}`;
}

/** The device id of a device cookie's (verified) value, if it names this account and has not expired. */
export function deviceOf(value: string | null | undefined, email: string, now: Date): string | undefined {
  const match = /^([\w-]{22})\.([\w-]{22})\.(\d{1,12})$/.exec(value ?? '');
  if (!match || match[1] !== accountSubject(email)) return undefined;
  return now.getTime() / 1000 - Number(match[3]) < DEVICE_DAYS * 86_400 ? match[2] : undefined;
}

// Member passwords: argon2id (@node-rs/argon2, prebuilt binaries) at OWASP's recommended minimum cost, and
// the length policy of NIST SP 800-63B (a floor, a generous ceiling, no composition rules).
import { hash, verify } from '@node-rs/argon2';

export const PASSWORD_MIN_LENGTH = 15;
/** argon2 hashes any length; the ceiling only bounds the work an anonymous form can ask for. */
export const PASSWORD_MAX_LENGTH = 256;

// The package's default algorithm is argon2id (its `Algorithm` is a const enum, which type stripping cannot
// import; a unit test checks the PHC string says argon2id). m = 19 MiB, t = 2, p = 1.
const COST = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export type PasswordProblem = 'too-short' | 'too-long';

/** What is wrong with a new password, if anything (counted in characters, as people count them). */
export function passwordProblem(password: string): PasswordProblem | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return 'too-short';
  if (length > PASSWORD_MAX_LENGTH) return 'too-long';
  return undefined;
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, COST);
}

/** Whether `password` matches a stored PHC string (argon2's own constant-time comparison). */
export async function passwordMatches(stored: string, password: string): Promise<boolean> {
  if (password.length > PASSWORD_MAX_LENGTH * 4) return false;
  return verify(stored, password).catch(() => false);
}

let decoy: Promise<string> | undefined;

/**
 * Spends the time of a real verification when no account matches, so a sign-in answers an unknown address
 * as slowly as a known one with a wrong password (no account enumeration by timing). Always false.
 */
export async function verifyAgainstDecoy(password: string): Promise<false> {
  decoy ??= hashPassword('decoy password that no account has');
  await passwordMatches(await decoy, password);
  return false;
}

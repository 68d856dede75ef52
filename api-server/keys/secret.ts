// API key material (pure). A key reads `bf_<prefix>_<secret>`: the prefix finds the row, the whole key is
// hashed with SHA-256 (the secret is 192 random bits, so no slow hash is needed) and compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const KEY_PATTERN = /^bf_([a-z0-9]{8})_([A-Za-z0-9_-]{32})$/;

interface NewKey {
  key: string;
  prefix: string;
  hash: Buffer;
}

export function generateKey(): NewKey {
  const prefix = randomBytes(5).toString('hex').slice(0, 8);
  const key = `bf_${prefix}_${randomBytes(24).toString('base64url')}`;
  return { key, prefix, hash: hashKey(key) };
}

function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** The lookup prefix of a well-formed key, else undefined (a malformed key is simply invalid). */
export function keyPrefix(key: string): string | undefined {
  return KEY_PATTERN.exec(key)?.[1];
}

/**
 * What `keys revoke <which>` names: the key itself, its prefix (`bf_xxxxxxxx` or the eight characters alone, which
 * may happen to be all digits) or its numeric id (any other number).
 */
export function revocationTarget(which: string): { id: number } | { prefix: string } {
  const text = which.trim();
  const prefix = keyPrefix(text) ?? /^(?:bf_)?([a-z0-9]{8})$/.exec(text)?.[1];
  if (prefix) return { prefix };
  if (/^\d{1,9}$/.test(text)) return { id: Number(text) };
  return { prefix: text.replace(/^bf_/, '') };
}

export function keyMatches(key: string, storedHash: Buffer): boolean {
  const hash = hashKey(key);
  return hash.length === storedHash.length && timingSafeEqual(hash, storedHash);
}

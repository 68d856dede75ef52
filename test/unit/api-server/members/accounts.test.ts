// Account rules that need no store: argon2id hashes at the chosen cost, the password length policy, and
// what an email address is.
import { describe, expect, it } from 'vitest';
import { hashPassword, passwordMatches, passwordProblem, verifyAgainstDecoy } from '../../../../api-server/members/passwords.ts';
import { isEmailAddress, newVerificationToken, normalizeEmail } from '../../../../api-server/members/store.ts';

describe('passwords', () => {
  it('are hashed with argon2id (19 MiB, 2 passes, 1 lane) and a salt of their own', async () => {
    const a = await hashPassword('correct horse battery staple');
    const b = await hashPassword('correct horse battery staple');
    expect(a).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(a).not.toBe(b);
    expect(await passwordMatches(a, 'correct horse battery staple')).toBe(true);
    expect(await passwordMatches(a, 'correct horse battery stapl')).toBe(false);
    expect(await passwordMatches('not a hash', 'x')).toBe(false);
    expect(await verifyAgainstDecoy('anything')).toBe(false);
  });

  it('are 15 to 256 characters, counted as people count them', () => {
    expect(passwordProblem('fourteen chars')).toBe('too-short');
    expect(passwordProblem('fifteen chars!!')).toBeUndefined();
    expect(passwordProblem('密'.repeat(15))).toBeUndefined();
    expect(passwordProblem('🔑'.repeat(14))).toBe('too-short');
    expect(passwordProblem('x'.repeat(257))).toBe('too-long');
  });
});

describe('email addresses', () => {
  it('are one account however they are typed', () => {
    expect(normalizeEmail('  Ops.Team@Example.ORG ')).toBe('ops.team@example.org');
  });

  it('need a local part, one @ and a dotted domain', () => {
    for (const ok of ['a@b.co', 'first.last+tag@mail.example.org', '用户@例子.中国', "o'brien@example.ie", 'x-y_z@sub-domain.example.org', `${'x'.repeat(64)}@b.co`]) {
      expect(isEmailAddress(ok), ok).toBe(true);
    }
    for (const bad of ['', 'a', 'a@b', '@b.co', 'a@@b.co', 'a b@c.de', 'a@b..co', '.a@b.co', 'a.@b.co', 'a@-b.co', 'a@b-.co', `${'x'.repeat(250)}@b.co`, `${'x'.repeat(65)}@b.co`]) {
      expect(isEmailAddress(bad), bad).toBe(false);
    }
  });

  it('are one address a mail header cannot read as more: no controls, quotes, commas, brackets or separators', () => {
    for (const bad of [
      'victim@example.org\r\nbcc: all@example.net',
      'nul\u0000@example.org',
      'esc\u001b[2j@example.org',
      'tab\t@example.org',
      'someone,victim@example.net',
      '"victim@example.net"@example.org',
      '<victim@example.net>',
      'victim@example.net>',
      'name (comment)@example.org',
      'a;b@example.org',
      'rlo\u202e@example.org',
      'nbsp\u00a0@example.org',
      'line\u2028@example.org',
      'bad\ufffd@example.org',
    ]) {
      expect(isEmailAddress(bad), JSON.stringify(bad)).toBe(false);
    }
  });
});

describe('verification tokens', () => {
  it('are 256 random bits for the link, only their hash for the store', () => {
    const { token, hash } = newVerificationToken();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hash).toHaveLength(32);
    expect(newVerificationToken().token).not.toBe(token);
  });
});

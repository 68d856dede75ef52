// Untrusted text: which characters no field or argument takes, and how it is echoed so that it cannot act on
// the terminal or the line it is shown in.
import { describe, expect, it } from 'vitest';
import { hasForbiddenCharacters, quoted, shown } from '../../../../api-server/members/untrusted-text.ts';

describe('untrusted text', () => {
  it('forbids control characters, lone surrogates and the mark of bytes that were not UTF-8', () => {
    for (const bad of ['\u0000', 'a\r\nb', '\t', '\u001b[31m', '\u007f', '\u0085', '\ud800', 'caf\ufffd']) expect(hasForbiddenCharacters(bad), JSON.stringify(bad)).toBe(true);
    // Letters of any script, emoji sequences (joined by U+200D) and spaces are text.
    for (const ok of ['correct horse battery staple', '密码是一句话', '👨‍👩‍👧 family', 'naïve café']) expect(hasForbiddenCharacters(ok), ok).toBe(false);
  });

  it('quotes text for a message, escaping what could steer a terminal, and cuts it short', () => {
    expect(quoted('gold')).toBe('"gold"');
    expect(quoted('a\r\n\u001b[31m"\\')).toBe('"a\\u{d}\\u{a}\\u{1b}[31m\\"\\\\"');
    expect(quoted('\u202egro.live')).toBe('"\\u{202e}gro.live"');
    expect(quoted('\u2028\ud800')).toBe('"\\u{2028}\\u{d800}"');
    expect(quoted('x'.repeat(100))).toBe(`"${'x'.repeat(80)}"… (100 characters)`);
    expect(quoted('密'.repeat(3), 2)).toBe('"密密"… (3 characters)');
  });

  it('shows listed text as it is unless something in it needs escaping', () => {
    expect(shown('ops@example.org')).toBe('ops@example.org');
    expect(shown('用户@例子.中国')).toBe('用户@例子.中国');
    expect(shown('clear\u001b[2J@example.org')).toBe('"clear\\u{1b}[2J@example.org"');
  });
});

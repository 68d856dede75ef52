// Text from outside — form fields, the operator's arguments, stored addresses — checked before use
// and shown so that it cannot act on its reader: no field takes control characters or text that was not
// UTF-8, and what a message or a listing echoes is quoted with anything that could steer a terminal
// (ESC sequences, line breaks, bidirectional overrides) written as an escape.

/**
 * C0 and C1 control characters (NUL, CR, LF, TAB, ESC, DEL, …), lone surrogates, and U+FFFD: the character a
 * decoder puts where bytes were not UTF-8. No field of the website or argument of the CLI needs any of them.
 */
const FORBIDDEN = /[\p{Cc}\p{Cs}\uFFFD]/u;

export function hasForbiddenCharacters(text: string): boolean {
  return FORBIDDEN.test(text);
}

/** What `quoted` writes as an escape: controls, format characters (bidirectional overrides among them), line and paragraph separators. */
const UNPRINTABLE = '[\\p{Cc}\\p{Cf}\\p{Cs}\\p{Co}\\p{Zl}\\p{Zp}\\uFFFD"\\\\]';
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE, 'gu');
const UNPRINTABLE_ANY = new RegExp(UNPRINTABLE, 'u');

/** Untrusted text for a one-line message: in double quotes, escaped, at most `max` characters of it. */
export function quoted(text: string, max = 80): string {
  const chars = [...text];
  const visible = chars
    .slice(0, max)
    .join('')
    .replace(UNPRINTABLE_ALL, (c) => (c === '"' || c === '\\' ? `\\${c}` : `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`));
  return chars.length > max ? `"${visible}"… (${chars.length} characters)` : `"${visible}"`;
}

/** Text for a listing: as it is when nothing in it needs escaping, else `quoted` (whole). */
export function shown(text: string): string {
  return UNPRINTABLE_ANY.test(text) ? quoted(text, Infinity) : text;
}

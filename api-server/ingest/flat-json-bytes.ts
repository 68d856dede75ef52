// The byte-level twin of flat-json.ts, for the hot path of a bulk ingest: reads one line of UTF-8 bytes as
// a flat JSON object and records where the wanted fields' values are, without making a single string. Only
// the plainest lines qualify — ASCII only, no nesting, keys without escapes; anything else (and anything
// that is not valid JSON) is refused, and the caller hands the line to the general path, so what a line
// means never depends on which reader read it. String values may hold escapes (a shell command's quotes):
// such fields are marked `escaped`, and decodeAscii gives their characters. Pure.
import { BACKSLASH, CLOSE, COLON, COMMA, MINUS, OPEN, QUOTE, ZERO, isDigit, numberEnd } from './json-grammar.ts';

/** What a field's value is (`kind`); ABSENT when the line does not have the field. */
export const ABSENT = 0;
export const STRING = 1;
export const NUMBER = 2;
export const TRUE = 3;
export const FALSE = 4;
export const NULL = 5;

/** What a byte is inside a JSON string here: plain, its closing quote, an escape, or refused (a control
 * character, or not ASCII). One table load per byte instead of four comparisons. */
const PLAIN = 0;
const CLOSING = 1;
const ESCAPE = 2;
const REFUSED = 3;
const IN_STRING = new Uint8Array(256).map((_, c) => (c === QUOTE ? CLOSING : c === BACKSLASH ? ESCAPE : c < 32 || c > 126 ? REFUSED : PLAIN));

/** Where each wanted field's value was found in the last line read (indexes are the wanted keys' order). */
export class FlatFields {
  readonly kind: Uint8Array;
  /** 1 where a string value holds escapes (its bytes are then not its characters: see decodeAscii). */
  readonly escaped: Uint8Array;
  /** For strings the characters between the quotes; for numbers and literals the token. */
  readonly start: Int32Array;
  readonly end: Int32Array;
  private readonly byLength: (Buffer[] | undefined)[] = [];
  private readonly idsByLength: (number[] | undefined)[] = [];

  constructor(wanted: readonly string[]) {
    this.kind = new Uint8Array(wanted.length);
    this.escaped = new Uint8Array(wanted.length);
    this.start = new Int32Array(wanted.length);
    this.end = new Int32Array(wanted.length);
    wanted.forEach((name, id) => {
      (this.byLength[name.length] ??= []).push(Buffer.from(name));
      (this.idsByLength[name.length] ??= []).push(id);
    });
  }

  /**
   * Reads line[start, end) (no line terminator); true when it is a flat object of plain ASCII values, and the
   * wanted fields' places are recorded. False: the caller must read the line another way.
   */
  read(line: Buffer, start: number, end: number): boolean {
    // One loop over the bytes with everything inline: this runs for every line of a bulk ingest.
    this.kind.fill(ABSENT);
    let i = start;
    let c = 0;
    while (i < end && ((c = line[i] as number) === 32 || c === 9 || c === 13)) i++;
    if (i >= end || c !== OPEN) return false;
    i++;
    while (i < end && ((c = line[i] as number) === 32 || c === 9 || c === 13)) i++;
    if (i < end && c === CLOSE) return skipSpace(line, i + 1, end) === end;
    for (;;) {
      if (i >= end || line[i] !== QUOTE) return false;
      const keyStart = ++i;
      let k = 0;
      while (i < end && (k = IN_STRING[line[i] as number] as number) === PLAIN) i++;
      if (k !== CLOSING || i >= end) return false;
      const field = this.fieldOf(line, keyStart, i);
      i++;
      while (i < end && ((c = line[i] as number) === 32 || c === 9 || c === 13)) i++;
      if (i >= end || c !== COLON) return false;
      i++;
      while (i < end && ((c = line[i] as number) === 32 || c === 9 || c === 13)) i++;
      if (i >= end) return false;
      let kind: number;
      let from = i;
      let to: number;
      let escaped = 0;
      if (c === QUOTE) {
        from = ++i;
        for (;;) {
          let k = 0;
          while (i < end && (k = IN_STRING[line[i] as number] as number) === PLAIN) i++;
          if (i >= end || k === REFUSED) return false;
          if (k === CLOSING) break;
          const length = escapeLength(line, i, end);
          if (length < 0) return false;
          i += length;
          escaped = 1;
        }
        to = i++;
        kind = STRING;
      } else if (c === MINUS || isDigit(c)) {
        to = numberEnd((k) => (k < end ? (line[k] as number) : -1), i);
        if (to < 0) return false;
        kind = NUMBER;
        i = to;
      } else if (c === 116 /* t */ && literalAt(line, i, end, 'true')) {
        kind = TRUE;
        to = i += 4;
      } else if (c === 102 /* f */ && literalAt(line, i, end, 'false')) {
        kind = FALSE;
        to = i += 5;
      } else if (c === 110 /* n */ && literalAt(line, i, end, 'null')) {
        kind = NULL;
        to = i += 4;
      } else return false;
      // A repeated key: the last one counts, as with JSON.parse.
      if (field >= 0) {
        this.kind[field] = kind;
        this.escaped[field] = escaped;
        this.start[field] = from;
        this.end[field] = to;
      }
      while (i < end && ((c = line[i] as number) === 32 || c === 9 || c === 13)) i++;
      if (i >= end) return false;
      if (c === CLOSE) return skipSpace(line, i + 1, end) === end;
      if (c !== COMMA) return false;
      i++;
      while (i < end && ((c = line[i] as number) === 32 || c === 9 || c === 13)) i++;
    }
  }

  /** The wanted field spelled by line[from, to), or -1. */
  private fieldOf(line: Buffer, from: number, to: number): number {
    const names = this.byLength[to - from];
    if (names === undefined) return -1;
    for (let n = 0; n < names.length; n++) {
      const name = names[n] as Buffer;
      let same = true;
      for (let k = 0; k < name.length; k++) {
        if (line[from + k] !== name[k]) {
          same = false;
          break;
        }
      }
      if (same) return (this.idsByLength[to - from] as number[])[n] as number;
    }
    return -1;
  }
}

function skipSpace(line: Buffer, at: number, end: number): number {
  while (at < end) {
    const c = line[at] as number;
    if (c !== 32 && c !== 9 && c !== 13) break;
    at++;
  }
  return at;
}

/** Length of the JSON escape at `at` (a backslash): 2, or 6 for \uXXXX; -1 when it is not one. */
function escapeLength(line: Buffer, at: number, end: number): number {
  if (at + 1 >= end) return -1;
  const c = line[at + 1] as number;
  // " \ / b f n r t
  if (c === 34 || c === 92 || c === 47 || c === 98 || c === 102 || c === 110 || c === 114 || c === 116) return 2;
  if (c !== 117 /* u */ || at + 6 > end) return -1;
  for (let k = at + 2; k < at + 6; k++) if (hexValue(line[k] as number) < 0) return -1;
  return 6;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

const UNESCAPED: Record<number, number> = { 34: 34, 92: 92, 47: 47, 98: 8, 102: 12, 110: 10, 114: 13, 116: 9 };

/**
 * The characters of the escaped string value line[start, end) (as read: valid escapes, ASCII) written into
 * `out` from 0; returns their count, or -1 when one is not ASCII or is NUL (such values go the general way).
 */
export function decodeAscii(line: Buffer, start: number, end: number, out: Buffer): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = line[i] as number;
    if (c !== BACKSLASH) {
      out[n++] = c;
      continue;
    }
    const e = line[i + 1] as number;
    if (e === 117) {
      const code = (hexValue(line[i + 2] as number) << 12) | (hexValue(line[i + 3] as number) << 8) | (hexValue(line[i + 4] as number) << 4) | hexValue(line[i + 5] as number);
      if (code === 0 || code > 126) return -1;
      out[n++] = code;
      i += 5;
    } else {
      out[n++] = UNESCAPED[e] as number;
      i++;
    }
  }
  return n;
}

function literalAt(line: Buffer, at: number, end: number, word: string): boolean {
  if (at + word.length > end) return false;
  for (let k = 0; k < word.length; k++) if (line[at + k] !== word.charCodeAt(k)) return false;
  return true;
}

/** Whether line[start, end) spells `text` (ASCII). */
export function bytesEqual(line: Buffer, start: number, end: number, text: Buffer): boolean {
  if (end - start !== text.length) return false;
  for (let k = 0; k < text.length; k++) if (line[start + k] !== text[k]) return false;
  return true;
}

/**
 * A plain JSON integer token (no sign, fraction or exponent; at most 9 digits) as a number, or -1. Wider
 * forms are left to the general path.
 */
export function plainInteger(line: Buffer, start: number, end: number): number {
  if (end - start < 1 || end - start > 9) return -1;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = (line[i] as number) - ZERO;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

// A scanner for the plainest JSON lines — one flat object of printable-ASCII values without escapes, the
// shape of nearly every line a sensor writes — straight from the line's bytes: it records where the wanted
// fields' values are, and makes no string. Any other line (nesting, escapes, non-ASCII, invalid JSON) it
// refuses, and the caller reads that line with JSON.parse; a property test holds it to what JSON.parse reads.
// Pure apart from the arrays it fills.

/** What a field's value is (`kind`); ABSENT when the line does not have the field. */
export const ABSENT = 0;
export const STRING = 1;
export const NUMBER = 2;
export const TRUE = 3;
export const FALSE = 4;
export const NULL = 5;

const QUOTE = 34;
const BACKSLASH = 92;
const MINUS = 45;
const SPACE = 32;

const isDigit = (c: number) => c >= 48 && c <= 57;
/** Printable ASCII but the quote and the backslash: what a plain string holds. */
const isPlain = (c: number) => c >= 32 && c <= 126 && c !== QUOTE && c !== BACKSLASH;
const LITERALS: [text: Buffer, kind: number][] = [[Buffer.from('true'), TRUE], [Buffer.from('false'), FALSE], [Buffer.from('null'), NULL]];

/** Whether line[from, to) spells `text`. */
export function bytesEqual(line: Buffer, from: number, to: number, text: Buffer): boolean {
  if (to - from !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (line[from + i] !== text[i]) return false;
  return true;
}

/** End of the JSON number starting at `at` (-?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?) before `end`, or -1. */
function numberEnd(b: Buffer, at: number, end: number): number {
  let i = b[at] === MINUS ? at + 1 : at;
  const intStart = i;
  while (i < end && isDigit(b[i] as number)) i++;
  if (i === intStart || (b[intStart] === 48 && i > intStart + 1)) return -1;
  if (i < end && b[i] === 46 /* . */) {
    const from = ++i;
    while (i < end && isDigit(b[i] as number)) i++;
    if (i === from) return -1;
  }
  if (i < end && (b[i] === 101 || b[i] === 69) /* e E */) {
    if (++i < end && (b[i] === 43 || b[i] === MINUS)) i++;
    const from = i;
    while (i < end && isDigit(b[i] as number)) i++;
    if (i === from) return -1;
  }
  return i;
}

function skipSpace(line: Buffer, i: number, end: number): number {
  while (i < end && line[i] === SPACE) i++;
  return i;
}

/** End of the plain string whose opening quote is at `at` (past its closing quote), or -1. */
function stringEnd(line: Buffer, at: number, end: number): number {
  let i = at + 1;
  while (i < end && isPlain(line[i] as number)) i++;
  return i < end && line[i] === QUOTE ? i + 1 : -1;
}

/** A fixed set of ASCII names, each found from its bytes without making a string. */
export class ByteNames {
  /** The names as bytes with their indexes, grouped by length. */
  private readonly byLength: { bytes: Buffer; index: number }[][] = [];

  constructor(names: readonly string[]) {
    names.forEach((name, index) => (this.byLength[name.length] ??= []).push({ bytes: Buffer.from(name, 'latin1'), index }));
  }

  /** The index in the names of the one line[from, to) spells, or -1. */
  indexOf(line: Buffer, from: number, to: number): number {
    const candidates = this.byLength[to - from];
    if (candidates === undefined) return -1;
    for (const { bytes, index } of candidates) if (bytesEqual(line, from, to, bytes)) return index;
    return -1;
  }
}

/** Where each wanted field's value was found in the last line read (indexes are the wanted names' order). */
export class FlatFields {
  readonly kind: Uint8Array;
  /** For strings the characters between the quotes; for numbers and literals the token. */
  readonly start: Int32Array;
  readonly end: Int32Array;
  private readonly wanted: ByteNames;

  constructor(wanted: readonly string[]) {
    this.kind = new Uint8Array(wanted.length);
    this.start = new Int32Array(wanted.length);
    this.end = new Int32Array(wanted.length);
    this.wanted = new ByteNames(wanted);
  }

  /**
   * Reads line[start, end) (no line terminator); true when it is a flat object of plain values, and the wanted
   * fields' places are recorded. False: the caller must read the line another way.
   */
  read(line: Buffer, start: number, end: number): boolean {
    this.kind.fill(ABSENT);
    let i = skipSpace(line, start, end);
    if (line[i] !== 123 /* { */ || i >= end) return false;
    i = skipSpace(line, i + 1, end);
    if (line[i] === 125 /* } */ && i < end) return skipSpace(line, i + 1, end) === end;
    for (;;) {
      if (i >= end || line[i] !== QUOTE) return false;
      const keyEnd = stringEnd(line, i, end);
      if (keyEnd < 0) return false;
      const field = this.wanted.indexOf(line, i + 1, keyEnd - 1);
      i = skipSpace(line, keyEnd, end);
      if (i >= end || line[i] !== 58 /* : */) return false;
      i = skipSpace(line, i + 1, end);
      if (i >= end) return false;
      const c = line[i] as number;
      let kind = STRING;
      let from = i + 1;
      let to: number;
      if (c === QUOTE) {
        const close = stringEnd(line, i, end);
        if (close < 0) return false;
        to = close - 1;
        i = close;
      } else if (c === MINUS || isDigit(c)) {
        kind = NUMBER;
        from = i;
        to = i = numberEnd(line, i, end);
        if (to < 0) return false;
      } else {
        const literal = LITERALS.find(([text]) => bytesEqual(line, i, Math.min(i + text.length, end), text));
        if (literal === undefined) return false;
        kind = literal[1];
        from = i;
        to = i += literal[0].length;
      }
      // A repeated key: the last one counts, as with JSON.parse.
      if (field >= 0) {
        this.kind[field] = kind;
        this.start[field] = from;
        this.end[field] = to;
      }
      i = skipSpace(line, i, end);
      if (i >= end) return false;
      if (line[i] === 125 /* } */) return skipSpace(line, i + 1, end) === end;
      if (line[i] !== 44 /* , */) return false;
      i = skipSpace(line, i + 1, end);
    }
  }
}

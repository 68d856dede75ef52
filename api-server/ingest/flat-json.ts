// A reader for the common shape of a sensor's JSON line: one flat object whose values are plain strings
// (no escapes), numbers, true, false or null. It keeps only the fields a parser asks for, so the others never
// become strings. Anything else — nesting, escapes, control characters, invalid JSON — returns undefined and
// the caller uses JSON.parse, so what a line means never depends on which reader read it. Pure.
import { BACKSLASH, CLOSE, COLON, COMMA, MINUS, OPEN, QUOTE, isDigit, numberEnd } from './json-grammar.ts';

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

/** Characters that end the fast path inside a string (escapes, control characters). */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const UNUSUAL = /[\u0000-\u001f\\]/;

/**
 * End (exclusive, past the closing quote) of the plain string starting at `at` (a quote), or -1. `clean`: the
 * line has no backslash or control character at all (one native scan per line), so no string needs checking.
 */
function plainStringEnd(line: string, at: number, clean: boolean): number {
  const close = line.indexOf('"', at + 1);
  if (close < 0) return -1;
  if (clean) return close + 1;
  for (let i = at + 1; i < close; i++) {
    const c = line.charCodeAt(i);
    if (c < 32 || c === BACKSLASH) return -1;
  }
  return close + 1;
}

// V8 makes a slice of 13 or more characters a view that keeps its whole line alive; values a caller keeps
// (addresses, sensor names in rollups and caches) would then pin every line they came from.
const SHORTEST_VIEW = 13;

/** line[from, to) as a string of its own: sliced from a copy only as long as itself. */
function ownString(line: string, from: number, to: number): string {
  return to - from < SHORTEST_VIEW ? line.slice(from, to) : ` ${line.slice(from, to)}`.slice(1);
}

function skipSpace(line: string, at: number): number {
  while (at < line.length && isSpace(line.charCodeAt(at))) at++;
  return at;
}

interface Wanted {
  /** The wanted names grouped by length: a key in a line is matched in place, without slicing it into a string. */
  byLength: (string[] | undefined)[];
  /**
   * Every wanted name, undefined: each result starts as a copy of it, so that all results share one shape and
   * the caller's reads of their fields stay monomorphic (lines list their fields in varying orders).
   */
  template: Record<string, unknown>;
}
const compiled = new WeakMap<ReadonlySet<string>, Wanted>();

function compile(wanted: ReadonlySet<string>): Wanted {
  const byLength: Wanted['byLength'] = [];
  const template: Record<string, unknown> = {};
  for (const name of wanted) {
    (byLength[name.length] ??= []).push(name);
    template[name] = undefined;
  }
  return { byLength, template };
}

/** The wanted name spelled by line[from, to), or undefined. */
function wantedName(byLength: Wanted['byLength'], line: string, from: number, to: number): string | undefined {
  const names = byLength[to - from];
  if (names === undefined) return undefined;
  for (const name of names) if (line.startsWith(name, from)) return name;
  return undefined;
}

/**
 * The fields of `line` named in `wanted`, as JSON.parse would give them, when the line is a flat object of
 * plain values; undefined otherwise (the caller then parses it in full). A wanted field the line lacks is
 * present and undefined. String values of the fields in `kept` (default: all) are copies of their own; the
 * others may be views into the line, for values the caller drops with the line.
 */
export function readFlatObject(line: string, wanted: ReadonlySet<string>, kept: ReadonlySet<string> = wanted): Record<string, unknown> | undefined {
  let compiledWanted = compiled.get(wanted);
  if (compiledWanted === undefined) compiled.set(wanted, (compiledWanted = compile(wanted)));
  const { byLength, template } = compiledWanted;
  const out: Record<string, unknown> = { ...template };
  const clean = !UNUSUAL.test(line);
  let i = skipSpace(line, 0);
  if (line.charCodeAt(i) !== OPEN) return undefined;
  i = skipSpace(line, i + 1);
  if (line.charCodeAt(i) === CLOSE) return skipSpace(line, i + 1) === line.length ? out : undefined;
  for (;;) {
    if (line.charCodeAt(i) !== QUOTE) return undefined;
    const keyEnd = plainStringEnd(line, i, clean);
    if (keyEnd < 0) return undefined;
    const key = wantedName(byLength, line, i + 1, keyEnd - 1);
    i = skipSpace(line, keyEnd);
    if (line.charCodeAt(i) !== COLON) return undefined;
    i = skipSpace(line, i + 1);
    const c = line.charCodeAt(i);
    let end: number;
    let value: unknown;
    if (c === QUOTE) {
      end = plainStringEnd(line, i, clean);
      if (end < 0) return undefined;
      if (key !== undefined) value = kept.has(key) ? ownString(line, i + 1, end - 1) : line.slice(i + 1, end - 1);
    } else if (c === MINUS || isDigit(c)) {
      end = numberEnd((k) => line.charCodeAt(k), i);
      if (end < 0) return undefined;
      if (key !== undefined) value = Number(line.slice(i, end));
    } else if (line.startsWith('true', i)) {
      end = i + 4;
      value = true;
    } else if (line.startsWith('false', i)) {
      end = i + 5;
      value = false;
    } else if (line.startsWith('null', i)) {
      end = i + 4;
      value = null;
    } else return undefined;
    if (key !== undefined) out[key] = value;
    i = skipSpace(line, end);
    const next = line.charCodeAt(i);
    if (next === CLOSE) return skipSpace(line, i + 1) === line.length ? out : undefined;
    if (next !== COMMA) return undefined;
    i = skipSpace(line, i + 1);
  }
}

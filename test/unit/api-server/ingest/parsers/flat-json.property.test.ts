// The byte scanner of plain JSON lines (FlatFields): wherever it answers, what it records is what JSON.parse
// reads, and it answers for every plain flat object.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ABSENT, FALSE, FlatFields, NULL, NUMBER, STRING, TRUE } from '../../../../../api-server/ingest/parsers/flat-json.ts';

const WANTED = ['a', 'bb', 'key', 'other', 'z'.repeat(63)];
const KEYS = [...WANTED, 'unwanted', 'A', 'b', 'keys'];

/** The wanted fields as FlatFields recorded them, as JSON values (undefined where absent). */
function recorded(fields: FlatFields, bytes: Buffer): unknown[] {
  return WANTED.map((_, f) => {
    const text = bytes.toString('latin1', fields.start[f], fields.end[f]);
    switch (fields.kind[f]) {
      case ABSENT:
        return undefined;
      case STRING:
        return text;
      case NUMBER:
        // The token itself, nothing around it (Number() would forgive spaces).
        expect(text).toMatch(/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/);
        return Number(text);
      case TRUE:
        return text === 'true' ? true : text;
      case FALSE:
        return text === 'false' ? false : text;
      case NULL:
        return text === 'null' ? null : text;
      default:
        throw new Error(`kind ${fields.kind[f]}`);
    }
  });
}

/** What JSON.parse gives for the wanted fields, or undefined when the text is not a JSON object. */
function parsed(text: string): unknown[] | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  return WANTED.map((k) => (Object.hasOwn(v, k) ? (v as Record<string, unknown>)[k] : undefined));
}

/** Reads `text` placed at an offset inside a larger buffer; the recorded fields, or undefined if refused. */
function read(fields: FlatFields, text: string, before = 7): unknown[] | undefined {
  const bytes = Buffer.concat([Buffer.from('x'.repeat(before)), Buffer.from(text), Buffer.from('"}x')]);
  return fields.read(bytes, before, before + Buffer.byteLength(text)) ? recorded(fields, bytes) : undefined;
}

/** Printable ASCII but the quote and the backslash: what a plain string holds. */
const plainString = fc.string({ unit: fc.integer({ min: 32, max: 126 }).filter((c) => c !== 34 && c !== 92).map((c) => String.fromCharCode(c)), maxLength: 40 });
const plainValue = fc.oneof(plainString, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
const space = fc.constantFrom('', ' ', '  ');
/** A flat object of plain values as JSON text, with random spacing and sometimes a repeated key. */
const plainLine = fc
  .tuple(fc.array(fc.tuple(fc.constantFrom(...KEYS), plainValue, space, space), { maxLength: 10 }), space, space)
  .map(([pairs, s1, s2]) => `${s1}{${pairs.map(([k, v, a, b]) => `${a}${JSON.stringify(k)}${b}:${a}${JSON.stringify(v)}${b}`).join(',')}${s2}}${s1}`);
/** Numbers as JSON writers may spell them, and near misses. */
const numberText = fc.constantFrom('0', '-0', '12', '-12', '1.5', '1e5', '1E+5', '1e-5', '-0.0e0', '01', '1.', '.5', '-', '+1', '1e', '1e+', '0x1', '1.5.5', '--1', '1ee5');

describe('the flat JSON scanner', () => {
  it('reads every plain flat object, as JSON.parse does', () => {
    const fields = new FlatFields(WANTED);
    fc.assert(
      fc.property(plainLine, fc.nat(20), (line, before) => {
        expect(read(fields, line, before)).toEqual(parsed(line));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads numbers by JSON’s grammar', () => {
    const fields = new FlatFields(WANTED);
    fc.assert(
      fc.property(numberText, space, (n, s) => {
        const line = `{"a":${s}${n}${s},"bb":1}`;
        const answer = read(fields, line);
        if (answer !== undefined) expect(answer).toEqual(parsed(line));
        // Every valid number is read.
        else expect(parsed(line)).toBeUndefined();
      }),
    );
  });

  it('never answers differently from JSON.parse on mutated and truncated lines', () => {
    const fields = new FlatFields(WANTED);
    const mutation = fc.tuple(fc.nat(), fc.constantFrom('', '"', '\\', ',', ':', '{', '}', '[', 'é', '\u0001', '\t', '\\u0041', 'true', 'n', ' ', '1', '-'), fc.nat(3));
    fc.assert(
      fc.property(plainLine, mutation, (line, [at, insert, cut]) => {
        const i = at % (line.length + 1);
        const mutated = line.slice(0, i) + insert + line.slice(i + cut);
        const answer = read(fields, mutated);
        if (answer !== undefined) expect(answer).toEqual(parsed(mutated));
      }),
      { numRuns: 3000 },
    );
  });

  it('refuses what is not plain: nesting, escapes, characters outside printable ASCII', () => {
    const fields = new FlatFields(WANTED);
    for (const line of ['{"a":{}}', '{"a":[1]}', '{"a":"é"}', '{"\\u0061":1}', '{"a":"\\"x"}', '{"a":"\u0001"}', '{"a":"x\ty"}', '{"a":1}x', '[1]', '', '{', '{"a"}', '{"a":1,}'])
      expect(read(fields, line), line).toBeUndefined();
    expect(read(fields, '{}')).toEqual(WANTED.map(() => undefined));
  });
});

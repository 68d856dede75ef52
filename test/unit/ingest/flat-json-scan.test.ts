// The WebAssembly scanner behind FlatFields: its committed binary is its source compiled, and wherever it
// answers, what it records is what JSON.parse reads (and it answers for every plain flat object).
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ABSENT, FALSE, FlatFields, NULL, NUMBER, STRING, TRUE, decodeAscii } from '../../../api-server/ingest/flat-json-bytes.ts';
import { WASM_SOURCES, binaryPathOf, compileWat } from '../../../scripts/build-wasm.ts';

const WANTED = ['a', 'bb', 'key', 'other', 'z'.repeat(63)];
const KEYS = [...WANTED, 'unwanted', 'A', 'b', 'keys'];

/** The wanted fields as FlatFields recorded them, as JSON values (undefined where absent). */
function recorded(fields: FlatFields, bytes: Buffer): unknown[] {
  const scratch = Buffer.alloc(bytes.length);
  return WANTED.map((_, f) => {
    const text = bytes.toString('latin1', fields.start[f], fields.end[f]);
    switch (fields.kind[f]) {
      case ABSENT:
        return undefined;
      case STRING: {
        // `escaped` marks exactly the strings that hold a backslash.
        expect(fields.escaped[f]).toBe(text.includes('\\') ? 1 : 0);
        if (!fields.escaped[f]) return text;
        const n = decodeAscii(bytes, fields.start[f] as number, fields.end[f] as number, scratch);
        // decodeAscii leaves NUL and escaped characters beyond ASCII to the general path: valid all the same.
        if (n < 0) {
          const value = JSON.parse(`"${text}"`) as string;
          expect(value).toMatch(/[\0\x7f-\uffff]/);
          return value;
        }
        return scratch.toString('latin1', 0, n);
      }
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
  const start = before;
  const end = before + Buffer.byteLength(text);
  return fields.read(bytes, start, end) ? recorded(fields, bytes) : undefined;
}

// JSON.stringify escapes control characters; DEL (127) it writes as it is, and that is not plain.
const plainString = fc.string({ unit: fc.integer({ min: 0, max: 126 }).map((c) => String.fromCharCode(c)), maxLength: 40 });
const plainValue = fc.oneof(plainString, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
const space = fc.constantFrom('', ' ', '\t', '  ', '\r');
/** A flat object of plain ASCII values as JSON text, with random spacing and sometimes a repeated key. */
const plainLine = fc
  .tuple(fc.array(fc.tuple(fc.constantFrom(...KEYS), plainValue, space, space), { maxLength: 10 }), space, space)
  .map(([pairs, s1, s2]) => `${s1}{${pairs.map(([k, v, a, b]) => `${a}${JSON.stringify(k)}${b}:${a}${JSON.stringify(v)}${b}`).join(',')}${s2}}${s1}`);
/** Numbers as JSON writers may spell them, and near misses. */
const numberText = fc.constantFrom('0', '-0', '12', '-12', '1.5', '1e5', '1E+5', '1e-5', '-0.0e0', '01', '1.', '.5', '-', '+1', '1e', '1e+', '0x1', '1.5.5', '--1', '1ee5');

describe('the JSON scanner (flat-json-scan.wat)', () => {
  it('is checked in exactly as compiled (run `make wasm` after changing a .wat file)', async () => {
    for (const source of WASM_SOURCES) expect(readFileSync(binaryPathOf(source))).toEqual(Buffer.from(await compileWat(source)));
  });

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
        expect(read(fields, line)).toEqual(parsed(line));
      }),
    );
  });

  it('never answers differently from JSON.parse on mutated and truncated lines', () => {
    const fields = new FlatFields(WANTED);
    const mutation = fc.tuple(fc.nat(), fc.constantFrom('', '"', '\\', ',', ':', '{', '}', '[', 'é', '\u0001', '\\u00e9', '\\u0041', '\\x', 'true', 'n', ' '), fc.nat(3));
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

  it('refuses what is not plain: nesting, characters outside ASCII, escaped keys, control characters', () => {
    const fields = new FlatFields(WANTED);
    for (const line of ['{"a":{}}', '{"a":[1]}', '{"a":"é"}', '{"\\u0061":1}', '{"a":"\u0001"}', '{"a":"x\ty"}', '{"a":1}x', '[1]', '', '{', '{"a"}', '{"a":1,}'])
      expect(read(fields, line), line).toBeUndefined();
    expect(read(fields, '{}')).toEqual(WANTED.map(() => undefined));
    expect(read(fields, '{"a":"say \\"hi\\"\\n\\u0041"}')?.[0]).toBe('say "hi"\nA');
  });

  it('leaves lines longer than its memory (131,056 bytes) to the general path', () => {
    const fields = new FlatFields(WANTED);
    const line = (length: number) => `{"a":"${'x'.repeat(length - 8)}"}`;
    expect(read(fields, line(131_056))?.[0]).toHaveLength(131_048);
    expect(read(fields, line(131_057))).toBeUndefined();
  });

  it('never reads what an earlier, longer line left behind', () => {
    const fields = new FlatFields(WANTED);
    const debris = `{"a":"${'"\\}'.repeat(1000)}"}`;
    for (const truncated of ['{"a":"xx', '{"a":"x\\', '{"a":"\\u00', '{"a":1', '{"a":tru', '{"a":', '{"a"', '{']) {
      read(fields, debris);
      expect(read(fields, truncated), truncated).toBeUndefined();
    }
  });

  it('refuses wanted names it cannot match', () => {
    expect(() => new FlatFields(['x'.repeat(64)])).toThrow(/not a plain key/);
    expect(() => new FlatFields(Array.from({ length: 65 }, (_, i) => `k${i}`))).toThrow(/at most 64/);
  });
});

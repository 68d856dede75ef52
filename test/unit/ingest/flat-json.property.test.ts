// The flat reader must never change what a line means: wherever it answers, its fields equal JSON.parse's,
// and the Cowrie parser gives the same result (event, skip or error) with either reader.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonObject } from '../../../api-server/ingest/event.ts';
import { readFlatObject } from '../../../api-server/ingest/flat-json.ts';
import { COWRIE_FIELDS, cowrieParser } from '../../../api-server/ingest/formats/cowrie.ts';
import { cowrieLines } from '../../../bench/cowrie-gen.ts';

const sample = (name: string) => fileURLToPath(new URL(`../../../examples/sensor-logs/${name}`, import.meta.url));
const WANTED = new Set(['a', 'b', 'eventid', 'src_ip', 'dst_port', '__proto__x']);

/** What JSON.parse gives for the wanted fields, or 'invalid' when it throws or the line is not an object. */
function viaJsonParse(line: string, wanted: ReadonlySet<string>): Record<string, unknown> | 'invalid' {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return 'invalid';
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return 'invalid';
  // (the flat reader gives every wanted field, undefined when the line lacks it)
  const out: Record<string, unknown> = Object.fromEntries([...wanted].map((k) => [k, undefined]));
  for (const [k, x] of Object.entries(v)) if (wanted.has(k)) out[k] = x;
  return out;
}

function expectSameAsJsonParse(line: string, wanted: ReadonlySet<string> = WANTED): boolean {
  const fast = readFlatObject(line, wanted);
  if (fast === undefined) return false;
  expect(fast).toStrictEqual(viaJsonParse(line, wanted));
  return true;
}

/** Both Cowrie parsers over the same lines, in order (their session memory included). */
function expectSameCowrieResults(lines: Iterable<string>): void {
  const fast = cowrieParser({});
  const full = cowrieParser({}, parseJsonObject);
  for (const line of lines) expect(fast(line), line).toStrictEqual(full(line));
}

const key = fc.oneof(fc.constantFrom('a', 'b', 'eventid', 'src_ip', 'dst_port', 'other', '__proto__'), fc.string({ maxLength: 6 }));
const value = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom('\\', '"', '\n', '\u0000', 'é', '\ud800'),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);
const spacing = fc.constantFrom('', ' ', '  ', '\t', '\r\n');

describe('readFlatObject', () => {
  it('gives the wanted fields exactly as JSON.parse does, for generated objects in any spacing', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, value), { maxLength: 8 }), spacing, spacing, (pairs, s1, s2) => {
        const body = pairs.map(([k, v]) => `${JSON.stringify(k)}${s1}:${s2}${JSON.stringify(v)}`).join(`${s1},${s2}`);
        expectSameAsJsonParse(`${s2}{${s1}${body}${s2}}${s1}`);
      }),
      { numRuns: 2000 },
    );
  });

  it('answers only for lines JSON.parse accepts, with the same fields (mutated and truncated lines)', () => {
    const base = '{"eventid":"cowrie.login.failed","src_ip":"1.2.3.4","dst_port":22,"a":true,"b":null,"c":-1.5e3}';
    fc.assert(
      fc.property(fc.nat({ max: base.length }), fc.nat({ max: base.length }), fc.string({ maxLength: 3 }), (at, cut, insert) => {
        const line = base.slice(0, at) + insert + base.slice(at);
        expectSameAsJsonParse(line);
        expectSameAsJsonParse(base.slice(0, cut));
      }),
      { numRuns: 3000 },
    );
  });

  it('reads most of the generator’s Cowrie lines itself (escaped quotes go to JSON.parse)', () => {
    let read = 0;
    for (const line of cowrieLines(2000, 7, Date.UTC(2026, 0, 10))) if (expectSameAsJsonParse(line, COWRIE_FIELDS)) read++;
    expect(read).toBeGreaterThan(1800);
  });
});

describe('the Cowrie parser with the flat reader', () => {
  it('gives the same result as with JSON.parse on the sample log', () => {
    expectSameCowrieResults(readFileSync(sample('cowrie.json'), 'utf8').split('\n').filter((l) => l.trim() !== ''));
  });

  it('gives the same result as with JSON.parse on generated Cowrie lines', () => {
    expectSameCowrieResults(cowrieLines(5000, 11, Date.UTC(2026, 0, 10)));
  });

  it('gives the same result as with JSON.parse on lines with unusual values', () => {
    const odd = fc.record({
      eventid: fc.constantFrom('cowrie.session.connect', 'cowrie.login.failed', 'cowrie.command.input', 'cowrie.session.file_download', 'cowrie.direct-tcpip.request', 'x', 3),
      timestamp: fc.constantFrom('2026-01-09T10:00:00.123456Z', '2026-01-09 10:00:00', 1767952800, 'nope'),
      src_ip: fc.constantFrom('1.2.3.4', '::ffff:1.2.3.4', '2001:db8::1', 'bad', null),
      session: fc.constantFrom('s1', 's2'),
      dst_port: fc.oneof(fc.constantFrom(22, 2223, 23, '22', -1, 70000, 2.5, null)),
      protocol: fc.constantFrom('ssh', 'telnet'),
      username: fc.oneof(fc.string({ maxLength: 5 }), fc.constant(null)),
      input: fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('a\\b', 'tab\there', 'nul\u0000')),
      url: fc.string({ maxLength: 5 }),
      sensor: fc.constantFrom('hp-1', '', ' x '),
    }, { requiredKeys: ['eventid'] });
    fc.assert(
      fc.property(fc.array(odd, { maxLength: 6 }), (objects) => {
        expectSameCowrieResults(objects.map((o) => JSON.stringify(o)));
      }),
      { numRuns: 500 },
    );
  });
});

// The Cowrie byte reader must never change what a line means: over the same lines in the same order (so with
// the same session memory), bytes-first — as the pipeline reads — and the parser alone (on JSON.parse) give the
// same outcome per line, byte-identical COPY rows (so the same content-derived ids) and the same rollups.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressFacts } from '../../../../../api-server/ingest/address-facts.ts';
import { EventBatch } from '../../../../../api-server/ingest/batch.ts';
import { RawEvent, type LineParser, type ParserOptions } from '../../../../../api-server/ingest/event.ts';
import { MAX_PORTS } from '../../../../../api-server/ingest/hourly.ts';
import { cowrieParser } from '../../../../../api-server/ingest/parsers/cowrie/parse.ts';
import { SensorNames } from '../../../../../api-server/ingest/sensors.ts';
import { cowrieLines } from '../../../../../bench/cowrie-gen.ts';

const sample = fileURLToPath(new URL('../../../../../examples/sensor-logs/cowrie.json', import.meta.url));
const realLog = fileURLToPath(new URL('../../../../fixtures/sensor-logs/cowrie-3.1.4.json', import.meta.url));

interface Way {
  outcomes: string[];
  batch: EventBatch;
  facts: AddressFacts;
  /** Lines the byte reader took (event or skip). */
  byBytes: number;
}

/** A way of reading lines, one at a time, into batches and facts of its own. */
function reader(parser: LineParser, useBytes: boolean): { way: Way; read: (line: string) => void } {
  const facts = new AddressFacts(16);
  const sensors = new SensorNames();
  const way: Way = { outcomes: [], batch: new EventBatch(facts, sensors), facts, byBytes: 0 };
  const raw = new RawEvent();
  const read = (line: string) => {
    const buf = Buffer.from(line);
    const r = useBytes && parser.bytes ? parser.bytes(buf, 0, buf.length, raw) : 'declined';
    if (r === 'event') {
      way.byBytes++;
      way.batch.addRaw(raw);
      way.outcomes.push('event');
    } else if (r === 'skip') {
      way.byBytes++;
      way.outcomes.push('skip');
    } else {
      const result = parser.line(line);
      if ('event' in result) way.batch.add(result.event);
      way.outcomes.push('event' in result ? 'event' : 'skip' in result ? 'skip' : `error: ${result.error}`);
    }
  };
  return { way, read };
}

function run(lines: readonly string[], parser: LineParser, useBytes: boolean): Way {
  const { way, read } = reader(parser, useBytes);
  for (const line of lines) read(line);
  return way;
}

/** Everything a batch hands to the database, in comparable form. */
function stored(way: Way) {
  const { batch, facts } = way;
  const h = batch.hourly;
  const hourly = Array.from({ length: h.count }, (_, r) => [
    h.slot[r], h.hour[r], h.attacks[r], h.services[r], h.sources[r], h.maxAction[r],
    [...h.ports.subarray(r * MAX_PORTS, r * MAX_PORTS + (h.portCount[r] as number))], h.sensors[r]?.slice(0, h.sensorCount[r]), h.firstSeen[r], h.lastSeen[r],
  ]);
  const addresses = Array.from({ length: facts.size }, (_, s) => {
    const n = facts.orderSensors(s, (local) => local);
    return [
      facts.address(s).text, facts.firstSeen[s], facts.lastSeen[s], facts.lastHoneypot[s], facts.lastInteraction[s], facts.lastHigh[s],
      facts.lastCritical[s], [...facts.sensorLocal.subarray(s * 8, s * 8 + n)], [...facts.sensorTime.subarray(s * 8, s * 8 + n)],
    ];
  });
  return { rows: batch.rows().toString('hex'), hourly, addresses, days: [...batch.days] };
}

/** Reads `lines` both ways; returns how many lines the byte reader took. */
function expectSameBothWays(lines: readonly string[], options: ParserOptions = {}): number {
  const bytesFirst = run(lines, cowrieParser(options), true);
  const general = run(lines, cowrieParser(options), false);
  expect(bytesFirst.outcomes).toEqual(general.outcomes);
  expect(stored(bytesFirst)).toEqual(stored(general));
  return bytesFirst.byBytes;
}

const T = '2026-01-09T10:00:00.123456Z';
const field = {
  eventid: fc.constantFrom(
    'cowrie.session.connect', 'cowrie.login.failed', 'cowrie.login.success', 'cowrie.command.input', 'cowrie.command.failed',
    'cowrie.session.file_download', 'cowrie.session.file_download.failed', 'cowrie.session.file_upload', 'cowrie.session.closed',
    'cowrie.direct-tcpip.request', 'cowrie.client.version', 'toString', '__proto__', 'x',
  ),
  timestamp: fc.oneof(
    fc.constant(T),
    fc.constantFrom('2026-01-09T10:00:00Z', '2026-01-09T10:00:00.1Z', '2026-01-09T10:00:00.Z', '2026-02-29T10:00:00Z', '2028-02-29T00:00:00.999Z',
      '1999-12-31T23:59:59Z', '2099-01-01T00:00:00Z', '2026-01-09 10:00:00', '2026-01-09T10:00:00+01:00', '2026-13-01T00:00:00Z',
      '2026-01-09T24:00:00Z', '2O26-01-09T10:00:00Z', '', 1767952800),
  ),
  src_ip: fc.constantFrom('1.2.3.4', '203.0.113.77', '255.255.255.255', '0.0.0.0', '01.2.3.4', ' 1.2.3.4', '1.2.3', '1.2.3.256', '::ffff:1.2.3.4', '2001:db8::1', 'bad', '', null, 7),
  session: fc.constantFrom('s1', 's2', 'a1b2c3d4e5f6', 4),
  dst_port: fc.constantFrom(22, 2222, 23, 80, 0, 65535, 65536, -1, 2.5, 22.0, 1e2, '22', null),
  protocol: fc.constantFrom('ssh', 'telnet', 'Telnet', null),
  username: fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom(null, 3, 'rööt', 'x'.repeat(4097))),
  input: fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('a\\b', 'tab\there', 'nul\u0000', 'é', 'echo "a\\b"', '\u007f\u0001', null, 5, 'x'.repeat(4096), 'x'.repeat(4097), '"'.repeat(4096), '"'.repeat(4097))),
  url: fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom(' http://x ', 'http://198.51.100.9/a', '', null, 9)),
  filename: fc.constantFrom('/tmp/x', null, '', 3),
  outfile: fc.constantFrom('dl/abc', null),
  sensor: fc.constantFrom('hp-1', 'hp-2', '', ' x ', 'x ', 'ü', 's'.repeat(128), 's'.repeat(129), null, 12),
};
const cowrieObject = fc.record(field, { requiredKeys: ['eventid'] });

/** JSON text of an object, with random spacing, and sometimes a key repeated with another value. */
const cowrieLine = fc
  .tuple(
    cowrieObject,
    fc.constantFrom('', ' ', '\t'),
    fc.option(fc.tuple(fc.constantFrom(...Object.keys(field)), fc.constantFrom('"hp-9"', '23', 'null', '"cowrie.login.failed"'))),
    // Characters written as \u escapes (in keys and values alike), as some JSON writers do.
    fc.constantFrom('', 'o', 'r', '/', ':'),
  )
  .map(([o, space, repeat, escapedChar]) => {
    const pairs = Object.entries(o).map(([k, v]) => `${JSON.stringify(k)}:${space}${JSON.stringify(v)}`);
    if (repeat) pairs.push(`"${repeat[0]}":${repeat[1]}`);
    const line = `{${space}${pairs.join(`,${space}`)}${space}}`;
    if (escapedChar === '') return line;
    const u = `\\u${escapedChar.charCodeAt(0).toString(16).padStart(4, '0')}`;
    // Inside strings only: between a quote and the next one, outside escapes.
    return line.replace(/"(?:[^"\\]|\\.)*"/g, (str) => str.replaceAll(escapedChar, u));
  });

describe('the Cowrie byte reader', () => {
  it('reads the generator’s lines itself, exactly as the parser does', () => {
    const lines = [...cowrieLines(5000, 11, Date.UTC(2026, 0, 10))];
    expect(expectSameBothWays(lines)).toBeGreaterThan(lines.length * 0.95);
  });

  // They share one scanner: nothing of a line's scan may outlive the line (no cache of the last line, say).
  it('gives each of two parsers taking turns on one thread what it gives alone', () => {
    const a = [...cowrieLines(300, 5, Date.UTC(2026, 0, 10))];
    const b = [...cowrieLines(300, 6, Date.UTC(2026, 0, 11))];
    const alone = [run(a, cowrieParser({}), true), run(b, cowrieParser({}), true)];
    const [ra, rb] = [reader(cowrieParser({}), true), reader(cowrieParser({}), true)];
    a.forEach((line, i) => {
      ra.read(line);
      rb.read(b[i] as string);
    });
    expect([ra.way, rb.way].map((w) => [w.outcomes, w.byBytes, stored(w)])).toEqual(alone.map((w) => [w.outcomes, w.byBytes, stored(w)]));
  });

  it('gives what the parser gives on the sample log', () => {
    expectSameBothWays(readFileSync(sample, 'utf8').split('\n').filter((l) => l.trim() !== ''));
  });

  it('gives what the parser gives on a real Cowrie log, ids counting connections or not', () => {
    const lines = readFileSync(realLog, 'utf8').split('\n').filter((l) => l.trim() !== '');
    const midway = Date.parse('2026-11-27T23:58:42Z');
    for (const legacyIdsUntil of [undefined, midway, Infinity]) expect(expectSameBothWays(lines, { legacyIdsUntil })).toBeGreaterThan(0);
  });

  it('gives what the parser gives on lines with unusual values, spacing and repeated keys', () => {
    fc.assert(
      // The legacy cut-over: before, at or after the lines' usual time, or none.
      fc.property(fc.array(cowrieLine, { maxLength: 8 }), fc.constantFrom(undefined, Date.parse(T) - 1, Date.parse(T), Infinity), (lines, legacyIdsUntil) => {
        expectSameBothWays(lines, { legacyIdsUntil });
      }),
      { numRuns: 3000 },
    );
    // Thousands of runs: room for a busy machine.
  }, 30_000);

  it('gives what the parser gives on mutated and truncated lines', () => {
    const base = `{"eventid":"cowrie.login.failed","timestamp":"${T}","src_ip":"1.2.3.4","session":"s1","username":"root","sensor":"hp-1"}`;
    fc.assert(
      fc.property(fc.nat({ max: base.length }), fc.nat({ max: base.length }), fc.string({ maxLength: 3 }), (at, cut, insert) => {
        expectSameBothWays([base.slice(0, at) + insert + base.slice(at), base.slice(0, cut)]);
      }),
      { numRuns: 3000 },
    );
  }, 30_000);
});

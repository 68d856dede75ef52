// Content-derived event ids (docs/data-model.md "Event ids"): attempts that differ only in the connection they
// came on (Cowrie's session, OpenCanary's source port) are different events; the same line read again is the
// same event; and events up to the store's legacy cut-over keep the ids they were stored with before ids
// counted connections.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressFacts } from '../../../../api-server/ingest/address-facts.ts';
import { EventBatch } from '../../../../api-server/ingest/batch.ts';
import { eventId, RawEvent, type AttackEvent, type ParserOptions } from '../../../../api-server/ingest/event.ts';
import { parserFor, type InputFormat } from '../../../../api-server/ingest/parsers/index.ts';
import { SensorNames } from '../../../../api-server/ingest/sensors.ts';
import { parseAddress } from '../../../../common/ip.ts';

const sample = (name: string) => readFileSync(fileURLToPath(new URL(`../../../../examples/sensor-logs/${name}`, import.meta.url)), 'utf8');

/** The id of one line read by a fresh parser, through the parser (JSON.parse). */
function parsedId(format: InputFormat, line: string, options: ParserOptions = {}): string {
  const r = parserFor(format, options).line(line);
  if (!('event' in r)) throw new Error(`not an event: ${JSON.stringify(r)}`);
  return r.event.id;
}

/** The stored row (id included) of one Cowrie line read by a fresh parser's byte reader; undefined if it declines. */
function byteRow(line: string, options: ParserOptions = {}): string | undefined {
  const parser = parserFor('cowrie', options);
  const raw = new RawEvent();
  const buf = Buffer.from(line);
  if (parser.bytes?.(buf, 0, buf.length, raw) !== 'event') return undefined;
  const batch = new EventBatch(new AddressFacts(4), new SensorNames());
  batch.addRaw(raw);
  return batch.rows().toString('hex');
}

const T = '2026-11-27T23:58:40.123456Z';
const word = fc.stringMatching(/^[a-z0-9]{1,12}$/);
const sessionId = fc.stringMatching(/^[0-9a-f]{12}$/);
const port = fc.integer({ min: 1024, max: 65535 });

const cowrieLogin = (session: string, srcPort: number, username: string) =>
  JSON.stringify({
    session, protocol: 'ssh', src_ip: '198.51.100.7', src_port: srcPort, dst_ip: '192.0.2.1', dst_port: 2222, username, password: 'x',
    eventid: 'cowrie.login.failed', sensor: 'hp-1', timestamp: T, message: 'login attempt failed',
  });

const canaryLogin = (srcPort: number, username: string) =>
  JSON.stringify({
    dst_host: '192.0.2.1', dst_port: 22, local_time: '2026-11-27 23:58:40.123456', logdata: { USERNAME: username, PASSWORD: 'x' },
    logtype: 4002, node_id: 'canary-1', src_host: '198.51.100.7', src_port: srcPort, utc_time: '2026-11-27 23:58:40.123456',
  });

describe('event ids', () => {
  const event = fc.record({
    ts: fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }),
    dstPort: fc.option(port),
    username: fc.option(fc.string({ maxLength: 6 })),
    command: fc.option(fc.string({ maxLength: 6 })),
    connection: fc.option(fc.string({ maxLength: 12 })),
  }).map((r): Omit<AttackEvent, 'id'> => ({
    ...r, src: parseAddress('203.0.113.5')!, service: 'ssh', proto: 'tcp', source: 'honeypot', sensor: 'hp-1', action: 1,
  }));

  it('differ when only the connection differs, and not when nothing does', () => {
    fc.assert(
      fc.property(event, fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (e, a, b) => {
        fc.pre(a !== b);
        expect(eventId({ ...e, connection: a })).not.toBe(eventId({ ...e, connection: b }));
        expect(eventId({ ...e })).toBe(eventId(e));
      }),
    );
  });

  it('are what they were before connections counted, for an event without one', () => {
    fc.assert(
      fc.property(event, (e) => {
        expect(eventId({ ...e, connection: null })).toBe(eventId({ ...e, connection: undefined }));
      }),
    );
    // Ids of the sample logs' first events as stored before ids counted connections.
    const [cowrieLine] = sample('cowrie.json').split('\n');
    const canaryLine = sample('opencanary.json').split('\n')[1] as string;
    expect(parsedId('cowrie', cowrieLine as string, { legacyIdsUntil: Infinity })).toBe('1b10b1d3-9c37-9eb3-01e2-abee0d1c2648');
    expect(parsedId('opencanary', canaryLine, { legacyIdsUntil: Infinity })).toBe('a4a65f9c-bcb4-b92e-2b83-14ba05b08795');
    expect(parsedId('cowrie', cowrieLine as string)).not.toBe('1b10b1d3-9c37-9eb3-01e2-abee0d1c2648');
  });

  it('of Cowrie lines alike but for their session differ, through the parser and the byte reader; the same line gives the same id', () => {
    fc.assert(
      fc.property(sessionId, sessionId, port, port, word, (s1, s2, p1, p2, user) => {
        fc.pre(s1 !== s2);
        const [a, b] = [cowrieLogin(s1, p1, user), cowrieLogin(s2, p2, user)];
        expect(parsedId('cowrie', a)).not.toBe(parsedId('cowrie', b));
        expect(parsedId('cowrie', a)).toBe(parsedId('cowrie', a));
        const [rowA, rowB] = [byteRow(a), byteRow(b)];
        expect(rowA).toBeDefined();
        expect(rowA).not.toBe(rowB);
        expect(byteRow(a)).toBe(rowA);
      }),
      { numRuns: 200 },
    );
  });

  it('of OpenCanary lines alike but for their source port differ; the same line gives the same id', () => {
    fc.assert(
      fc.property(port, port, word, (p1, p2, user) => {
        fc.pre(p1 !== p2);
        expect(parsedId('opencanary', canaryLogin(p1, user))).not.toBe(parsedId('opencanary', canaryLogin(p2, user)));
        expect(parsedId('opencanary', canaryLogin(p1, user))).toBe(parsedId('opencanary', canaryLogin(p1, user)));
      }),
      { numRuns: 200 },
    );
  });

  it('up to the legacy cut-over leave the connection out, as the ids stored then did; after it count it', () => {
    const ts = Date.parse(T);
    const [a, b] = [cowrieLogin('aaaaaaaaaaaa', 40000, 'root'), cowrieLogin('bbbbbbbbbbbb', 40001, 'root')];
    const [c, d] = [canaryLogin(40000, 'root'), canaryLogin(40001, 'root')];
    for (const legacyIdsUntil of [ts, ts + 1]) {
      expect(parsedId('cowrie', a, { legacyIdsUntil })).toBe(parsedId('cowrie', b, { legacyIdsUntil }));
      expect(byteRow(a, { legacyIdsUntil })).toBe(byteRow(b, { legacyIdsUntil }));
      expect(parsedId('opencanary', c, { legacyIdsUntil })).toBe(parsedId('opencanary', d, { legacyIdsUntil }));
    }
    const after = { legacyIdsUntil: ts - 1 };
    expect(parsedId('cowrie', a, after)).not.toBe(parsedId('cowrie', b, after));
    expect(byteRow(a, after)).not.toBe(byteRow(b, after));
    expect(parsedId('opencanary', c, after)).not.toBe(parsedId('opencanary', d, after));
  });
});

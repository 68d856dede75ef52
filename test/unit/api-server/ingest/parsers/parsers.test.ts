import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventId, requireTime, type AttackEvent, type LineResult } from '../../../../../api-server/ingest/event.ts';
import { sessionKey, sessionKeyOfBytes } from '../../../../../api-server/ingest/parsers/cowrie/sessions.ts';
import { parserFor, type InputFormat } from '../../../../../api-server/ingest/parsers/index.ts';

const sample = (name: string) => fileURLToPath(new URL(`../../../../../examples/sensor-logs/${name}`, import.meta.url));

async function parseSample(name: string, format: InputFormat, sensor?: string) {
  const parse = parserFor(format, { sensor });
  const events: AttackEvent[] = [];
  const errors: string[] = [];
  let skipped = 0;
  const lines = readFileSync(sample(name), 'utf8').split('\n');
  lines.forEach((text, i) => {
    const line = text.endsWith('\r') ? text.slice(0, -1) : text;
    if (line.trim() === '') return;
    const r: LineResult = parse.line(line);
    if ('event' in r) events.push(r.event);
    else if ('error' in r) errors.push(`${i + 1}: ${r.error}`);
    else skipped++;
  });
  return { events, errors, skipped };
}

describe('cowrie parser on examples/sensor-logs/cowrie.json', () => {
  it('keeps connects, logins, commands and downloads; reports malformed lines by number', async () => {
    const { events, errors, skipped } = await parseSample('cowrie.json', 'cowrie');
    expect(skipped).toBe(2); // client.version, session.closed
    expect(events.map((e) => [e.src.text, e.action, e.service, e.dstPort])).toEqual([
      ['222.85.85.85', 0, 'ssh', 22],
      ['222.85.85.85', 1, 'ssh', 22],
      ['222.85.85.85', 1, 'ssh', 22],
      ['222.85.85.85', 2, 'ssh', 22],
      ['222.85.85.85', 2, 'ssh', 22],
      ['61.135.169.125', 0, 'telnet', 23],
      ['61.135.169.125', 1, 'telnet', 23],
      ['2001:db8::7', 0, 'ssh', 22],
    ]);
    expect(events[1]).toMatchObject({ username: 'root', sensor: 'hp-sh-01', source: 'honeypot', command: null });
    expect(events[3]?.command).toBe('uname -a; cat /proc/cpuinfo');
    expect(events[4]?.command).toBe('download http://198.51.100.23/bins/x86');
    expect(events[0]?.ts).toBe(Date.parse('2026-11-21T02:14:07.112Z'));
    expect(errors).toEqual([
      '10: src_ip "not-an-ip" is not an IP address',
      '11: timestamp "yesterday" is not an ISO 8601 time',
      expect.stringMatching(/^13: not valid JSON/),
      '14: eventid is missing',
    ]);
  });

  it('derives the same id from the same content and a different one from different content', async () => {
    const a = await parseSample('cowrie.json', 'cowrie');
    const b = await parseSample('cowrie.json', 'cowrie');
    expect(a.events.map((e) => e.id)).toEqual(b.events.map((e) => e.id));
    expect(new Set(a.events.map((e) => e.id)).size).toBe(a.events.length);
    const { id: _id, ...rest } = a.events[0] as AttackEvent;
    expect(eventId(rest)).toBe(a.events[0]?.id);
    expect(eventId({ ...rest, sensor: 'other' })).not.toBe(a.events[0]?.id);
  });
});

describe('opencanary parser on examples/sensor-logs/opencanary.json', () => {
  it('maps logtypes to actions and services, skips the canary’s own messages', async () => {
    const { events, errors, skipped } = await parseSample('opencanary.json', 'opencanary');
    expect(skipped).toBe(1);
    expect(events.map((e) => [e.src.text, e.dstPort, e.service, e.action, e.username])).toEqual([
      ['117.136.0.1', 21, null, 1, 'anonymous'],
      ['120.24.78.68', 3306, 'db', 1, 'root'],
      ['120.24.78.68', 6379, 'db', 2, null],
      ['202.112.0.1', 445, 'smb', 0, null],
      ['162.142.125.7', 80, 'web', 0, null],
      ['222.85.85.85', 3389, 'rdp', 1, 'administrator'],
    ]);
    expect(events[2]?.command).toBe('CONFIG SET dir /var/spool/cron');
    expect(events[0]).toMatchObject({ sensor: 'canary-bj-01', ts: Date.parse('2026-11-21T01:02:03.456Z') });
    expect(errors).toEqual(['8: utc_time is missing', '9: dst_port 99999 is not a port (0-65535)', '10: expected a JSON object']);
  });
});

describe('native parser on examples/sensor-logs/native.ndjson', () => {
  it('derives the action from username / command, honours a given id, validates the vocabulary', async () => {
    const { events, errors } = await parseSample('native.ndjson', 'native');
    expect(events.map((e) => [e.source, e.action, e.service, e.sensor])).toEqual([
      ['honeypot', 1, 'ssh', 'hp-gz-01'],
      ['honeypot', 2, 'ssh', 'hp-gz-01'],
      ['honeypot', 0, 'rdp', 'hp-gz-01'],
      ['telescope', 0, 'smb', 'tel-01'],
      ['honeypot', 1, 'db', 'hp-gz-01'],
    ]);
    expect(events[4]?.id).toBe('6f1c2a4e-8d3b-4c5a-9e7f-0a1b2c3d4e5f');
    expect(events[4]?.src.text).toBe('240e:47d:c20:1627::1');
    expect(errors).toEqual([
      '7: service "gopher" is not one of ssh, rdp, vnc, db, web, smb, telnet, mail, ics, ai, proxy',
      '8: source "darknet" is not one of honeypot, telescope',
      '9: sensor is missing (or pass --sensor)',
      expect.stringMatching(/^10: not valid JSON/),
    ]);
  });

  it('takes --sensor for lines without one', async () => {
    const { events, errors } = await parseSample('native.ndjson', 'native', 'hp-default');
    expect(errors).toHaveLength(3);
    expect(events.at(-1)?.sensor).toBe('hp-default');
  });
});

describe('telescope-csv parser on examples/sensor-logs/telescope.csv', () => {
  it('reads the header, epoch or ISO times, and names services by port', async () => {
    const { events, errors, skipped } = await parseSample('telescope.csv', 'telescope-csv');
    expect(skipped).toBe(1); // the header
    expect(events.map((e) => [e.src.text, e.dstPort, e.service, e.sensor, e.source, e.action])).toEqual([
      ['162.142.125.7', 443, 'web', 'tel-eu-01', 'telescope', 0],
      ['61.135.169.125', 23, 'telnet', 'tel-eu-01', 'telescope', 0],
      ['117.136.0.1', 445, 'smb', 'tel-as-01', 'telescope', 0],
      ['218.30.118.1', 3389, 'rdp', 'tel-as-01', 'telescope', 0],
      ['218.30.118.1', 8080, 'web', 'tel-as-01', 'telescope', 0],
    ]);
    expect(events[3]?.ts).toBe(1795237203000);
    expect(errors).toEqual([
      '8: src_ip "300.1.2.3" is not an IP address',
      '9: dst_port "70000" is not a port (0-65535)',
      '10: expected 5 fields, found 2',
    ]);
  });

  it('refuses a header without the required columns', () => {
    const parse = parserFor('telescope-csv');
    expect(parse.line('time,ip,port')).toEqual({ error: 'header must name ts,src_ip,dst_port,proto (missing ts, src_ip, dst_port, proto)' });
  });
});

describe('requireTime', () => {
  const now = Date.UTC(2026, 10, 22);
  it.each([
    ['2026-11-21T02:14:07.112233Z', Date.UTC(2026, 10, 21, 2, 14, 7, 112)],
    ['2026-11-21T02:14:07Z', Date.UTC(2026, 10, 21, 2, 14, 7)],
    ['2026-11-21T02:14:07.5Z', Date.UTC(2026, 10, 21, 2, 14, 7, 500)],
    ['2026-11-21T02:14:07+08:00', Date.UTC(2026, 10, 20, 18, 14, 7)],
    ['2026-11-21 02:14:07.000001', Date.UTC(2026, 10, 21, 2, 14, 7)],
    ['1795237203', 1795237203000],
    ['2024-02-29T23:59:59Z', Date.UTC(2024, 1, 29, 23, 59, 59)],
    ['2000-02-29T00:00:00Z', Date.UTC(2000, 1, 29)],
    ['2026-04-30T12:00:00Z', Date.UTC(2026, 3, 30, 12)],
  ])('reads %s', (text, ms) => {
    expect(requireTime(text, 'ts', now)).toBe(ms);
  });
  it.each([
    '2026-13-01T00:00:00Z', '2026-11-21T02:14:07.1a2Z', 'soon', '2026-02-31T00:00:00Z', '2026-02-29T10:00:00+02:00', '2025-04-31 12:00:00',
    '2100-02-29T00:00:00.5Z',
    // a character beyond ASCII where a digit or separator belongs (U+0130 would be "0" if cut to a byte)
    '2026-11-21T02:14:0\u0130Z', '2026-11-21T02:14:07\uff3a',
  ])('refuses %s', (text) => {
    expect(() => requireTime(text, 'ts', now)).toThrow(/ts ".*" is not an ISO 8601 time/);
  });
});

describe('Cowrie session keys', () => {
  it('remembers Cowrie ids as numbers and other ids as text, so no two ids share a key', () => {
    expect(sessionKey('a1b2c3d4e5f6')).toBe(0xa1b2c3d4e5f6);
    expect(sessionKey('00000000000a')).toBe(10);
    for (const other of ['a', '0a', 'A1B2C3D4E5F6', 'a1b2c3d4e5f6a', 's1', '']) expect(sessionKey(other)).toBe(other);
  });

  it('gives the same key from the bytes of an id as from its text', () => {
    const ids = fc.oneof(fc.stringMatching(/^[0-9a-fA-F]{10,14}$/), fc.string({ unit: fc.constantFrom(...'0123456789abcdefgxyz- '), maxLength: 14 }));
    fc.assert(
      fc.property(fc.string({ maxLength: 4 }), ids, (before, id) => {
        const line = Buffer.from(`${before}${id}"`, 'latin1');
        const from = Buffer.byteLength(before, 'latin1');
        expect(sessionKeyOfBytes(line, from, from + id.length)).toStrictEqual(sessionKey(id));
      }),
    );
  });
});

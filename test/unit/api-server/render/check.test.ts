// The check's answer as json and txt: the fields as documented, and txt lines that nothing from outside can
// split or turn into a terminal's command.
import { describe, expect, it } from 'vitest';
import type { AddressCheck } from '../../../../api-server/query/check.ts';
import { checkJson, checkTxt } from '../../../../api-server/render/check.ts';

const at = (iso: string) => new Date(iso);

const seen: AddressCheck = {
  ip: '203.0.113.20',
  checkedAt: at('2026-11-22T12:30:00Z'),
  listed: false,
  lists: [
    { list: 'dedup', hours: 24, listed: false },
    { list: 'export', hours: 24, type: 'attacker', listed: false },
  ],
  neverBlock: false,
  excluded: { network: '203.0.113.0/24', since: at('2026-11-20T08:00:00.123Z'), until: null, source: 'removal-request' },
  facts: {
    firstSeen: at('2026-11-01T00:00:00Z'),
    lastSeen: at('2026-11-22T11:00:00Z'),
    sources: [{ source: 'honeypot', lastSeen: at('2026-11-22T11:00:00Z') }],
    services: [{ service: 'ssh', lastSeen: at('2026-11-22T11:00:00Z') }],
    lastInteraction: at('2026-11-22T11:00:00Z'),
    lastAuthentication: null,
    lastCommand: at('2026-11-22T11:00:00Z'),
    sightings: [at('2026-11-22T11:00:00Z'), at('2026-11-21T11:00:00Z')],
    confirmedAt: at('2026-11-21T11:00:00Z'),
    windows: [{ hours: 24, seen: true, type: 'attacker', level: 'critical', precision: 'high' }],
    country: 'CN',
    province: '广东省',
    city: null,
    carrier: '电信',
    isp: '电信',
    asn: 4134,
    asName: 'EVIL\u001b[2J\nlisted: no\u202e',
    net: 'broadband',
    scanner: null,
  },
};

describe('the check rendered', () => {
  it('json: the documented fields, times to the second', () => {
    expect(checkJson(seen)).toEqual({
      ip: '203.0.113.20',
      checked_at: '2026-11-22T12:30:00Z',
      listed: false,
      lists: [
        { list: 'dedup', hours: 24, listed: false },
        { list: 'export', hours: 24, type: 'attacker', listed: false },
      ],
      never_block: false,
      excluded: { network: '203.0.113.0/24', since: '2026-11-20T08:00:00Z', until: null, source: 'removal-request' },
      seen: true,
      first_seen: '2026-11-01T00:00:00Z',
      last_seen: '2026-11-22T11:00:00Z',
      sources: [{ source: 'honeypot', last_seen: '2026-11-22T11:00:00Z' }],
      services: [{ service: 'ssh', last_seen: '2026-11-22T11:00:00Z' }],
      last_interaction: '2026-11-22T11:00:00Z',
      last_authentication: null,
      last_command: '2026-11-22T11:00:00Z',
      sightings: [{ last_seen: '2026-11-22T11:00:00Z' }, { last_seen: '2026-11-21T11:00:00Z' }],
      confirmed_at: '2026-11-21T11:00:00Z',
      windows: [{ hours: 24, seen: true, type: 'attacker', level: 'critical', precision: 'high' }],
      country: 'CN', province: '广东省', city: null, carrier: '电信', isp: '电信', asn: 4134, as_name: 'EVIL\u001b[2J\nlisted: no\u202e', net: 'broadband',
      scanner: null, research_scanner: false,
    });
    expect(checkJson({ ...seen, excluded: null, facts: null })).toEqual({
      ip: '203.0.113.20', checked_at: '2026-11-22T12:30:00Z', listed: false, lists: checkJson(seen).lists, never_block: false, excluded: null, seen: false,
    });
  });

  it('txt: a line per fact; text from outside with its control and format characters escaped', () => {
    const text = checkTxt(seen);
    expect(text.startsWith('ip: 203.0.113.20\nchecked_at: 2026-11-22T12:30:00Z\nlisted: no\nlist dedup hours=24: no\nlist export hours=24 type=attacker: no\n')).toBe(true);
    expect(text).toContain('\nexcluded: yes\nexcluded_network: 203.0.113.0/24\nexcluded_since: 2026-11-20T08:00:00Z\nexcluded_until: -\nexcluded_source: removal-request\n');
    expect(text).toContain('\nas_name: EVIL\\u{1b}[2J\\u{a}listed: no\\u{202e}\n');
    expect(text).toContain('\nsightings: 2026-11-22T11:00:00Z 2026-11-21T11:00:00Z\n');
    // Every line is `name: value`, and there is no other line.
    for (const line of text.split('\n').slice(0, -1)) expect(line).toMatch(/^[a-z_][a-z_ =0-9-]*: \S/);
  });
});

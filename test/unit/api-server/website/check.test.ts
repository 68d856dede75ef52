// The check page's words for each answer: excluded (with and without an end, on a request or not), never
// listable, listed, seen but outside every window, never seen; the table of lists and windows; and the
// removal link only for an address that is listed.
import { describe, expect, it } from 'vitest';
import type { AddressCheck } from '../../../../api-server/query/check.ts';
import { checkView } from '../../../../api-server/website/check.ts';
import { localeOf } from '../../../../api-server/website/i18n.ts';

const en = localeOf('en');
const zh = localeOf('zh-CN');
const base: AddressCheck = {
  ip: '2001:db8::7',
  checkedAt: new Date('2026-11-22T12:30:00Z'),
  listed: true,
  lists: [
    { list: 'dedup', hours: 24, listed: true },
    { list: 'dedup', hours: 168, listed: true },
    { list: 'export', hours: 24, type: 'all', listed: false },
    { list: 'export', hours: 720, type: 'scanner', listed: true },
  ],
  neverBlock: false,
  excluded: null,
  facts: null,
};

describe('checkView', () => {
  it('a listed address: how many lists, a table of windows, a link to ask for removal', () => {
    const view = checkView(base, en);
    expect(view.verdict).toBe('Listed: in 3 of the 4 lists and windows below.');
    expect(view.removalLink).toBe('/check/removal?network=2001%3Adb8%3A%3A7');
    expect(view.windows).toEqual(['24 hours', '7 days', '30 days']);
    expect(view.rows).toEqual([
      { label: 'All attackers and scanners (dedup)', cells: [{ text: 'listed', listed: true }, { text: 'listed', listed: true }, { text: 'not offered', listed: null }] },
      { label: 'Classified export (export)', cells: [{ text: 'not listed', listed: false }, { text: 'not offered', listed: null }, { text: 'not offered', listed: null }] },
      { label: 'Classified export, type scanner', cells: [{ text: 'not offered', listed: null }, { text: 'not offered', listed: null }, { text: 'listed', listed: true }] },
    ]);
  });

  it('the other answers, in both languages', () => {
    const excluded = { network: '2001:db8::/32', since: new Date('2026-11-20T08:00:00Z'), until: null, source: 'operator' as const };
    const lists = base.lists.map((l) => ({ ...l, listed: false }));
    expect(checkView({ ...base, listed: false, lists, excluded }, en)).toMatchObject({
      verdict: 'Not listed: excluded by the operator on Nov 20, 2026, 08:00 UTC. It stays out of every list whatever it does.',
      removalLink: undefined,
      excludedOnRequest: false,
    });
    expect(checkView({ ...base, listed: false, lists, excluded: { ...excluded, until: new Date('2027-01-01T00:00:00Z'), source: 'removal-request' } }, zh)).toMatchObject({
      verdict: '未列入：运营者已于 2026年11月20日 08:00 UTC 将其排除，有效期至 2027年1月1日 00:00 UTC。',
      excludedOnRequest: true,
    });
    expect(checkView({ ...base, listed: false, lists, neverBlock: true }, en).verdict).toMatch(/^Never listed: /);
    expect(checkView({ ...base, listed: false, lists }, en).verdict).toBe('Not listed: our sensors have not seen this address in the last 30 days.');
  });
});

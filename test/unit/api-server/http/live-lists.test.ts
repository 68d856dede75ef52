// The pure parts of live lists: list ETags that name their data version and minute, telling which held ETag is current in data,
// the Cache-Control that asks for the current data, data versions, the bounded waiting room, and the endpoint
// table's long-poll rows.
import { describe, expect, it } from 'vitest';
import { LIST_ENDPOINTS } from '../../../../common/list-filters.ts';
import { asksRevalidation, cacheKey, heldListEtag, listEtag, listEtagInstant } from '../../../../api-server/http/cache.ts';
import { ENDPOINTS } from '../../../../api-server/http/endpoints.ts';
import { WaitingRoom } from '../../../../api-server/http/long-poll.ts';
import { isNewer, parseDataVersion, type DataVersion } from '../../../../api-server/query/data-version.ts';

const EPOCH = '0b6f4d0e-4a43-4e5f-9d53-1f3a6c1b2d7e';
const version = (n: number, epoch = EPOCH): DataVersion => ({ epoch: epoch.slice(0, 8), version: BigInt(n) });
/** A version as the store writes it, `<epoch>:<version>`. */
const text = (n: number, epoch = EPOCH) => `${epoch}:${n}`;
const minute = (m: number) => new Date(Date.UTC(2026, 0, 1, 12, m));
const KEY = 'B:dedup?format=txt&hours=24';
const etagAt = (n: number, key = KEY) => (asOf: Date) => listEtag({ release: '1.0.0', dataVersion: text(n), key, asOf });

describe('list ETags', () => {
  it('name their data version and the minute they describe, in the clear', () => {
    const etag = etagAt(7)(minute(5));
    expect(etag).toMatch(/^"0b6f4d0e\.7\.\d+\.[A-Za-z0-9_-]{32}"$/);
    expect(listEtagInstant(etag)).toEqual(minute(5));
    expect(listEtagInstant(`W/${etag}`)).toEqual(minute(5));
    expect(listEtagInstant('"abc"')).toBeUndefined();
    expect(listEtagInstant('"12.tooshort"')).toBeUndefined();
  });

  it('differ by data version, query, minute and release', () => {
    const base = { release: '1.0.0', dataVersion: text(7), key: KEY, asOf: minute(5) };
    const all = [
      listEtag(base),
      listEtag({ ...base, dataVersion: text(8) }),
      listEtag({ ...base, key: 'B:dedup?format=txt&hours=25' }),
      listEtag({ ...base, asOf: minute(6) }),
      listEtag({ ...base, release: '1.0.1' }),
    ];
    expect(new Set(all).size).toBe(all.length);
  });

  it('are held while they name the current data, whatever their minute', () => {
    const current = 7;
    const old = etagAt(current)(minute(1));
    expect(heldListEtag(old, etagAt(current))).toEqual({ etag: old, asOf: minute(1) });
    expect(heldListEtag(`W/${old}`, etagAt(current))?.etag).toBe(old);
    expect(heldListEtag(`"x", ${old}`, etagAt(current))?.etag).toBe(old);
    // Older data, another query, another server's release, nothing of ours: not held.
    expect(heldListEtag(etagAt(6)(minute(1)), etagAt(current))).toBeUndefined();
    expect(heldListEtag(etagAt(current, 'B:dedup?format=txt&hours=2')(minute(1)), etagAt(current))).toBeUndefined();
    expect(heldListEtag('*', etagAt(current))).toBeUndefined();
    expect(heldListEtag(undefined, etagAt(current))).toBeUndefined();
  });

  it('a wait is not part of the cache key, so neither of the ETag', () => {
    expect(cacheKey('B', 'dedup', { hours: 24, wait: 30, key: 'k' })).toBe(cacheKey('B', 'dedup', { hours: 24 }));
  });
});

describe('asking for the current data', () => {
  it('is Cache-Control no-cache or max-age=0', () => {
    for (const yes of ['no-cache', 'No-Cache', 'max-age=0', 'max-age = 00', 'no-store, no-cache', 'max-stale, max-age=0']) expect(asksRevalidation(yes), yes).toBe(true);
    for (const no of [undefined, '', 'max-age=60', 'no-store', 'max-age=0x', 'no-cache="set-cookie"']) expect(asksRevalidation(no), String(no)).toBe(false);
  });
});

describe('data versions', () => {
  it('parse from a notice and compare within a database; another database is always newer', () => {
    expect(parseDataVersion(`${EPOCH}:42`)).toEqual(version(42));
    expect(parseDataVersion('42')).toBeUndefined();
    expect(parseDataVersion(`${EPOCH}:-1`)).toBeUndefined();
    expect(isNewer(version(8), version(7))).toBe(true);
    expect(isNewer(version(7), version(7))).toBe(false);
    expect(isNewer(version(6), version(7))).toBe(false);
    const other = '5d1e0c2a-0000-4000-8000-000000000000';
    expect(isNewer(version(1, other), version(7))).toBe(true);
  });
});

describe('the waiting room', () => {
  const waiter = (subject: string, n: number) => ({ subject, version: version(n) });

  it('holds at most its bounds, per key and overall', () => {
    const room = new WaitingRoom<ReturnType<typeof waiter>>({ total: 3, perSubject: 2 });
    const a1 = waiter('a', 1);
    expect(room.admit(a1)).toBe('admitted');
    expect(room.admit(waiter('a', 1))).toBe('admitted');
    expect(room.admit(waiter('a', 1))).toBe('subject-full');
    expect(room.admit(waiter('b', 1))).toBe('admitted');
    expect(room.admit(waiter('c', 1))).toBe('full');
    expect(room.size).toBe(3);
    expect(room.leave(a1)).toBe(true);
    expect(room.leave(a1)).toBe(false);
    expect(room.admit(waiter('a', 1))).toBe('admitted');
  });

  it('lets go of exactly the waiters behind a new version', () => {
    const room = new WaitingRoom<ReturnType<typeof waiter>>({ total: 10, perSubject: 10 });
    const [old, current, other] = [waiter('a', 4), waiter('a', 5), waiter('b', 4)];
    for (const w of [old, current, other]) room.admit(w);
    expect(room.behind(version(5)).sort((x, y) => x.subject.localeCompare(y.subject))).toEqual([old, other]);
    expect(room.size).toBe(1);
    expect(room.behind(version(5))).toEqual([]);
    expect(room.drain()).toEqual([current]);
    expect(room.size).toBe(0);
  });
});

describe('the endpoint table', () => {
  it('lets the lists a subscription can pull be long-polled, and only routes that need a key', () => {
    const polled = ENDPOINTS.filter((e) => e.longPoll);
    expect(polled.map((e) => e.endpoint).sort()).toEqual([...LIST_ENDPOINTS].sort());
    for (const e of polled) {
      expect(e.access).toBe('key');
      expect(e.params.properties.wait).toMatchObject({ type: 'integer', minimum: 1, maximum: 60 });
    }
    for (const e of ENDPOINTS.filter((x) => !x.longPoll)) expect(e.params.properties.wait).toBeUndefined();
  });
});

// A list's ETag carries its data version readably, so that a server can tell how new a list a client holds
// (If-None-Match) and never answer it with an older one; and a data version compares only within one database.
import { describe, expect, it } from 'vitest';
import { heldListVersion, holdsNewer, listEtag, strongEtag, versionOfEtag } from '../../../../api-server/http/cache.ts';
import { isOlder, newer, parseDataVersion } from '../../../../api-server/query/data-version.ts';

const EPOCH = '9f86d081-884c-4d63-9c1d-2a0b6a5e1c3f';
const OTHER = '0b1c2d3e-0000-4000-8000-000000000000';
const identity = (version: number, epoch = EPOCH) => ({ release: '1.0.0', dataVersion: `${epoch}:${version}`, key: 'B:dedup?format=txt&hours=24', asOf: new Date('2026-11-20T13:07:00Z') });

describe('data versions', () => {
  it('parse from what a snapshot reads and compare within one database only', () => {
    const v7 = parseDataVersion(`${EPOCH}:7`);
    expect(v7).toEqual({ epoch: '9f86d081', version: 7n });
    const v12 = parseDataVersion(`${EPOCH}:12`);
    const elsewhere = parseDataVersion(`${OTHER}:99`);
    if (!v7 || !v12 || !elsewhere) throw new Error('not parsed');
    expect(isOlder(v7, v12)).toBe(true);
    expect(isOlder(v12, v7)).toBe(false);
    expect(isOlder(v7, v7)).toBe(false);
    expect(isOlder(v7, elsewhere)).toBe(false);
    expect(isOlder(elsewhere, v12)).toBe(false);
    expect(newer(v7, v12)).toBe(v12);
    expect(newer(v12, elsewhere)).toBe(v12);
    expect(parseDataVersion('9007199254740993')).toBeUndefined();
    expect(parseDataVersion(`${EPOCH}:18446744073709551615`)?.version).toBe(18446744073709551615n);
  });
});

describe('the data version in a list ETag', () => {
  it('is readable in front of the digest, with the minute, and the digest still tells every input apart', () => {
    const etag = listEtag(identity(42));
    expect(etag).toMatch(/^"9f86d081\.42\.\d+\.[A-Za-z0-9_-]{32}"$/);
    expect(versionOfEtag(etag)).toEqual({ epoch: '9f86d081', version: 42n });
    expect(versionOfEtag(`W/${etag}`)).toEqual({ epoch: '9f86d081', version: 42n });
    expect(listEtag({ ...identity(42), key: 'B:dedup?format=csv&hours=24' })).not.toBe(etag);
    expect(listEtag({ ...identity(42), asOf: new Date('2026-11-20T13:08:00Z') })).not.toBe(etag);
    expect(listEtag(identity(43))).not.toBe(etag);
  });

  it('is absent from ETags that are not a list’s', () => {
    for (const etag of [strongEtag(Buffer.from('{}')), '"v2"', '"9f86d081.x.abc"', '*', '']) expect(versionOfEtag(etag), etag).toBeUndefined();
  });

  it('an If-None-Match holds the newest list version it names', () => {
    const v3 = listEtag(identity(3));
    const v9 = listEtag(identity(9));
    expect(heldListVersion(`"other", ${v3}, W/${v9}`)).toEqual({ epoch: '9f86d081', version: 9n });
    expect(heldListVersion(`${v9}, ${v3}`)).toEqual({ epoch: '9f86d081', version: 9n });
    expect(heldListVersion('"other"')).toBeUndefined();
    expect(heldListVersion(undefined)).toBeUndefined();
  });

  it('an answer older than the list a client holds is not for it; the same, a newer or another database’s is', () => {
    const answer = { etag: listEtag(identity(5)) };
    expect(holdsNewer(listEtag(identity(6)), answer)).toBe(true);
    expect(holdsNewer(listEtag(identity(5)), answer)).toBe(false);
    expect(holdsNewer(listEtag(identity(4)), answer)).toBe(false);
    expect(holdsNewer(listEtag(identity(6, OTHER)), answer)).toBe(false);
    expect(holdsNewer(undefined, answer)).toBe(false);
    // A document's ETag names no version: nothing to compare.
    expect(holdsNewer(listEtag(identity(6)), { etag: strongEtag(Buffer.from('{}')) })).toBe(false);
  });
});

// The response cache when the exclusions change (clear): every kept answer goes, an answer still being made
// is not kept (nor joined by a later identical request), and no list read below the change's data version is
// kept afterwards.
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ResponseCache, type AnswerMeta } from '../../../../api-server/http/cache.ts';
import type { SharedBody } from '../../../../api-server/http/shared-body.ts';
import type { DataVersion } from '../../../../api-server/query/data-version.ts';

function cache(): ResponseCache {
  const lookups = new Counter({ name: 'lookups', help: 'lookups', labelNames: ['endpoint', 'result'] as const, registers: [new Registry()] });
  return new ResponseCache({ maxBytes: 1 << 20, lookups });
}

const at = (version: bigint, epoch = 'aaaaaaaa'): DataVersion => ({ epoch, version });
const entry = (body: string, dataVersion?: DataVersion) => ({ body: Buffer.from(body), etag: `"${body}"`, generatedAt: new Date(), ttlSeconds: 60, headers: {}, dataVersion });

/** Streams `body` into a list being made, its first request reading it to the end. */
async function drain(made: SharedBody<AnswerMeta>, meta: AnswerMeta, body: string): Promise<void> {
  made.publish(meta);
  const reader = made.reader();
  await Promise.all([pipeline(Readable.from([Buffer.from(body)]), made.sink()), pipeline(reader, new Writable({ write: (_c, _e, done) => done() }))]);
}

describe('ResponseCache.clear', () => {
  it('forgets every answer, and keeps no list read below the floor it is given', () => {
    const c = cache();
    c.set('a', entry('a', at(5n)));
    c.set('doc', entry('doc'));
    c.clear(at(7n));
    expect([c.peek('a'), c.peek('doc')]).toEqual([undefined, undefined]);
    expect(c.floor).toEqual(at(7n));
    c.set('a', entry('old', at(6n)));
    expect(c.peek('a')).toBeUndefined();
    c.set('a', entry('new', at(7n)));
    expect(c.peek('a')?.etag).toBe('"new"');
    c.set('doc', entry('doc'));
    expect(c.peek('doc')?.etag).toBe('"doc"');
  });

  it('raises the floor, never lowers it; another database replaces it', () => {
    const c = cache();
    c.clear(at(9n));
    c.clear(at(3n));
    c.clear();
    expect(c.floor).toEqual(at(9n));
    c.clear(at(2n, 'bbbbbbbb'));
    expect(c.floor).toEqual(at(2n, 'bbbbbbbb'));
  });

  it('does not keep an answer that was being made when it cleared, nor lets a request join it', async () => {
    const c = cache();
    const meta: AnswerMeta = { etag: '"a"', generatedAt: new Date(), ttlSeconds: 60, headers: {}, dataVersion: at(8n) };
    const before = c.startList('a');
    expect(c.listInFlight('a')).toBe(before);
    c.clear();
    expect(c.listInFlight('a')).toBeUndefined();
    await drain(before, meta, 'body');
    expect(c.peek('a')).toBeUndefined();
    await drain(c.startList('a'), meta, 'body');
    expect(c.peek('a')?.body.toString()).toBe('body');
  });
});

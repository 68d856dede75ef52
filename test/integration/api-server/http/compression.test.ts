// Lists go out gzip-compressed to clients that accept it, compressed once per list: the compressed answer is
// an answer of its own (cache entry, ETag), identical requests share its bytes, and a client that does not
// accept gzip gets the list as it is. Documents are never compressed. The bodies are read raw (node:http),
// as fetch would decompress them.
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateAddresses } from '../../../support/attack-fixtures.ts';
import type { TestApi } from '../../../support/api-server.ts';
import type { TestDatabase } from '../../../support/db.ts';
import { startFixtureApi, stopFixtureApi } from '../../../support/api-fixture-set.ts';

let db: TestDatabase;
let api: TestApi;
let key: string;

beforeAll(async () => {
  ({ db, api, key } = await startFixtureApi('compression tests'));
  await generateAddresses(db.pool, 20_000, 48);
});
afterAll(() => stopFixtureApi(db, api));

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A GET with the key, its body as sent (not decompressed). */
function rawGet(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(`${api.base}${path}`, { method, headers: { 'x-api-key': key, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function lookups(endpoint: string, result: string): Promise<number> {
  const text = await (await fetch(`${api.base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`blockfeed_response_cache_lookups_total{endpoint="${endpoint}",result="${result}"`));
  return Number(line?.split(' ').at(-1) ?? 0);
}

describe('compressed lists', () => {
  it('a client that accepts gzip gets the same list compressed, under an ETag of its own', async () => {
    const plain = await rawGet('/api/export?hours=48&format=json');
    const gzipped = await rawGet('/api/export?hours=48&format=json', { 'accept-encoding': 'gzip, deflate, br' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(plain.headers.vary).toBe('accept-encoding');
    expect(gzipped.headers.vary).toBe('accept-encoding');
    expect(gunzipSync(gzipped.body).equals(plain.body)).toBe(true);
    expect(gzipped.body.length * 3).toBeLessThan(plain.body.length);
    expect((JSON.parse(plain.body.toString()) as { data: unknown[] }).data.length).toBeGreaterThan(20_000);
    expect(gzipped.headers.etag).not.toBe(plain.headers.etag);
    expect(gzipped.headers.etag).toMatch(/^"[0-9a-f]{8}\.\d+\.\d+\.[A-Za-z0-9_-]{32}"$/);

    // Each ETag names its own coding: a client holding one coding's list gets 304 only for that coding.
    const notModified = await rawGet('/api/export?hours=48&format=json', { 'accept-encoding': 'gzip', 'if-none-match': String(gzipped.headers.etag) });
    expect(notModified.status).toBe(304);
    expect(notModified.headers['content-encoding']).toBeUndefined();
    expect(notModified.headers.vary).toBe('accept-encoding');
    const otherCoding = await rawGet('/api/export?hours=48&format=json', { 'if-none-match': String(gzipped.headers.etag) });
    expect(otherCoding.status).toBe(200);
    expect(otherCoding.body.equals(plain.body)).toBe(true);
  });

  it('the compressed copy is kept: repeated, it is a cache hit with the same bytes, through the fast path too', async () => {
    const path = '/api/dedup?hours=48';
    const first = await rawGet(path, { 'accept-encoding': 'gzip' });
    const hits = await lookups('dedup', 'hit');
    const again = await rawGet(path, { 'accept-encoding': 'gzip' });
    const plain = await rawGet(path);
    // The plain list is another answer: a miss.
    expect(await lookups('dedup', 'hit')).toBe(hits + 1);
    expect(again.body.equals(first.body)).toBe(true);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(again.headers['content-length']).toBe(String(first.body.length));
    expect(again.headers['content-encoding']).toBe('gzip');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(gunzipSync(again.body).equals(plain.body)).toBe(true);
  });

  it('gzip refused (q=0) or not offered is a list as it is; a HEAD names the coding the GET would have', async () => {
    for (const acceptEncoding of ['gzip;q=0', 'br', 'identity']) {
      const res = await rawGet('/api/scan-export?hours=48', { 'accept-encoding': acceptEncoding });
      expect(res.headers['content-encoding'], acceptEncoding).toBeUndefined();
      expect(res.body.toString()).toMatch(/^\d/);
    }
    const head = await rawGet('/api/scan-export?hours=48', { 'accept-encoding': 'gzip' }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-encoding']).toBe('gzip');
  });

  it('identical requests share one compressed body', async () => {
    const path = '/api/export?hours=700&format=csv';
    const misses = await lookups('export', 'miss');
    const answers = await Promise.all(Array.from({ length: 8 }, () => rawGet(path, { 'accept-encoding': 'gzip' })));
    expect(new Set(answers.map((a) => a.body.toString('base64'))).size).toBe(1);
    expect(new Set(answers.map((a) => a.headers.etag)).size).toBe(1);
    // One of them made it; the others were coalesced onto it or, once it was kept, hits.
    expect(await lookups('export', 'miss')).toBe(misses + 1);
    expect(gunzipSync(answers[0]?.body ?? Buffer.alloc(0)).equals((await rawGet(path)).body)).toBe(true);
  });

  it('documents are never compressed', async () => {
    const stats = await rawGet('/api/stats?hours=48', { 'accept-encoding': 'gzip' });
    expect(stats.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(stats.body.toString())).toHaveProperty('unique_ips');
  });
});

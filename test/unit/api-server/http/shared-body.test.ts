// A live shared body (a list too large to keep) as its readers see it: the store's small writes gathered
// into chunks of at least 64 KiB, each the same Buffer for every reader, the bytes intact and in order.
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { SharedBody } from '../../../../api-server/http/shared-body.ts';

/** Reads `body` to the end, keeping its chunks. */
async function chunksOf(body: Readable): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  await pipeline(body, new Writable({ write: (chunk: Buffer, _enc, done) => (chunks.push(chunk), done()) }));
  return chunks;
}

describe('SharedBody, live', () => {
  it('hands every reader the same chunks of at least 64 KiB, gathered from small writes', async () => {
    const shared = new SharedBody<string>({ keepBytes: 0, windowBytes: 8 << 20, stallMs: 10_000, keep: () => undefined, settled: () => undefined });
    shared.publish('meta');
    const first = shared.reader();
    const joined = await shared.join(new AbortController().signal);
    if (joined.kind !== 'live') throw new Error(`joined ${joined.kind}`);
    // 1,000 rows of 1,000 bytes, as a list is written: a row at a time.
    const rows = Array.from({ length: 1000 }, (_, i) => Buffer.alloc(1000, i % 251));
    const [, a, b] = await Promise.all([pipeline(Readable.from(rows), shared.sink()), chunksOf(first), chunksOf(joined.body)]);
    expect(Buffer.concat(a).equals(Buffer.concat(rows))).toBe(true);
    expect(a.slice(0, -1).every((chunk) => chunk.length >= 64 * 1024)).toBe(true);
    expect(a.length).toBe(b.length);
    expect(a.every((chunk, i) => chunk === b[i])).toBe(true);
  });
});

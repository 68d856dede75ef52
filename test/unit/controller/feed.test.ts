// The feed client against a real HTTP server on a loopback socket.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listUrl } from '../../../common/list-filters.ts';
import { FeedError, pullFeed } from '../../../controller/feed.ts';

let server: Server;
let base: string;
const seen: IncomingMessage[] = [];
let handler: (req: IncomingMessage, res: ServerResponse) => void = () => {};

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const feed = () => ({ url: base, endpoint: 'export' as const, filters: { type: 'attacker' as const, hours: 168, includeResearch: false } });

async function collect(opts: Parameters<typeof pullFeed>[0]) {
  const lines: string[] = [];
  const result = await pullFeed(opts, (l) => lines.push(l));
  return { result, lines };
}

describe('pullFeed', () => {
  it('builds the URL from the endpoint and filters, without the key', () => {
    expect(listUrl({ ...feed(), url: `${base}/` }).toString()).toBe(`${base}/api/export?format=txt&hours=168&include_research=0&type=attacker`);
  });

  it('sends the key as X-API-Key and If-None-Match, streams lines, returns the ETag', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', etag: '"v2"' });
      res.write('203.0.113.1\n203.0.');
      setTimeout(() => res.end('113.2\n2001:db8::1'), 10);
    };
    const { result, lines } = await collect({ feed: feed(), apiKey: 'sekret', etag: '"v1"' });
    expect(result).toMatchObject({ changed: true, etag: '"v2"', lines: 3 });
    expect(lines).toEqual(['203.0.113.1', '203.0.113.2', '2001:db8::1']);
    const req = seen.at(-1)!;
    expect(req.headers['x-api-key']).toBe('sekret');
    expect(req.headers['if-none-match']).toBe('"v1"');
    expect(req.url).not.toContain('sekret');
    expect(req.url).not.toContain('key=');
  });

  it('hands a byte sink the same lines, also when they straddle chunks', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('203.0.113.1\n20');
      setTimeout(() => {
        res.write('3.0.1');
        setTimeout(() => res.end('13.2\r\n广东\n2001:db8::1'), 10);
      }, 10);
    };
    const lines: string[] = [];
    const decoder = new TextDecoder();
    const result = await pullFeed({ feed: feed() }, { bytes: (buf, start, end) => lines.push(decoder.decode(buf.subarray(start, end))) });
    expect(lines).toEqual(['203.0.113.1', '203.0.113.2\r', '广东', '2001:db8::1']);
    expect(result).toMatchObject({ changed: true, lines: 4 });
  });

  it('treats 304 as unchanged', async () => {
    handler = (_req, res) => {
      res.writeHead(304, { etag: '"v1"' });
      res.end();
    };
    expect((await collect({ feed: feed(), etag: '"v1"' })).result).toEqual({ changed: false, status: 304 });
  });

  const failing: [string, (req: IncomingMessage, res: ServerResponse) => void, Partial<Parameters<typeof pullFeed>[0]>, string][] = [
    ['a 500', (_q, r) => r.writeHead(500).end('boom'), {}, 'HttpError'],
    ['a timeout', (_q, r) => setTimeout(() => r.end('1.2.3.4\n'), 2000), { timeoutMs: 200 }, 'Timeout'],
    ['a slow body', (_q, r) => { r.writeHead(200, { 'content-type': 'text/plain' }); r.write('1.2.3.4\n'); setTimeout(() => r.end(), 2000); }, { timeoutMs: 200 }, 'Timeout'],
    ['a declared oversized body', (_q, r) => r.writeHead(200, { 'content-length': '5000' }).end('x'.repeat(5000)), { maxBodyBytes: 1024 }, 'TooLarge'],
    ['a streamed oversized body', (_q, r) => { r.writeHead(200, { 'content-type': 'text/plain' }); r.write('1.2.3.4\n'.repeat(100)); r.end('5.6.7.8\n'.repeat(200)); }, { maxBodyBytes: 1024 }, 'TooLarge'],
    ['an HTML page', (_q, r) => r.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>'), {}, 'NotAList'],
  ];
  it.each(failing)('fails with a reason on %s', async (_name, h, opts, reason) => {
    handler = h;
    const err = await collect({ feed: feed(), ...opts }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FeedError);
    expect((err as FeedError).reason).toBe(reason);
  });

  it('fails with Unreachable when nothing listens', async () => {
    const err = await collect({ feed: { ...feed(), url: 'http://127.0.0.1:1' } }).catch((e: unknown) => e);
    expect((err as FeedError).reason).toBe('Unreachable');
  });
});

// No list, export, scan-export, recent list or statistic ever holds an address of the never-block table
// (common/never-block.ts: RFC 6890 space that is not globally reachable), whatever was ingested. Black box:
// events go in through the push route, answers come out of the HTTP API, in every format. A honeypot behind
// NAT or a health check logs such sources; consumers load these lists straight into firewalls. Ingest drops
// them, so the queries' own guard (publishableSql), the second line of defence for rows that reached the
// store some other way, is held to the same table on its own.
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEVER_BLOCK } from '../../../../common/never-block.ts';
import { publishableSql } from '../../../../api-server/query/list-sql.ts';
import { addressesIn, getWithKey, type TestApi } from '../../../support/api-server.ts';
import type { TestDatabase } from '../../../support/db.ts';
import { startFixtureApi, stopFixtureApi } from '../../../support/api-fixture-set.ts';

const TOKEN = 'non-global-sources-ingest-token';
const RANGES = NEVER_BLOCK.map((cidr) => ipaddr.parseCIDR(cidr));

/** The oracle: is this address (as an API prints it) inside a never-block range? ipaddr.js, not the SQL. */
function neverBlock(text: string): boolean {
  const address = ipaddr.parse(text);
  return RANGES.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits));
}

/** The address ingest stores for an input: IPv4-mapped IPv6 is IPv4. As PostgreSQL's host() prints it. */
function stored(text: string): string {
  const address = ipaddr.parse(text);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) return (address as ipaddr.IPv6).toIPv4Address().toString();
  return address.kind() === 'ipv6' ? (address as ipaddr.IPv6).toRFC5952String() : address.toString();
}

// ---- addresses: in every never-block range (edges and inside), just outside them, anywhere --------------

const toBig = (bytes: number[]) => bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);
function fromBig(n: bigint, bytes: number): string {
  const out: number[] = [];
  for (let i = 0; i < bytes; i++) out.unshift(Number((n >> BigInt(8 * i)) & 255n));
  const address = ipaddr.fromByteArray(out);
  return address.kind() === 'ipv6' ? (address as ipaddr.IPv6).toRFC5952String() : address.toString();
}

/** An address at `offset` from a range's first address (negative: before it; past its size: after it). */
const nearRange = fc
  .tuple(fc.constantFrom(...RANGES), fc.constantFrom('first', 'last', 'inside', 'before', 'after'), fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }))
  .map(([[range, bits], where, random]) => {
    const bytes = range.toByteArray().length;
    const width = BigInt(bytes * 8);
    const size = 1n << (width - BigInt(bits));
    const first = toBig(range.toByteArray());
    const max = (1n << width) - 1n;
    const at = { first, last: first + size - 1n, inside: first + (random % size), before: first - 1n, after: first + size }[where];
    return fromBig(at < 0n ? 0n : at > max ? max : at, bytes);
  });
const anyV4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
const anyV6 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }).map((n) => fromBig(n, 16));
const globalV6 = fc.bigInt({ min: 0n, max: (1n << 125n) - 1n }).map((n) => fromBig((1n << 125n) | n, 16)); // 2000::/3
const address = fc.oneof(
  { arbitrary: nearRange, weight: 4 },
  { arbitrary: anyV4, weight: 3 },
  { arbitrary: globalV6, weight: 2 },
  { arbitrary: anyV6, weight: 1 },
  { arbitrary: fc.oneof(nearRange, anyV4).filter((a) => !a.includes(':')).map((v4) => `::ffff:${v4}`), weight: 2 },
);

const event = fc.record({
  src: address,
  minutesAgo: fc.integer({ min: 0, max: 50 }),
  source: fc.constantFrom('honeypot', 'telescope'),
  port: fc.constantFrom(22, 23, 80, 443, 3389, 6379),
  action: fc.constantFrom('probe', 'login', 'command'),
});

// ---- the API ------------------------------------------------------------------------------------------------

let db: TestDatabase;
let api: TestApi;
let key: string;
/** Every published-to-be address ingested so far (as stored), across the property's runs. */
const published = new Set<string>();

beforeAll(async () => {
  // An empty store, and no response cache: every answer reflects what has been ingested so far.
  ({ db, api, key } = await startFixtureApi('non-global sources', { addresses: [], overrides: { ingestToken: TOKEN, cacheMaxBytes: 0 } }));
});
afterAll(() => stopFixtureApi(db, api));

const get = (path: string) => getWithKey(api, key, path);

const FORMATS = ['txt', 'csv', 'json'] as const;
/** Lists that hold every address of the window (research platforms included): they must equal `published`. */
const COMPLETE = ['/api/dedup?hours=24&include_research=1', '/api/export?hours=24&include_research=1'];
/** Answers that hold some of them. */
const PARTIAL = [
  '/api/scan-export?hours=24&include_research=1', '/api/export?hours=24&type=attacker', '/api/honeypot/dedup?hours=24',
  '/api/recent?limit=1000', '/api/honeypot/recent?limit=1000',
];

describe('non-global source addresses', () => {
  it('are never published, whatever is ingested; every global one is', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 30 }), anyV4.filter((a) => !neverBlock(a)), async (events, oneGlobal) => {
        const now = Date.now();
        const lines = [...events, { src: oneGlobal, minutesAgo: 1, source: 'honeypot', port: 22, action: 'login' }].map((e) =>
          JSON.stringify({
            ts: new Date(now - e.minutesAgo * 60_000).toISOString(),
            src_ip: e.src,
            dst_port: e.port,
            source: e.source,
            sensor: e.source === 'honeypot' ? 'hp-prop' : 'scope-prop',
            ...(e.action === 'login' ? { username: 'root' } : e.action === 'command' ? { command: 'uname -a' } : {}),
          }),
        );
        const res = await fetch(`${api.base}/internal/v1/events?format=native`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-ndjson' },
          body: lines.join('\n'),
        });
        expect(res.status, await res.clone().text()).toBe(200);
        await res.arrayBuffer();
        for (const e of [...events.map((x) => x.src), oneGlobal]) if (!neverBlock(stored(e))) published.add(stored(e));

        for (const format of FORMATS) {
          for (const path of COMPLETE) {
            const shown = addressesIn(await get(`${path}&format=${format}`), format);
            expect(shown.filter(neverBlock), `${path} ${format}`).toEqual([]);
            expect(new Set(shown), `${path} ${format}`).toEqual(published);
          }
          for (const path of PARTIAL) {
            const shown = addressesIn(await get(`${path}&format=${format}`), format);
            expect(shown.filter(neverBlock), `${path} ${format}`).toEqual([]);
            for (const a of shown) expect(published.has(a), `${path} ${format}: ${a}`).toBe(true);
          }
        }
        const stats = JSON.parse(await get('/api/stats?hours=24')) as { unique_ips: number };
        expect(stats.unique_ips).toBe(published.size);
      }),
      { numRuns: 25 },
    );
  });

  it("are refused by the queries' own guard too, whatever the store holds (publishableSql in PostgreSQL)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(address, { minLength: 1, maxLength: 200 }), async (addresses) => {
        const { rows } = await db.pool.query<{ a: string; publishable: boolean }>(
          `select host(a) as a, ${publishableSql('a')} as publishable from unnest($1::inet[]) as a`,
          [addresses],
        );
        expect(rows).toHaveLength(addresses.length);
        for (const r of rows) expect(r.publishable, r.a).toBe(!neverBlock(r.a));
      }),
      { numRuns: 100 },
    );
  });
});

// Property: an exclusion keeps its addresses out of every list, and only those, and the check agrees with every
// list about every address. Random addresses (IPv4 and IPv6, every kind of activity and window) and random
// exclusions (addresses and networks, IPv4-mapped spellings, in force, expired, removed) go into a real
// PostgreSQL through the store functions the CLI uses; the answers come out of the HTTP API (no response
// cache: every answer is the store's), in every format. The oracle is ipaddr.js's containment, not SQL.
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addExclusion, listExclusions, removeExclusions, type Exclusion } from '../../../../api-server/exclusions/store.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { parseAddressOrNetwork } from '../../../../api-server/store/networks.ts';
import { addressesIn, getWithKey, startApi, type TestApi } from '../../../support/api-server.ts';
import { insertAddresses, type FixtureAddress } from '../../../support/attack-fixtures.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

let db: TestDatabase;
let api: TestApi;
let key: string;

beforeAll(async () => {
  db = await freshDatabase();
  key = (await createKey(db.pool, 'enterprise', 'exclusions property')).key;
  api = await startApi(db.url, { cacheMaxBytes: 0 });
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
});

/** The values an arbitrary makes. */
type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

// ---- addresses: two small neighbourhoods, so that random networks cover some of them and not others --------

const v4 = fc.nat(255).map((n) => `203.0.113.${n}`);
const v6 = fc.nat(255).map((n) => `2001:db8::${n.toString(16)}`);
const address = fc.oneof(v4, v6);

/** Hours ago, away from every window's edge (24, 168, 720 hours), so that a minute passing changes no list. */
const ago = fc.constantFrom(0.5, 2, 20, 30, 150, 200, 500, 700, 750);
const maybeAgo = fc.option(ago, { nil: undefined });

const activity = fc
  .record({
    honeypot: maybeAgo,
    telescope: maybeAgo,
    interaction: maybeAgo,
    critical: maybeAgo,
    ssh: maybeAgo,
    confirmed: maybeAgo,
    scannerKind: fc.constantFrom(undefined, undefined, 'research_scanner' as const, 'asset_scanner' as const),
  })
  .filter((a) => a.honeypot !== undefined || a.telescope !== undefined);

const fixture = (ip: string, a: ValueOf<typeof activity>): FixtureAddress => ({
  ip,
  honeypot: a.honeypot,
  telescope: a.telescope,
  interaction: a.interaction,
  critical: a.critical,
  confirmed: a.confirmed,
  scannerKind: a.scannerKind,
  services: a.ssh === undefined ? {} : { ssh: a.ssh },
  country: 'DE',
});

// ---- exclusions ---------------------------------------------------------------------------------------------

/** A network around one of the addresses, as the operator might type it (an IPv4 one sometimes IPv4-mapped). */
const networkText = fc.tuple(address, fc.nat(8), fc.boolean(), fc.boolean()).map(([ip, shorter, mapped, bare]) => {
  const parsed = ipaddr.parse(ip);
  const bits = parsed.kind() === 'ipv4' ? 32 : 128;
  const prefix = bare ? bits : bits - shorter;
  const bytes = parsed.toByteArray().map((byte, i) => byte & ((0xff00 >> Math.max(0, Math.min(8, prefix - i * 8))) & 0xff));
  const network = ipaddr.fromByteArray(bytes).toString();
  if (parsed.kind() === 'ipv4' && mapped) return bare ? `::ffff:${network}` : `::ffff:${network}/${96 + prefix}`;
  return bare ? network : `${network}/${prefix}`;
});

const exclusion = fc.record({
  network: networkText,
  fate: fc.constantFrom('in-force', 'in-force', 'until-later', 'expired', 'removed'),
});

async function makeExclusion(e: ValueOf<typeof exclusion>): Promise<void> {
  const parsed = parseAddressOrNetwork(e.network);
  if (!parsed.ok) throw new Error(`${e.network}: ${parsed.problem}`);
  const until = e.fate === 'until-later' ? new Date(Date.now() + 2 * 3_600_000) : undefined;
  const outcome = await addExclusion(db.pool, { network: parsed.network.cidr, reason: 'property', createdBy: 'test', until });
  if (!('added' in outcome)) return; // the same network is excluded already
  const { id } = outcome.added;
  if (e.fate === 'expired') await db.pool.query(`update exclusions set until = now() - interval '1 hour' where id = $1`, [id]);
  if (e.fate === 'removed') await removeExclusions(db.pool, { id }, 'test');
}

/** The oracle: is the address inside an exclusion in force? ipaddr.js over the stored rows. */
function excludedBy(exclusions: Exclusion[], ip: string, now: number): Exclusion | undefined {
  const a = ipaddr.parse(ip);
  return exclusions.find((e) => {
    if (e.removedAt || (e.until && e.until.getTime() <= now)) return false;
    const [net, bits] = ipaddr.parseCIDR(e.network);
    return net.kind() === a.kind() && a.match(net, bits);
  });
}

// ---- the API --------------------------------------------------------------------------------------------------

const get = (path: string) => getWithKey(api, key, path);

interface CheckAnswer {
  ip: string;
  listed: boolean;
  excluded: { network: string } | null;
  lists: { list: string; hours: number; type?: string; listed: boolean }[];
}

const pathOf = (l: { list: string; hours: number; type?: string }) =>
  `/api/${l.list}?hours=${l.hours}${l.type && l.type !== 'all' ? `&type=${l.type}` : ''}`;

/** Lists the check does not name, with other filters: they must leave excluded addresses out too. */
const OTHER_LISTS = [
  '/api/honeypot/dedup?hours=24', '/api/honeypot/dedup?hours=168', '/api/dedup?hours=168&include_scan=0&include_research=1',
  '/api/export?hours=720&include_research=1', '/api/export?hours=720&level=high', '/api/export?hours=168&precision=high',
  '/api/export?hours=720&source=honeypot&service=ssh', '/api/scan-export?hours=720&include_research=1',
];

const FORMATS = ['txt', 'csv', 'json'] as const;

async function answers(paths: string[]): Promise<Map<string, Set<string>>> {
  const sets = new Map<string, Set<string>>();
  for (const path of paths) {
    const [first, ...others] = await Promise.all(FORMATS.map(async (format) => addressesIn(await get(`${path}&format=${format}`), format)));
    for (const other of others) expect(new Set(other), path).toEqual(new Set(first));
    sets.set(path, new Set(first));
  }
  return sets;
}

async function checkOf(ip: string): Promise<CheckAnswer> {
  const answer = JSON.parse(await get(`/api/check?ip=${encodeURIComponent(ip)}`)) as CheckAnswer;
  // txt says the same, line by line.
  const txt = await get(`/api/check?ip=${encodeURIComponent(ip)}&format=txt`);
  for (const l of answer.lists) expect(txt).toContain(`\nlist ${l.list} hours=${l.hours}${l.type ? ` type=${l.type}` : ''}: ${l.listed ? 'yes' : 'no'}\n`);
  expect(txt).toContain(`\nexcluded: ${answer.excluded ? 'yes' : 'no'}\n`);
  return answer;
}

describe('exclusions', () => {
  it('no excluded address is in any list, export, scan list or format; nothing else leaves; the check agrees with every list', async () => {
    const checkedPaths = (await checkOf('203.0.113.1')).lists.map(pathOf);
    const paths = [...checkedPaths, ...OTHER_LISTS];
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(address, activity), { minLength: 1, maxLength: 14, selector: ([ip]) => ip }),
        fc.array(exclusion, { maxLength: 6 }),
        fc.array(address, { maxLength: 3 }),
        async (addresses, exclusions, strangers) => {
          await db.pool.query('truncate addresses, ip_hourly, events, exclusions');
          await insertAddresses(db.pool, addresses.map(([ip, a]) => fixture(ip, a)));
          const before = await answers(paths);

          for (const e of exclusions) await makeExclusion(e);
          const stored = await listExclusions(db.pool, { all: true });
          const now = Date.now();
          const after = await answers(paths);
          for (const path of paths) {
            const kept = [...(before.get(path) ?? [])].filter((ip) => !excludedBy(stored, ip, now));
            expect(after.get(path), path).toEqual(new Set(kept));
          }

          // Every address stored, some never seen (inside exclusions or not), and a non-global one.
          for (const ip of [...addresses.map(([a]) => a), ...strangers, '10.9.8.7']) {
            const answer = await checkOf(ip);
            const exclusion = excludedBy(stored, answer.ip, now);
            expect(answer.excluded !== null, `${ip} excluded`).toBe(exclusion !== undefined);
            for (const l of answer.lists) expect(l.listed, `${ip} in ${pathOf(l)}`).toBe(after.get(pathOf(l))?.has(answer.ip) ?? false);
            expect(answer.listed, ip).toBe(answer.lists.some((l) => l.listed));
            if (exclusion) expect(answer.listed, ip).toBe(false);
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});

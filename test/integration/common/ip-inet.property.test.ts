// Addresses mean the same to common/ip.ts and to PostgreSQL's inet, which stores them: the canonical text the
// ingest writes names the address its unambiguous eight-group spelling names, and the text PostgreSQL gives
// back (host(), which reclassifying reads) parses to the same address again — IPv4-compatible (::a.b.c.d),
// IPv4-mapped and zero-run forms included.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatIPv4, parseAddress } from '../../../common/ip.ts';
import { freshDatabase, type TestDatabase } from '../../support/db.ts';

/** All eight groups, four hex digits each: a spelling no reader can take for another address. */
function fullSpelling(value: bigint): string {
  return Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16).padStart(4, '0')).join(':');
}

const group = fc.oneof(fc.constant(0n), fc.constant(0xffffn), fc.bigInt({ min: 0n, max: 0xffffn }));
/** 128-bit values rich in runs of zeros, with IPv4-compatible and IPv4-mapped ones among them. */
const v6Value = fc.oneof(
  fc.array(group, { minLength: 8, maxLength: 8 }).map((groups) => groups.reduce((n, g) => (n << 16n) | g, 0n)),
  fc.bigInt({ min: 0n, max: (1n << 32n) - 1n }),
  fc.bigInt({ min: 0n, max: (1n << 32n) - 1n }).map((v) => (0xffffn << 32n) | v),
);

describe('addresses as PostgreSQL stores them', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ migrated: false });
  });
  afterAll(async () => db.drop());

  it('agree in both directions', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(v6Value, fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((n) => formatIPv4(n))), { minLength: 1, maxLength: 200 }), async (inputs) => {
        const spellings = inputs.map((v) => (typeof v === 'bigint' ? fullSpelling(v) : v));
        // what each names: an IPv4-mapped address is the IPv4 host it carries
        const named = inputs.map((v, i) => (typeof v === 'bigint' && v >> 32n === 0xffffn ? formatIPv4(Number(v & 0xffffffffn)) : spellings[i]));
        const ours = spellings.map((s) => {
          const a = parseAddress(s);
          if (!a) throw new Error(`${s} did not parse`);
          return a;
        });
        const { rows } = await db.pool.query<{ same: boolean; given: string; written: string }>(
          `select n::inet = o::inet as same, host(s::inet) as given, host(o::inet) as written
           from unnest($1::text[], $2::text[], $3::text[]) as t(s, n, o)`,
          [spellings, named, ours.map((a) => a.text)],
        );
        rows.forEach((row, i) => {
          const what = `${spellings[i]} written as ${ours[i]?.text}`;
          expect(row.same, what).toBe(true);
          expect(parseAddress(row.given), `${what}: PostgreSQL prints ${row.given}`).toEqual(ours[i]);
          expect(parseAddress(row.written), `${what}: PostgreSQL prints ${row.written}`).toEqual(ours[i]);
        });
      }),
      { numRuns: 30 },
    );
  });
});

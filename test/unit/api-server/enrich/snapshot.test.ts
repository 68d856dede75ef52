// The enrichment snapshot must answer exactly as the tables it was made from, and a damaged file must be
// refused (then rebuilt) rather than half read.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatIPv4, parseAddress, type Address } from '../../../../common/ip.ts';
import { Enricher } from '../../../../api-server/enrich/enricher.ts';
import { encodeSnapshot, loadEnrichmentTables, readSnapshot, snapshotName } from '../../../../api-server/enrich/snapshot.ts';
import { buildEnrichmentTables } from '../../../../api-server/enrich/tables.ts';

const built = buildEnrichmentTables();
const bytes = encodeSnapshot(built);
const dir = `${mkdtempSync(path.join(tmpdir(), 'blockfeed-snapshot-'))}/`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Addresses spread over the whole IPv4 space (a fixed pseudo-random walk), plus known ones and IPv6. */
function sample(): Address[] {
  const out: Address[] = [];
  let x = 7;
  for (let i = 0; i < 20_000; i++) {
    x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0;
    out.push(parseAddress(formatIPv4(x)) as Address);
  }
  for (const ip of ['222.85.85.85', '202.112.0.1', '162.142.125.7', '240e:47d:c20:1627::1', '2001:db8::1']) out.push(parseAddress(ip) as Address);
  return out;
}

describe('enrichment snapshot', () => {
  it('answers exactly as the tables it was made from', () => {
    const read = readSnapshot(bytes);
    expect(read).toBeDefined();
    const fresh = new Enricher(built);
    const fromSnapshot = new Enricher(read);
    for (const a of sample()) expect(fromSnapshot.enrich(a), a.text).toEqual(fresh.enrich(a));
  });

  it('is refused when damaged: another format, truncated, or cut inside an array', () => {
    expect(readSnapshot(Buffer.from('not a snapshot'))).toBeUndefined();
    expect(readSnapshot(bytes.subarray(0, 20))).toBeUndefined();
    expect(readSnapshot(bytes.subarray(0, bytes.length - 1000))).toBeUndefined();
  });

  it('is written on first use and read afterwards; a damaged file is replaced', () => {
    const first = loadEnrichmentTables(dir);
    expect(readdirSync(dir)).toEqual([snapshotName()]);
    expect(new Enricher(loadEnrichmentTables(dir)).enrich(parseAddress('61.135.169.125') as Address)).toEqual(
      new Enricher(first).enrich(parseAddress('61.135.169.125') as Address),
    );
    writeFileSync(`${dir}${snapshotName()}`, 'garbage');
    expect(new Enricher(loadEnrichmentTables(dir)).enrich(parseAddress('222.85.85.85') as Address)).toMatchObject({ country: 'CN', asn: 4134 });
    expect(readSnapshot(readFileSync(`${dir}${snapshotName()}`))).toBeDefined();
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import { reclassify } from '../../../../api-server/enrich/reclassify.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

describe('reclassify', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  it('rewrites stale enrichment and scanner identity, and only where it changed', async () => {
    await db.pool.query(`insert into addresses (ip, first_seen, last_seen, country, net, scanner_kind, scanner_org)
      values ('162.142.125.7', now(), now(), 'DE', 'idc', null, null),
             ('222.85.85.85', now(), now(), 'CN', 'broadband', 'research_scanner', 'Nobody'),
             ('120.24.78.68', now(), now(), 'CN', 'idc', null, null)`);
    // the third row is as enrichment would write it, but for the carrier fields: province, city, carrier, isp
    await db.pool.query(`update addresses set province = '广东省', city = '深圳市', carrier = '阿里云', asn = 37963,
      as_name = 'Hangzhou Alibaba Advertising Co.,Ltd.' where ip = '120.24.78.68'`);
    const first = await reclassify(db.pool, sharedEnricher());
    expect(first.addresses).toBe(3);
    const { rows } = await db.pool.query('select host(a.ip) as ip, country, province, isp, net, scanner_kind, scanner_org from addresses a order by a.ip');
    expect(rows).toEqual([
      { ip: '120.24.78.68', country: 'CN', province: '广东省', isp: null, net: 'idc', scanner_kind: null, scanner_org: null },
      { ip: '162.142.125.7', country: 'US', province: null, isp: null, net: 'broadband', scanner_kind: 'research_scanner', scanner_org: 'Censys' },
      { ip: '222.85.85.85', country: 'CN', province: '河南省', isp: '电信', net: 'broadband', scanner_kind: null, scanner_org: null },
    ]);
    expect(first.changed).toBe(2);
    expect((await reclassify(db.pool, sharedEnricher())).changed).toBe(0);
  });
});

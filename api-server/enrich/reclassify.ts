// `blockfeed reclassify`: recomputes every stored address's enrichment and scanner identity from the current
// lookup tables and data/*.yaml (after updating the curated lists or the npm data packages). Addresses are
// read and rewritten in pages of 20,000, each page one COPY and one UPDATE of the rows that changed.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { ATTACK_DATA_LOCK } from '../db/locks.ts';
import { copyNumber, copyText } from '../ingest/copy-text.ts';
import { parseAddress } from './address.ts';
import type { Enricher } from './enricher.ts';

const PAGE = 20_000;

const STAGING = `create temp table if not exists reclassify_staging (
  ip inet, country char(2), province text, city text, carrier text, isp text, asn integer, as_name text, net text,
  scanner_kind text, scanner_org text) on commit delete rows`;

const APPLY = `
update addresses a
set country = s.country, province = s.province, city = s.city, carrier = s.carrier, isp = s.isp, asn = s.asn,
    as_name = s.as_name, net = s.net, scanner_kind = s.scanner_kind, scanner_org = s.scanner_org, enriched_at = now()
from reclassify_staging s
where a.ip = s.ip
  and (a.country, a.province, a.city, a.carrier, a.isp, a.asn, a.as_name, a.net, a.scanner_kind, a.scanner_org)
      is distinct from (s.country, s.province, s.city, s.carrier, s.isp, s.asn, s.as_name, s.net, s.scanner_kind, s.scanner_org)`;

export interface ReclassifyResult {
  addresses: number;
  changed: number;
}

export async function reclassify(pool: pg.Pool, enricher: Enricher): Promise<ReclassifyResult> {
  const client = await pool.connect();
  let addresses = 0;
  let changed = 0;
  try {
    await client.query(STAGING);
    let after = '';
    for (;;) {
      // Keyset pagination on the primary key: each page is an index range scan, whatever the table's size.
      const { rows } = await client.query<{ ip: string }>(
        // (order by the inet column, not by its text: `a.ip`)
        after
          ? 'select host(a.ip) as ip from addresses a where a.ip > $1::inet order by a.ip limit $2'
          : 'select host(a.ip) as ip from addresses a order by a.ip limit $1',
        after ? [after, PAGE] : [PAGE],
      );
      if (!rows.length) break;
      const lines: string[] = [];
      for (const { ip } of rows) {
        const address = parseAddress(ip);
        if (!address) continue;
        const x = enricher.enrich(address);
        lines.push(`${ip}\t${copyText(x.country)}\t${copyText(x.province)}\t${copyText(x.city)}\t${copyText(x.carrier)}\t${copyText(x.isp)}\t${copyNumber(x.asn)}\t${copyText(x.asName)}\t${x.net}\t${copyText(x.scannerKind)}\t${copyText(x.scannerOrg)}\n`);
      }
      await client.query('begin');
      // As every writer of attack data (db/locks.ts): an ingest window updating the same rows never deadlocks with it.
      await client.query('select pg_advisory_xact_lock($1)', [ATTACK_DATA_LOCK]);
      await pipeline(Readable.from([lines.join('')]), client.query(copyFrom('copy reclassify_staging from stdin')));
      changed += (await client.query(APPLY)).rowCount ?? 0;
      await client.query('commit');
      addresses += rows.length;
      after = (rows.at(-1) as { ip: string }).ip;
    }
    return { addresses, changed };
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

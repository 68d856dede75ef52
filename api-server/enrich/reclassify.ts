// `blockfeed reclassify`: recomputes every stored address's enrichment and scanner identity from the current
// lookup tables and data/*.yaml (after updating the curated lists or the npm data packages). Addresses are
// read and rewritten in pages of 20,000, each page one UPDATE of the rows that changed.
import type pg from 'pg';
import { ATTACK_DATA_LOCK } from '../store/locks.ts';
import { parseAddress } from '../../common/ip.ts';
import type { Enricher, Enrichment } from './enricher.ts';

const PAGE = 20_000;

/** The enrichment columns, in the order of the page's arrays ($2 …). */
const COLUMNS = [
  ['country', 'char(2)'], ['province', 'text'], ['city', 'text'], ['carrier', 'text'], ['isp', 'text'], ['asn', 'integer'],
  ['as_name', 'text'], ['net', 'text'], ['scanner_kind', 'text'], ['scanner_org', 'text'],
] as const;
const FIELDS: readonly (keyof Enrichment)[] = ['country', 'province', 'city', 'carrier', 'isp', 'asn', 'asName', 'net', 'scannerKind', 'scannerOrg'];

const names = COLUMNS.map(([name]) => name).join(', ');
const APPLY = `
update addresses a
set ${COLUMNS.map(([name]) => `${name} = s.${name}`).join(', ')}, enriched_at = now()
from unnest($1::inet[], ${COLUMNS.map(([, type], i) => `$${i + 2}::${type}[]`).join(', ')}) as s(ip, ${names})
where a.ip = s.ip
  and (${COLUMNS.map(([name]) => `a.${name}`).join(', ')}) is distinct from (${COLUMNS.map(([name]) => `s.${name}`).join(', ')})`;

export interface ReclassifyResult {
  addresses: number;
  changed: number;
}

export async function reclassify(pool: pg.Pool, enricher: Enricher): Promise<ReclassifyResult> {
  const client = await pool.connect();
  let addresses = 0;
  let changed = 0;
  try {
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
      const ips: string[] = [];
      const columns: unknown[][] = FIELDS.map(() => []);
      for (const { ip } of rows) {
        const address = parseAddress(ip);
        if (!address) continue;
        const x = enricher.enrich(address);
        ips.push(ip);
        FIELDS.forEach((field, i) => columns[i]?.push(x[field]));
      }
      await client.query('begin');
      // As every writer of attack data (store/locks.ts): an ingest window updating the same rows never deadlocks with it.
      await client.query('select pg_advisory_xact_lock($1)', [ATTACK_DATA_LOCK]);
      const changedHere = (await client.query(APPLY, [ips, ...columns])).rowCount ?? 0;
      // The rollups count attacks per country as the addresses had them: rebuilt by the next compaction,
      // read from the hourly rows meanwhile (docs/data-model.md "Rollups").
      if (changedHere > 0) await client.query('select invalidate_rollups()');
      changed += changedHere;
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

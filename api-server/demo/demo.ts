// Loads demo events through the normal ingest writer (same enrichment, classification and rollups).
import type pg from 'pg';
import type { Logger } from '../../common/logging.ts';
import { loadScannerOrganisations } from '../enrich/curated.ts';
import { sharedEnricher } from '../enrich/enricher.ts';
import { EventWriter } from '../ingest/writer.ts';
import { DEMO_DEFAULTS } from './defaults.ts';
import { addressPools, demoEvents, type DemoOptions } from './generate.ts';

export async function loadDemo(pool: pg.Pool, log: Logger, options: Partial<DemoOptions> = {}): Promise<{ events: number; inserted: number }> {
  const o: DemoOptions = { ...DEMO_DEFAULTS, now: Date.now(), ...options };
  const enricher = sharedEnricher();
  const pools = addressPools(enricher.regions.rangesV4(), loadScannerOrganisations());
  const writer = new EventWriter(pool, () => enricher);
  let events = 0;
  let inserted = 0;
  for (const batch of demoEvents(pools, o)) {
    events += batch.length;
    inserted += await writer.write(batch);
    log.debug({ events, of: o.events }, 'demo data');
  }
  return { events, inserted };
}

/** True when no event has been stored yet (a first run). */
export async function isEmpty(pool: pg.Pool): Promise<boolean> {
  const { rows } = await pool.query<{ empty: boolean }>('select not exists (select 1 from events) as empty');
  return rows[0]?.empty ?? true;
}

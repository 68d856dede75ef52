// The writer loads the enrichment tables when first needed, once: not when it is made (the ingest worker
// reads its first line sooner without them), and not again on later calls.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { sharedEnricher } from '../../../api-server/enrich/enricher.ts';
import { EventWriter } from '../../../api-server/ingest/writer.ts';

describe('EventWriter and the enrichment tables', () => {
  it('loads them on the first idle moment, and only once', async () => {
    let loads = 0;
    // Never connected: the pool only opens connections for queries.
    const pool = new pg.Pool();
    const writer = new EventWriter(pool, () => {
      loads++;
      return sharedEnricher();
    });
    expect(loads).toBe(0);
    writer.idle();
    writer.idle();
    expect(loads).toBe(1);
    await pool.end();
  });
});

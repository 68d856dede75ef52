// The writer gives back every connection the pool hands it, also one on which its staging tables cannot be
// made: a connection kept by nobody is never returned, and a pool short of one waits for it for ever.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import type { AttackEvent } from '../../../../api-server/ingest/event.ts';
import { EventWriter } from '../../../../api-server/ingest/writer.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { sshLogin } from '../../../support/events.ts';

const event: AttackEvent = sshLogin({ ts: Date.UTC(2026, 10, 20, 13) });

let db: TestDatabase;
beforeAll(async () => {
  // No tables: the staging tables, made `like events`, cannot be made on its connections.
  db = await freshDatabase({ migrated: false });
});
afterAll(async () => {
  await db.drop();
});

describe('the event writer', () => {
  it('returns a connection to the pool when its staging tables cannot be made', async () => {
    const writer = new EventWriter(db.pool, sharedEnricher);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const failure: unknown = await writer.write([event]).then(() => undefined, (err: unknown) => err);
      expect((failure as { code?: string }).code, `attempt ${attempt}`).toBe('42P01'); // undefined_table
      // Connections handed out and not given back: none.
      expect(db.pool.totalCount - db.pool.idleCount, `attempt ${attempt}`).toBe(0);
    }
  });
});

// The authenticator's memory of verified keys against a revocation that arrives while a key is being
// verified: the answer of that verification may be used for its own request, but must not be remembered.
import type { FastifyRequest } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../../../api-server/http/auth.ts';
import type { ApiRouteConfig } from '../../../../api-server/http/route-config.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { parseTierQuotas } from '../../../../api-server/keys/tiers.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const ROUTE: ApiRouteConfig = { variant: 'B', access: 'key', endpoint: 'dedup' };
const requestWith = (key: string) => ({ headers: { 'x-api-key': key }, query: {} }) as unknown as FastifyRequest;

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('remembered keys', () => {
  it('a verification in flight when a revocation notice arrives does not put the key back in memory', async () => {
    const { key, record } = await createKey(db.pool, 'enterprise', 'revoked mid-check');
    // One connection, held by the test: the authenticator's lookup queues behind it.
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      const auth = createAuthenticator({ pool, tiers: parseTierQuotas('enterprise=unlimited'), keyCacheSeconds: 60 });
      const held = await pool.connect();
      const inFlight = auth.authenticate(requestWith(key), ROUTE);
      // The revocation lands while the lookup waits: it is committed and its notice makes the server forget.
      await held.query('update api_keys set revoked_at = now() where id = $1', [record.id]);
      auth.forget();
      // The queued lookup now runs after the revocation and must refuse the key...
      held.release();
      await expect(Promise.resolve(inFlight)).rejects.toMatchObject({ statusCode: 401 });

      // ...and a lookup that read the key just before the revocation is not remembered either.
      await db.pool.query('update api_keys set revoked_at = null where id = $1', [record.id]);
      const held2 = await pool.connect();
      const secondFlight = auth.authenticate(requestWith(key), ROUTE);
      auth.forget(); // a notice for some other key arrives while this lookup waits
      held2.release();
      expect(await secondFlight).toMatchObject({ kind: 'key' });
      await db.pool.query('update api_keys set revoked_at = now() where id = $1', [record.id]);
      // Had the in-flight answer been remembered, this would be served from memory without a lookup.
      await expect(Promise.resolve(auth.authenticate(requestWith(key), ROUTE))).rejects.toMatchObject({ statusCode: 401 });
    } finally {
      await pool.end();
    }
  });
});

// Immediate revocation across replicas: `keys revoke` NOTIFYs, every server LISTENs and forgets the keys it
// remembers. If the listening connection is lost, keys are forgotten too (a notice may have been missed) and
// it reconnects; meanwhile the remembered keys still expire after BLOCKFEED_KEY_CACHE_SECONDS.
import type pg from 'pg';
import type { Logger } from '../../common/logging.ts';
import { REVOCATION_CHANNEL } from './store.ts';

interface RevocationListener {
  /** Settles once the first attempt to LISTEN has finished, so a server is not ready before it listens. */
  ready: Promise<void>;
  close(): Promise<void>;
}

export function listenForRevocations(pool: pg.Pool, log: Logger, forget: () => void, retryMs = 5000): RevocationListener {
  let client: pg.PoolClient | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;

  const lost = (err: Error) => {
    if (closed) return;
    log.warn({ err: { message: err.message } }, 'key revocation listener lost its connection; reconnecting');
    client?.release(true);
    client = undefined;
    forget();
    retry = setTimeout(() => void connect(), retryMs);
    retry.unref();
  };

  async function connect(): Promise<void> {
    try {
      const c = await pool.connect();
      if (closed) return c.release();
      // Held from here on, so close() releases it even while LISTEN is still on its way.
      client = c;
      c.on('notification', (n) => {
        if (n.channel === REVOCATION_CHANNEL) forget();
      });
      c.on('error', lost);
      await c.query(`listen ${REVOCATION_CHANNEL}`);
      forget(); // anything revoked while we were not listening
    } catch (err) {
      lost(err as Error);
    }
  }
  const ready = connect();

  return {
    ready,
    close: async () => {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      // Dropping the connection ends the LISTEN; no round trip needed on the way out.
      c?.release(true);
    },
  };
}

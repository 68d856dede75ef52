// A change to the operator's exclusions reaches every server at once: a trigger NOTIFYs in the writing
// transaction (migration 0010), with the list data version the change moved to, and every server hears it on its one
// listening connection (store/listener.ts) and drops the answers it keeps, which may hold an address that
// must be left out now. The version is the floor below which no list is kept or read from a standby again
// (cache.ts, query/list-source.ts). When notices may have been missed (the connection was lost, or is
// listening anew), the answers are dropped too, and the floor is the primary's version once it can be read.
import type pg from 'pg';
import type { Logger } from '../../common/logging.ts';
import { parseDataVersion, readDataVersion, type DataVersion } from '../query/data-version.ts';
import type { StoreListener } from '../store/listener.ts';
import { EXCLUSIONS_CHANNEL } from '../exclusions/store.ts';

/** `drop(floor)`: forget every kept answer; no list older than `floor`, when given, may be kept or served again. */
export function listenForExclusionChanges(listener: StoreListener, pool: pg.Pool, log: Logger, drop: (floor?: DataVersion) => void): void {
  listener.listen(EXCLUSIONS_CHANNEL, {
    notified: (payload) => drop(parseDataVersion(payload)),
    resync: () => {
      drop();
      void readDataVersion(pool).then(drop, (err: Error) => log.warn({ err: { message: err.message } }, 'could not read the data version after the exclusions listener resynced'));
    },
  });
}

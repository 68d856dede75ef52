// Which server a list is read from. Without standbys, the primary. With standbys (DATABASE_READ_URL), a
// standby, which may lag behind the primary by the replication delay or more (its replay paused, a slow
// network). What a client that presents a list it holds (If-None-Match) gets back stays true all the same:
// - no 304 for a list that changed: its version is compared with the freshest the store knows, the
//   primary's, read first (one single-row read); a standby serves only once it has caught up with that;
// - never a list older than the one it holds: a standby behind it is passed over for the primary, and with
//   the primary unreachable the request is a 503 with Retry-After (STANDBYS_BEHIND), not the older list.
// A request that holds no list is read from a standby as it is. Standbys that cannot be reached leave every
// list to the primary. docs/http-api.md "Reading from standbys".
import type { Logger } from '../../common/logging.ts';
import { hasStandbys, type StorePools } from '../store/database.ts';
import { STANDBYS_BEHIND, StoreUnavailableError, isStoreUnavailable } from '../store/unavailable.ts';
import { isOlder, newer, readDataVersion, type DataVersion } from './data-version.ts';
import { openListSnapshot, type ListSnapshot } from './stream.ts';

/**
 * Opens the snapshot a list is read from: on a standby unless it is behind what must not be lost (above).
 * `held`: the newest list version the client presents, if any. `minimum`: a version no list may be older
 * than, known without asking the primary (the last change to the exclusions, http/exclusion-changes.ts): a
 * standby behind it is passed over for the primary.
 */
export async function openListSource(pools: StorePools, log: Logger, held?: DataVersion, minimum?: DataVersion): Promise<ListSnapshot> {
  if (!hasStandbys(pools)) return openListSnapshot(pools.pool, log);
  // The version the standby must have reached: the primary's when it answers (the freshest there is),
  // else the client's own; and at least the minimum.
  let floor = held;
  let primaryAnswered = false;
  if (held) {
    try {
      floor = await readDataVersion(pools.pool);
      primaryAnswered = true;
    } catch (err) {
      if (!isStoreUnavailable(err)) throw err;
    }
  }
  if (minimum) floor = floor ? newer(floor, minimum) : minimum;
  let snapshot: ListSnapshot;
  try {
    snapshot = await openListSnapshot(pools.readPool, log, 'standby');
  } catch (err) {
    if (!isStoreUnavailable(err)) throw err;
    return openListSnapshot(pools.pool, log);
  }
  if (!floor || !isOlder(snapshot.dataVersion, floor)) return snapshot;
  await snapshot.close();
  // Behind the minimum alone (the primary was not asked): the primary has it.
  if (primaryAnswered || !held) return openListSnapshot(pools.pool, log);
  throw new StoreUnavailableError(STANDBYS_BEHIND);
}

// Immediate revocation across replicas: `keys revoke` NOTIFYs, every server LISTENs (store/listener.ts) and
// forgets the keys it remembers. If the listening connection is lost, keys are forgotten too (a notice may have
// been missed), and again once it listens anew; meanwhile the remembered keys still expire after
// BLOCKFEED_KEY_CACHE_SECONDS.
import type { StoreListener } from '../store/listener.ts';
import { REVOCATION_CHANNEL } from './store.ts';

export function listenForRevocations(listener: StoreListener, forget: () => void): void {
  listener.listen(REVOCATION_CHANNEL, { notified: forget, resync: forget });
}

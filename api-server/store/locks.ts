// Advisory lock keys the blockfeed processes agree on (transaction-scoped unless said otherwise).

/**
 * Held by every writer of attack data for its whole transaction: ingest windows, compaction, retention and
 * reclassification. Writers thus never wait on each other's rows (no deadlocks to retry), and an ingest window
 * may create partitions inside its own transaction. The migrator takes the same key, so no data is written
 * while the schema changes.
 */
export const ATTACK_DATA_LOCK = 0x626c6b66; // "blkf"

/**
 * Held by every writer of exclusions and removal requests (exclusions/store.ts) for its transaction, so that
 * "not excluded yet" and the caps on pending requests hold however many replicas and commands write at once.
 */
export const EXCLUSIONS_LOCK = 0x626c6b72; // "blkr"

// Retention (docs/data-model.md): raw events and the rollups are kept 30 days plus 2 days of margin and
// dropped a whole daily partition at a time (DROP TABLE, never DELETE; the small totals tables by DELETE);
// addresses not seen since then go too.
import type pg from 'pg';
import type { Logger } from '../../common/logging.ts';
import { ATTACK_DATA_LOCK } from '../store/locks.ts';
import { inTransaction } from '../store/transaction.ts';
import { compactHourly, type CompactionResult } from './compaction.ts';

export const RETENTION_DAYS = 30;
export const MARGIN_DAYS = 2;
const DAY = 86_400_000;

interface RetentionResult {
  cutoff: Date;
  droppedPartitions: number;
  removedAddresses: number;
}

/** The instant before which data is dropped. Partitions whose day ends at or before it go. */
function retentionCutoff(now: Date): Date {
  return new Date(now.getTime() - (RETENTION_DAYS + MARGIN_DAYS) * DAY);
}

export async function applyRetention(pool: pg.Pool, now = new Date()): Promise<RetentionResult> {
  const cutoff = retentionCutoff(now);
  return inTransaction(pool, async (client) => {
    await client.query('select pg_advisory_xact_lock($1)', [ATTACK_DATA_LOCK]);
    await client.query('delete from ip_hourly_dirty where day < $1::date', [cutoff]);
    const dropped = await client.query<{ n: number }>('select drop_attack_partitions_before($1) as n', [cutoff]);
    // The rollups of the days whose partitions went: those before the first day kept.
    const firstKept = new Date(cutoff.getTime() - (cutoff.getTime() % DAY));
    for (const table of ['attack_totals', 'port_totals']) await client.query(`delete from ${table} where period < $1`, [firstKept]);
    await client.query('delete from rollup_hours where hour < $1', [firstKept]);
    const removed = await client.query('delete from addresses where last_seen < $1', [cutoff]);
    return { cutoff, droppedPartitions: dropped.rows[0]?.n ?? 0, removedAddresses: removed.rowCount ?? 0 };
  });
}

/**
 * Creates the daily partitions of today and the next two days ahead of the data. An ingest creates a missing
 * day's partitions itself, inside its window; that DDL locks the partitioned tables, and a reader holding one
 * of them while waiting for the other then deadlocks with it. Made here, in a transaction of its own, live
 * ingests (the push route, `tail -F`) never need it.
 */
export async function ensureUpcomingPartitions(pool: pg.Pool, now = new Date()): Promise<void> {
  await pool.query('select ensure_attack_partitions($1::date, $1::date + 2)', [now.toISOString().slice(0, 10)]);
}

/** Partitions ahead, retention, then compaction of the hourly rows ingest appended since the last run. */
export async function maintain(pool: pg.Pool, now = new Date()): Promise<RetentionResult & { compaction: CompactionResult }> {
  await ensureUpcomingPartitions(pool, now);
  const retention = await applyRetention(pool, now);
  return { ...retention, compaction: await compactHourly(pool) };
}

/** Runs the maintenance now and then every `intervalMs` (serve); returns a function that stops it. */
export function scheduleRetention(pool: pg.Pool, log: Logger, intervalMs = 3_600_000): () => void {
  let running = false;
  const run = () => {
    if (running) return;
    running = true;
    maintain(pool)
      .then((r) => {
        if (r.droppedPartitions || r.removedAddresses) log.info({ ...r, cutoff: r.cutoff.toISOString() }, 'retention applied');
        if (r.compaction.days) log.debug(r.compaction, 'hourly rows compacted');
      })
      .catch((err: Error) => log.warn({ err: { message: err.message } }, 'retention failed; will retry'))
      .finally(() => (running = false));
  };
  // The partitions of the coming days at once, before the first push can need them; the rest a little later.
  ensureUpcomingPartitions(pool).catch((err: Error) => log.warn({ err: { message: err.message } }, 'creating partitions failed; will retry'));
  const first = setTimeout(run, 5_000);
  const timer = setInterval(run, intervalMs);
  first.unref();
  timer.unref();
  return () => {
    clearTimeout(first);
    clearInterval(timer);
  };
}

// Streams a list's rows out of PostgreSQL with backpressure: one address a line through COPY (the cheapest
// way PostgreSQL has to emit rows, and the txt format as it is), or full records through a cursor, all inside
// one read-only snapshot whose data version is known before the list is read (the ETag, http/respond.ts).
// A reader that goes away (client disconnect) cancels the running statement and discards its connection.
// Turning records into csv or json is the render layer's (render/list-body.ts).
import { pipeline, type Duplex, type Readable } from 'node:stream';
import type pg from 'pg';
import QueryStream from 'pg-query-stream';
import { to as copyTo } from 'pg-copy-streams';
import type { Logger } from '../../common/logging.ts';
import { DATA_VERSION_SQL, dataVersionOf, type DataVersionRow } from './data-version.ts';
import { addressesSql, cappedCountSql, recordsSql, type ListFilter } from './list-sql.ts';
import { completeHours, hourOf, planWindow, windowRowsSql } from './rollups.ts';

/**
 * Drops the connection and stops its backend's statement. The connection goes back to the pool first: the
 * cancel needs a pooled connection of its own, and waiting for one while holding this one could exhaust the
 * pool when many lists fail at once (the store going away fails them all together).
 */
async function discard(pool: pg.Pool, client: pg.PoolClient, log: Logger): Promise<void> {
  const pid = (client as unknown as { processID?: number }).processID;
  client.release(true);
  if (pid) await pool.query('select pg_cancel_backend($1)', [pid]).catch((err: Error) => log.warn({ err: { message: err.message } }, 'could not cancel query'));
}

export interface ListReadOptions {
  filter: ListFilter;
  /** `addresses`: COPY text, one address a line; `records`: AddressRecord objects (list-sql.ts). */
  rows: 'addresses' | 'records';
  /** At most this many rows; beyond it the most severe and most recent are kept (truncated). */
  limit?: number;
  /** Count the matches first (needed for the json envelope and for truncation). */
  count: boolean;
}

export interface ListRows {
  /** In address order; the snapshot's connection is released when it ends or is destroyed. */
  rows: Readable;
  /** Rows in the stream (known when counted). */
  count?: number;
  truncated: boolean;
  /**
   * Pipes the rows into `end` (a formatter making them a body) and returns it; the rows are then read through
   * it only. A connection lost mid-list destroys `end` at once with the loss: the cursor, destroyed itself,
   * reports nothing until the dead connection answers, which it never does.
   */
  pipeTo<T extends Duplex>(end: T): T;
}

export type SnapshotSource = 'primary' | 'standby';

/** One read-only snapshot of the store, from which one list is read (or none). */
export interface ListSnapshot {
  /**
   * The version of the list data this snapshot sees (list_data_version, migration 0007): equal for two
   * snapshots only when they see the same addresses and rollups.
   */
  readonly dataVersion: DataVersionRow;
  /** Which server the snapshot is on: the primary, or a standby (list-source.ts). */
  readonly source: SnapshotSource;
  /** Reads a list; the connection is released when its rows end. At most once per snapshot. */
  read(options: ListReadOptions): Promise<ListRows>;
  /** Ends the snapshot without reading a list (the client has it already). */
  close(): Promise<void>;
}

/**
 * Opens a repeatable-read snapshot and reads the data version in it first, so the list read later in the
 * same snapshot is exactly the data of that version.
 */
export async function openListSnapshot(pool: pg.Pool, log: Logger, source: SnapshotSource = 'primary'): Promise<ListSnapshot> {
  const client = await pool.connect();
  let dataVersion: DataVersionRow;
  try {
    await client.query('begin isolation level repeatable read read only');
    const { rows } = await client.query<{ v: string; changed_at: Date }>(DATA_VERSION_SQL);
    dataVersion = dataVersionOf(rows[0]);
  } catch (err) {
    client.release(true);
    throw err;
  }
  return {
    dataVersion,
    source,
    read: (options) => readList(pool, client, log, options),
    close: async () => {
      try {
        await client.query('commit');
        client.release();
      } catch (err) {
        client.release(err as Error);
      }
    },
  };
}

/**
 * Reads the list on the snapshot's connection and returns its rows; the connection is released when they
 * end. The count and the rows come from the one snapshot, so a json envelope's count matches the data.
 */
async function readList(pool: pg.Pool, client: pg.PoolClient, log: Logger, { filter, rows, limit, count }: ListReadOptions): Promise<ListRows> {
  let matched: number | undefined;
  /** Records count attacks and ports over the window's rollup rows, from the coarsest complete ones. */
  let windowRows: string | undefined;
  try {
    if (count || limit !== undefined) {
      const cap = limit === undefined ? Number.MAX_SAFE_INTEGER : limit + 1;
      const { rows: counted } = await client.query<{ n: number }>(cappedCountSql(filter, cap));
      matched = counted[0]?.n ?? 0;
    }
    if (rows === 'records') {
      const start = hourOf(filter.since);
      windowRows = windowRowsSql(planWindow(start, await completeHours(client, start)));
    }
  } catch (err) {
    client.release(true);
    throw err;
  }
  const truncated = limit !== undefined && matched !== undefined && matched > limit;
  const shown = matched === undefined ? undefined : truncated && limit !== undefined ? limit : matched;
  const source: Readable =
    rows === 'addresses'
      ? client.query(copyTo(`copy (${addressesSql(filter, limit, truncated)}) to stdout`))
      : client.query(new QueryStream(recordsSql(filter, limit, truncated, windowRows), [], { batchSize: 2000, highWaterMark: 2000 }));
  let done = false;
  /** The last stream of the list: the rows, or what they are piped into (pipeTo). */
  let tail: Readable = source;
  // A connection that dies mid-list (the store went away) fails the cursor's read, and the cursor's stream
  // then waits for an answer that never comes before it reports anything: the answer would hang, holding
  // the connection. Its end is heard here instead, and ends the list's last stream.
  const lost = () => {
    // ECONNRESET: an answer not begun yet is a 503 (store/unavailable.ts); one begun is cut off.
    const err = Object.assign(new Error('the connection to the store was lost'), { code: 'ECONNRESET' });
    tail.destroy(err);
    void finish(err);
  };
  client.once('end', lost);
  const finish = async (err?: Error | null) => {
    if (done) return;
    done = true;
    client.removeListener('end', lost);
    if (err) {
      // Premature close (reader gone) or a failing statement: drop the connection and stop the backend.
      await discard(pool, client, log);
      return;
    }
    try {
      await client.query('commit');
      client.release();
    } catch (commitErr) {
      client.release(commitErr as Error);
    }
  };
  source.once('end', () => void finish());
  source.once('error', (err) => void finish(err));
  source.once('close', () => {
    if (!source.readableEnded) void finish(new Error('stream closed before its end'));
  });
  const pipeTo = <T extends Duplex>(end: T): T => {
    tail = end;
    // Either end failing destroys the other; a failure ends the snapshot as the rows' own events do.
    pipeline(source, end, (err) => {
      if (err) void finish(err);
    });
    return end;
  };
  return { rows: source, count: shown, truncated, pipeTo };
}

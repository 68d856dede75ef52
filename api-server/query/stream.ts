// Streams a list out of PostgreSQL with backpressure: txt through COPY (the cheapest way PostgreSQL has to
// emit rows), csv and json through a cursor and the record formatters, all inside one read-only snapshot
// whose data version is known before the list is read (the ETag, respond.ts). A consumer that goes away
// (client disconnect) cancels the running statement and discards its connection.
import { Transform, pipeline, type Readable } from 'node:stream';
import type pg from 'pg';
import QueryStream from 'pg-query-stream';
import { to as copyTo } from 'pg-copy-streams';
import type { Format } from '../../common/vocabulary.ts';
import type { Logger } from '../../common/logging.ts';
import { csvHeader, csvRecord, jsonClose, jsonOpen, jsonRecord, type AddressRecord, type ListEnvelope } from '../render/records.ts';
import { addressesSql, cappedCountSql, recordsSql, type ListFilter } from './list-sql.ts';

/** Chunk size handed to the socket when formatting records in JavaScript. */
const FLUSH_BYTES = 64 * 1024;

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

/** Formats address records into text, batching small strings into larger chunks. */
function recordFormatter(format: 'csv' | 'json', envelope: ListEnvelope): Transform {
  let pending = format === 'csv' ? csvHeader() : jsonOpen(envelope);
  let first = true;
  return new Transform({
    writableObjectMode: true,
    transform(record: AddressRecord, _enc, done) {
      if (format === 'csv') pending += csvRecord(record);
      else {
        pending += first ? jsonRecord(record) : `,${jsonRecord(record)}`;
        first = false;
      }
      if (pending.length >= FLUSH_BYTES) {
        this.push(pending);
        pending = '';
      }
      done();
    },
    flush(done) {
      if (format === 'json') pending += jsonClose();
      if (pending) this.push(pending);
      done();
    },
  });
}

interface ListStreamOptions {
  filter: ListFilter;
  format: Format;
  generatedAt: Date;
  windowHours: number;
  /** At most this many records; beyond it the most severe and most recent are kept (truncated). */
  limit?: number;
  /** Count the matches first (needed for the json envelope and for truncation). */
  count: boolean;
}

interface ListStream {
  body: Readable;
  /** Records in the body (known when counted). */
  count?: number;
  truncated: boolean;
}

/** One read-only snapshot of the store, from which one list is read (or none). */
export interface ListSnapshot {
  /**
   * The version of the list data this snapshot sees (list_data_version, migration 0007), as
   * `<epoch>:<version>`: equal for two snapshots only when they see the same addresses and rollups.
   */
  readonly dataVersion: string;
  /** Streams a list; the connection is released when the stream ends. At most once per snapshot. */
  stream(options: ListStreamOptions): Promise<ListStream>;
  /** Ends the snapshot without reading a list (the client has it already). */
  close(): Promise<void>;
}

/**
 * Opens a repeatable-read snapshot and reads the data version in it first, so the list read later in the
 * same snapshot is exactly the data of that version.
 */
export async function openListSnapshot(pool: pg.Pool, log: Logger): Promise<ListSnapshot> {
  const client = await pool.connect();
  let dataVersion: string;
  try {
    await client.query('begin isolation level repeatable read read only');
    const { rows } = await client.query<{ v: string }>(`select epoch::text || ':' || version::text as v from list_data_version`);
    const row = rows[0];
    if (!row) throw new Error('list_data_version holds no row');
    dataVersion = row.v;
  } catch (err) {
    client.release(true);
    throw err;
  }
  return {
    dataVersion,
    stream: (options) => streamList(pool, client, log, options),
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
 * Reads the list on the snapshot's connection and returns its body stream; the connection is released when
 * it ends. The count and the rows come from the one snapshot, so the envelope's count matches the data.
 */
async function streamList(pool: pg.Pool, client: pg.PoolClient, log: Logger, { filter, format, generatedAt, windowHours, limit, count }: ListStreamOptions): Promise<ListStream> {
  let matched: number | undefined;
  try {
    if (count || limit !== undefined) {
      const cap = limit === undefined ? Number.MAX_SAFE_INTEGER : limit + 1;
      const { rows } = await client.query<{ n: number }>(cappedCountSql(filter, cap));
      matched = rows[0]?.n ?? 0;
    }
  } catch (err) {
    client.release(true);
    throw err;
  }
  const truncated = limit !== undefined && matched !== undefined && matched > limit;
  const shown = matched === undefined ? undefined : truncated && limit !== undefined ? limit : matched;
  const envelope: ListEnvelope = { generated_at: generatedAt.toISOString(), window_hours: windowHours, count: shown ?? 0, truncated };
  const source: Readable =
    format === 'txt'
      ? client.query(copyTo(`copy (${addressesSql(filter, limit, truncated)}) to stdout`))
      : client.query(new QueryStream(recordsSql(filter, limit, truncated), [], { batchSize: 2000, highWaterMark: 2000 }));
  let tail: Readable = source;
  let done = false;
  // A connection that dies mid-list (the store went away) fails the cursor's read, and the cursor's stream
  // then waits for an answer that never comes before it reports anything: the answer would hang, holding
  // the connection. Its end is heard here instead, and ends the answer.
  const lost = () => {
    // ECONNRESET: an answer not begun yet is a 503 (problem.ts); one begun is cut off.
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
      // Premature close (client gone) or a failing statement: drop the connection and stop the backend.
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
  if (format !== 'txt') {
    const formatter = recordFormatter(format, envelope);
    pipeline(source, formatter, (err) => {
      if (err) void finish(err);
    });
    tail = formatter;
  }
  tail.once('end', () => void finish());
  tail.once('error', (err) => void finish(err));
  tail.once('close', () => {
    if (!tail.readableEnded) void finish(new Error('stream closed before its end'));
  });
  return { body: tail, count: shown, truncated };
}

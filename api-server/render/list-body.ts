// A list's body in its format, read from a snapshot of the store (query/stream.ts): txt is PostgreSQL's own
// COPY output passed through untouched; csv and json are the snapshot's records formatted here (records.ts),
// batched into larger chunks. The body follows the socket's backpressure, and destroying it (a client that
// went away) ends the read and cancels the statement.
import { Transform, type Readable } from 'node:stream';
import type { Format } from '../../common/vocabulary.ts';
import type { AddressRecord, ListFilter } from '../query/list-sql.ts';
import type { ListSnapshot } from '../query/stream.ts';
import { csvHeader, csvRecord, jsonClose, jsonOpen, jsonRecord, type ListEnvelope } from './records.ts';

/** Chunk size handed to the socket when formatting records in JavaScript. */
const FLUSH_BYTES = 64 * 1024;

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

interface ListBodyOptions {
  filter: ListFilter;
  format: Format;
  /** The instant the list describes (json's generated_at). */
  generatedAt: Date;
  windowHours: number;
  /** At most this many records; beyond it the most severe and most recent are kept (truncated). */
  limit?: number;
  /** Count the matches first (needed for the json envelope and for truncation). */
  count: boolean;
}

export interface ListBody {
  body: Readable;
  /** Records in the body (known when counted). */
  count?: number;
  truncated: boolean;
}

/** Reads the list from the snapshot (at most once per snapshot) as a body in the asked format. */
export async function readListBody(snapshot: ListSnapshot, { filter, format, generatedAt, windowHours, limit, count }: ListBodyOptions): Promise<ListBody> {
  const read = await snapshot.read({ filter, rows: format === 'txt' ? 'addresses' : 'records', limit, count });
  if (format === 'txt') return { body: read.rows, count: read.count, truncated: read.truncated };
  const envelope: ListEnvelope = { generated_at: generatedAt.toISOString(), window_hours: windowHours, count: read.count ?? 0, truncated: read.truncated };
  return { body: read.pipeTo(recordFormatter(format, envelope)), count: read.count, truncated: read.truncated };
}

// Which errors mean the store cannot be used — it cannot be reached, went away, is starting or stopping, is
// full, or will not let us in — as opposed to a bug or a bad statement. Pure. One table for every reader: the
// API and the website answer such errors with 503 and Retry-After (the operator's to fix, or a restart in
// progress), commands stop with one line naming the database and why (database.ts).

/** `serve` is still waiting for its store or migrating it: nothing but health and metrics is answered yet. */
export const STARTING = 'BLOCKFEED_STARTING';
/**
 * A read that must not be older than something (the list a client holds) found the standbys older, and the
 * primary, the only server that could be newer, cannot be reached.
 */
export const STANDBYS_BEHIND = 'BLOCKFEED_STANDBYS_BEHIND';

/** SQLSTATE and Node error codes of an unusable store, with what each means in a message. */
const UNUSABLE: ReadonlyMap<string, string> = new Map(Object.entries({
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'host name not resolved',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  '28P01': 'password authentication failed',
  '28000': 'not authorised',
  '3D000': 'no such database',
  '53300': 'too many connections',
  '57P01': 'the server was shut down',
  '57P02': 'the server crashed',
  '57P03': 'the server is starting up or shutting down',
  // A write on a standby: the primary's address leads to a server that is no primary (yet, or any more), as
  // for a moment in a failover. The pool drops the connection with the failed query.
  '25006': 'the server is read-only (a standby)',
  [STARTING]: 'the server is starting: the database is not ready for it yet',
  [STANDBYS_BEHIND]: 'the standbys are behind what the request needs and the primary cannot be reached',
}));

/** An unavailability blockfeed decides on itself, not reported by PostgreSQL or the network. */
export class StoreUnavailableError extends Error {
  readonly code: typeof STARTING | typeof STANDBYS_BEHIND;
  constructor(code: typeof STARTING | typeof STANDBYS_BEHIND) {
    super(UNUSABLE.get(code));
    this.name = 'StoreUnavailableError';
    this.code = code;
  }
}

/** What node-postgres says, without a code, when a connection dies or cannot be made in time. */
const LOST_CONNECTION = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/;

/** Why the store cannot be used, when `err` says it cannot; undefined for any other error. */
export function storeUnavailableReason(err: unknown): string | undefined {
  const e = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof e.code === 'string') {
    const known = UNUSABLE.get(e.code);
    if (known !== undefined) return known;
    // SQLSTATE class 08: connection exception.
    if (e.code.startsWith('08')) return 'connection failure';
  }
  return typeof e.message === 'string' && LOST_CONNECTION.test(e.message) ? 'connection lost' : undefined;
}

export function isStoreUnavailable(err: unknown): boolean {
  return storeUnavailableReason(err) !== undefined;
}

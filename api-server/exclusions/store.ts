// The operator's exclusions and the removal requests that can lead to them (migration 0010, docs/data-model.md
// "Exclusions"). An exclusion keeps an address or network out of every list, export, scan list and check;
// the lists apply it through their guard (query/list-sql.ts listableSql), the events stay stored and counted.
// A removal request is stored as asked on the website and changes nothing until the operator approves it
// (an exclusion is made) or rejects it. Nothing here deletes a row: a decision and a removed exclusion stay
// on record. Every change to exclusions is announced (NOTIFY, by the table's trigger) so that servers drop the
// lists they cached.
import type pg from 'pg';
import { EXCLUSIONS_LOCK } from '../store/locks.ts';
import { inTransaction } from '../store/transaction.ts';

/** Announced by the exclusions trigger (migration 0010) with the data version; servers drop their cached answers (http/exclusion-changes.ts). */
export const EXCLUSIONS_CHANNEL = 'blockfeed_exclusions_changed';

/**
 * What an anonymous client can make the table hold: one pending request per network (a second is the first
 * one again), three pending requests per client network, a thousand pending in all. A decided request stays,
 * but deciding is the operator's.
 */
export const REMOVAL_REQUEST_CAPS = { perNetwork: 1, perClientNetwork: 3, pending: 1000 } as const;

export const REMOVAL_STATUSES = ['pending', 'approved', 'rejected'] as const;
export type RemovalStatus = (typeof REMOVAL_STATUSES)[number];

export interface Exclusion {
  id: number;
  network: string;
  reason: string;
  createdAt: Date;
  createdBy: string;
  until: Date | null;
  removalRequestId: number | null;
  removedAt: Date | null;
  removedBy: string | null;
}

export interface RemovalRequest {
  id: number;
  email: string;
  network: string;
  reason: string;
  status: RemovalStatus;
  createdAt: Date;
  clientNetwork: string;
  lang: string;
  decidedAt: Date | null;
  decidedBy: string | null;
  note: string | null;
}

interface ExclusionRow {
  id: number;
  network: string;
  reason: string;
  created_at: Date;
  created_by: string;
  until: Date | null;
  removal_request_id: number | null;
  removed_at: Date | null;
  removed_by: string | null;
}

interface RequestRow {
  id: number;
  email: string;
  network: string;
  reason: string;
  status: RemovalStatus;
  created_at: Date;
  client_network: string;
  lang: string;
  decided_at: Date | null;
  decided_by: string | null;
  note: string | null;
}

const toExclusion = (r: ExclusionRow): Exclusion => ({
  id: r.id,
  network: r.network,
  reason: r.reason,
  createdAt: r.created_at,
  createdBy: r.created_by,
  until: r.until,
  removalRequestId: r.removal_request_id,
  removedAt: r.removed_at,
  removedBy: r.removed_by,
});

const toRequest = (r: RequestRow): RemovalRequest => ({
  id: r.id,
  email: r.email,
  network: r.network,
  reason: r.reason,
  status: r.status,
  createdAt: r.created_at,
  clientNetwork: r.client_network,
  lang: r.lang,
  decidedAt: r.decided_at,
  decidedBy: r.decided_by,
  note: r.note,
});

const EXCLUSION_COLUMNS = 'id, network::text as network, reason, created_at, created_by, until, removal_request_id, removed_at, removed_by';
const REQUEST_COLUMNS = 'id, email, network::text as network, reason, status, created_at, client_network, lang, decided_at, decided_by, note';

/** In force now: not removed and not past its `until`. */
const ACTIVE = '(removed_at is null and (until is null or until > now()))';

// ---- exclusions ----------------------------------------------------------------------------------------------

export interface NewExclusion {
  /** A network as store/networks.ts reads it (CIDR text without host bits). */
  network: string;
  reason: string;
  createdBy: string;
  until?: Date;
}

/** An exclusion of exactly this network that is in force, if any. */
export async function activeExclusionOf(pool: pg.Pool | pg.PoolClient, network: string): Promise<Exclusion | undefined> {
  const { rows } = await pool.query<ExclusionRow>(`select ${EXCLUSION_COLUMNS} from exclusions where network = $1::cidr and ${ACTIVE} order by id limit 1`, [network]);
  return rows[0] && toExclusion(rows[0]);
}

async function insertExclusion(client: pg.PoolClient, e: NewExclusion & { removalRequestId?: number }): Promise<Exclusion> {
  const { rows } = await client.query<ExclusionRow>(
    `insert into exclusions (network, reason, created_by, until, removal_request_id) values ($1::cidr, $2, $3, $4, $5) returning ${EXCLUSION_COLUMNS}`,
    [e.network, e.reason, e.createdBy, e.until ?? null, e.removalRequestId ?? null],
  );
  const row = rows[0];
  if (!row) throw new Error('insert into exclusions returned no row');
  return toExclusion(row);
}

export type AddOutcome = { added: Exclusion } | { existing: Exclusion };

/** Adds an exclusion unless one of exactly this network is in force already (that one is returned). */
export function addExclusion(pool: pg.Pool, e: NewExclusion): Promise<AddOutcome> {
  return inTransaction(pool, async (client) => {
    await client.query('select pg_advisory_xact_lock($1)', [EXCLUSIONS_LOCK]);
    const existing = await activeExclusionOf(client, e.network);
    return existing ? { existing } : { added: await insertExclusion(client, e) };
  });
}

/** Exclusions in force (oldest first), or every one ever made with `all`. */
export async function listExclusions(pool: pg.Pool, { all = false } = {}): Promise<Exclusion[]> {
  const { rows } = await pool.query<ExclusionRow>(`select ${EXCLUSION_COLUMNS} from exclusions ${all ? '' : `where ${ACTIVE}`} order by id`);
  return rows.map(toExclusion);
}

/** Ends the exclusions in force that `target` names (its id, or its exact network); returns them. */
export function removeExclusions(pool: pg.Pool, target: { id: number } | { network: string }, removedBy: string): Promise<Exclusion[]> {
  return inTransaction(pool, async (client) => {
    const where = 'id' in target ? 'id = $1' : 'network = $1::cidr';
    const { rows } = await client.query<ExclusionRow>(
      `update exclusions set removed_at = now(), removed_by = $2 where ${where} and ${ACTIVE} returning ${EXCLUSION_COLUMNS}`,
      ['id' in target ? target.id : target.network, removedBy],
    );
    return rows.map(toExclusion);
  });
}

/** How many addresses the store holds inside a network (what an exclusion of it leaves out of the lists). */
export async function addressesWithin(pool: pg.Pool, network: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('select count(*)::int as n from addresses where ip <<= $1::cidr', [network]);
  return rows[0]?.n ?? 0;
}

// ---- removal requests ----------------------------------------------------------------------------------------

export interface NewRemovalRequest {
  /** A checked address (members/store.ts isEmailAddress), lower-cased. */
  email: string;
  /** A network as store/networks.ts reads it. */
  network: string;
  reason: string;
  /** The requester's client network, as the throttles count it (store/rate-counters.ts clientSubject). */
  clientNetwork: string;
  lang: string;
}

export type RequestOutcome =
  | { kind: 'created'; request: RemovalRequest }
  /** A request for this network waits already: it is the answer, nothing new is stored. */
  | { kind: 'pending'; request: RemovalRequest }
  /** The sensors have seen no address of the network (within retention): nothing is or was listed. */
  | { kind: 'not-seen' }
  /** The whole network is excluded already. */
  | { kind: 'excluded'; exclusion: Exclusion }
  /** This client network has REMOVAL_REQUEST_CAPS.perClientNetwork requests waiting. */
  | { kind: 'client-cap' }
  /** REMOVAL_REQUEST_CAPS.pending requests wait in all. */
  | { kind: 'full' };

/**
 * Stores a removal request, within the caps, unless it would change nothing. One writer at a time (an advisory
 * lock), so the caps hold across replicas; the checks and the insert are one transaction.
 */
export function requestRemoval(pool: pg.Pool, r: NewRemovalRequest): Promise<RequestOutcome> {
  return inTransaction(pool, async (client): Promise<RequestOutcome> => {
    await client.query('select pg_advisory_xact_lock($1)', [EXCLUSIONS_LOCK]);
    const { rows: facts } = await client.query<{ seen: boolean; excluded: number | null; same: number | null; mine: number; pending: number }>(
      `select exists (select 1 from addresses where ip <<= $1::cidr) as seen,
         (select id from exclusions where network >>= $1::cidr and ${ACTIVE} order by id limit 1) as excluded,
         (select id from removal_requests where network = $1::cidr and status = 'pending' order by id limit 1) as same,
         (select count(*)::int from removal_requests where client_network = $2 and status = 'pending') as mine,
         (select count(*)::int from removal_requests where status = 'pending') as pending`,
      [r.network, r.clientNetwork],
    );
    const f = facts[0];
    if (!f) throw new Error('the removal request checks returned no row');
    if (f.excluded !== null) {
      const { rows } = await client.query<ExclusionRow>(`select ${EXCLUSION_COLUMNS} from exclusions where id = $1`, [f.excluded]);
      if (rows[0]) return { kind: 'excluded', exclusion: toExclusion(rows[0]) };
    }
    if (f.same !== null) {
      const { rows } = await client.query<RequestRow>(`select ${REQUEST_COLUMNS} from removal_requests where id = $1`, [f.same]);
      if (rows[0]) return { kind: 'pending', request: toRequest(rows[0]) };
    }
    if (!f.seen) return { kind: 'not-seen' };
    if (f.mine >= REMOVAL_REQUEST_CAPS.perClientNetwork) return { kind: 'client-cap' };
    if (f.pending >= REMOVAL_REQUEST_CAPS.pending) return { kind: 'full' };
    const { rows } = await client.query<RequestRow>(
      `insert into removal_requests (email, network, reason, client_network, lang) values ($1, $2::cidr, $3, $4, $5) returning ${REQUEST_COLUMNS}`,
      [r.email, r.network, r.reason, r.clientNetwork, r.lang],
    );
    const row = rows[0];
    if (!row) throw new Error('insert into removal_requests returned no row');
    return { kind: 'created', request: toRequest(row) };
  });
}

export async function findRemovalRequest(pool: pg.Pool, id: number): Promise<RemovalRequest | undefined> {
  const { rows } = await pool.query<RequestRow>(`select ${REQUEST_COLUMNS} from removal_requests where id = $1`, [id]);
  return rows[0] && toRequest(rows[0]);
}

/** Requests of one status (every status when undefined), oldest first. */
export async function listRemovalRequests(pool: pg.Pool, status?: RemovalStatus): Promise<RemovalRequest[]> {
  const { rows } = await pool.query<RequestRow>(
    `select ${REQUEST_COLUMNS} from removal_requests ${status ? 'where status = $1' : ''} order by id`,
    status ? [status] : [],
  );
  return rows.map(toRequest);
}

export interface Decision {
  id: number;
  decidedBy: string;
  note?: string;
}

export type DecisionOutcome =
  | { kind: 'approved'; request: RemovalRequest; exclusion: Exclusion }
  | { kind: 'rejected'; request: RemovalRequest }
  | { kind: 'not-found' }
  /** Decided before: the request as it stands. */
  | { kind: 'decided'; request: RemovalRequest };

async function pendingRequest(client: pg.PoolClient, id: number): Promise<{ pending: RemovalRequest } | { outcome: DecisionOutcome }> {
  const { rows } = await client.query<RequestRow>(`select ${REQUEST_COLUMNS} from removal_requests where id = $1 for update`, [id]);
  const row = rows[0];
  if (!row) return { outcome: { kind: 'not-found' } };
  const request = toRequest(row);
  return request.status === 'pending' ? { pending: request } : { outcome: { kind: 'decided', request } };
}

async function decide(client: pg.PoolClient, d: Decision, status: 'approved' | 'rejected'): Promise<RemovalRequest> {
  const { rows } = await client.query<RequestRow>(
    `update removal_requests set status = $2, decided_at = now(), decided_by = $3, note = $4 where id = $1 returning ${REQUEST_COLUMNS}`,
    [d.id, status, d.decidedBy, d.note ?? null],
  );
  const row = rows[0];
  if (!row) throw new Error(`removal request ${d.id} vanished while being decided`);
  return toRequest(row);
}

/**
 * Approves a pending request: the request is marked approved and its network becomes an exclusion (with the
 * note as its reason, else "removal request N"), both or neither. A network excluded already keeps its exclusion.
 */
export function approveRemoval(pool: pg.Pool, d: Decision & { until?: Date }): Promise<DecisionOutcome> {
  return inTransaction(pool, async (client): Promise<DecisionOutcome> => {
    await client.query('select pg_advisory_xact_lock($1)', [EXCLUSIONS_LOCK]);
    const found = await pendingRequest(client, d.id);
    if ('outcome' in found) return found.outcome;
    const request = await decide(client, d, 'approved');
    const exclusion =
      (await activeExclusionOf(client, request.network)) ??
      (await insertExclusion(client, { network: request.network, reason: d.note ?? `removal request ${d.id}`, createdBy: d.decidedBy, until: d.until, removalRequestId: d.id }));
    return { kind: 'approved', request, exclusion };
  });
}

/** Rejects a pending request; nothing else changes. */
export function rejectRemoval(pool: pg.Pool, d: Decision): Promise<DecisionOutcome> {
  return inTransaction(pool, async (client): Promise<DecisionOutcome> => {
    await client.query('select pg_advisory_xact_lock($1)', [EXCLUSIONS_LOCK]);
    const found = await pendingRequest(client, d.id);
    if ('outcome' in found) return found.outcome;
    return { kind: 'rejected', request: await decide(client, d, 'rejected') };
  });
}

// The renderers of the endpoint table (endpoints.ts) — a list streamed from the store, or a whole document —
// and the shared shape of every API answer: look in the cache, else share the answer an identical request
// is having made, else produce the body (for this request and the identical ones meanwhile) and keep it.
// Headers for download and truncation travel with the cached copy. A list's ETag is known before its body
// (listEtag): its first answer carries it, a conditional request the store's data version still matches is
// answered 304 without reading the list, a HEAD reads none, and a long poll waits for the version to move.
import { pipeline } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { Counter } from 'prom-client';
import type { Format } from '../../common/vocabulary.ts';
import type { Logger } from '../../common/logging.ts';
import { LIMITS } from '../../common/vocabulary.ts';
import type { ListFilter } from '../query/list-sql.ts';
import { isNewer, readDataVersion, sameVersion, type DataVersion, type DataVersionRow } from '../query/data-version.ts';
import { listInstant } from '../query/lists.ts';
import { openListSource } from '../query/list-source.ts';
import { readListBody } from '../render/list-body.ts';
import { readFromStandbys, type StorePools } from '../store/database.ts';
import {
  asksRevalidation,
  cacheKey,
  cacheSeconds,
  etagMatches,
  heldListEtag,
  heldListVersion,
  holdsNewer,
  listEtag,
  sendBody,
  sendHead,
  sendNotModified,
  sendStream,
  strongEtag,
  type AnswerMeta,
  type CachedBody,
  type CacheLifetimes,
  type ResponseCache,
} from './cache.ts';
import { codedKey, codingHeaders, gzipStream, listCoding, type ContentCoding } from './content-coding.ts';
import { ABANDONED, type SharedBody } from './shared-body.ts';
import { callerOf, noteHeld, visibility } from './guard.ts';
import type { LongPolls, WaitOutcome } from './long-poll.ts';
import type { ApiRoute } from './route-config.ts';

export interface ResponderDeps extends StorePools {
  log: Logger;
  /** List answers made from the store (200 or 304), by the server that answered (list-source.ts). */
  listReads: Counter<'source'>;
  cache: ResponseCache;
  lifetimes: CacheLifetimes;
  /** The software release (package.json), part of every list's ETag. */
  release: string;
  clock: () => Date;
  /** Where long polls wait for the list data to change. */
  longPolls: LongPolls;
}

/** How an endpoint answers its validated query `Q` (defaults applied): list() or document(). */
export type Renderer<Q> = ((deps: ResponderDeps, route: ApiRoute, query: Q, req: FastifyRequest, reply: FastifyReply) => undefined | Promise<FastifyReply>) & {
  /** What it answers with: a list (compressed for clients that accept it, content-coding.ts) or a document. */
  readonly answers: 'list' | 'document';
};

/** What every list endpoint's query holds besides its filters. */
interface ListQuery {
  hours: number;
  format: Format;
  download: 0 | 1;
  /** A long poll (endpoints that take it: route.longPoll). */
  wait?: number;
}

/**
 * A list streamed from the store: the addresses `filter` selects from the query, in the query's format.
 * `truncates`: at most LIMITS.exportMaxRecords records, the most severe and most recent (/api/export).
 */
export function list<Q>(filter: (query: Q, now: Date) => ListFilter, { truncates = false } = {}): Renderer<Q & ListQuery> {
  const render = (deps: ResponderDeps, route: ApiRoute, q: Q & ListQuery, req: FastifyRequest, reply: FastifyReply) =>
    respondList(deps, route, req, reply, {
      filter: (now) => filter(q, now),
      format: q.format,
      hours: q.hours,
      download: q.download,
      truncates,
      wait: q.wait,
      coding: listCoding(req.headers['accept-encoding']),
    });
  return Object.assign(render, { answers: 'list' as const });
}

/**
 * A small document produced whole from the query (stats, recent), read from the standbys when there are some,
 * or with `readFrom: 'primary'` from the primary (the check: it says at once what the operator decided).
 * Its lifetime counts from `hours` if the query has it.
 */
export function document<Q extends { format: Format; hours?: number }>(
  produce: (pool: pg.Pool, query: Q, now: Date) => Promise<string>,
  { readFrom = 'standbys' }: { readFrom?: 'standbys' | 'primary' } = {},
): Renderer<Q> {
  const render = (deps: ResponderDeps, route: ApiRoute, q: Q, req: FastifyRequest, reply: FastifyReply) =>
    respondDocument(deps, route, req, reply, {
      hours: q.hours,
      format: q.format,
      produce: (now) => (readFrom === 'primary' ? produce(deps.pool, q, now) : readFromStandbys(deps, (pool) => produce(pool, q, now))),
    });
  return Object.assign(render, { answers: 'document' as const });
}

const CONTENT_TYPES: Record<Format, string> = {
  txt: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
  json: 'application/json; charset=utf-8',
};

function downloadName(endpoint: string, hours: number, at: Date, format: Format): string {
  return `blockfeed-${endpoint}-${hours}h-${at.toISOString().slice(0, 10)}.${format}`;
}

/**
 * `remember`: whether the URL may take the cached-answer fast path (guard.ts) next time. `coding`: a list's
 * (content-coding.ts); a document is always identity.
 */
function keyOf(cache: ResponseCache, route: ApiRoute, req: FastifyRequest, remember = true, coding: ContentCoding = 'identity'): string {
  // URLs carrying a credential are normalized every time rather than remembered. The raw URL alone is
  // unambiguous: no two routes share a path.
  const key = cache.normalizedKey(req.url, remember && !/[?&]key=/i.test(req.url), () => cacheKey(route.variant, route.endpoint, req.query as Record<string, unknown>));
  return codedKey(key, coding);
}

interface ListRequest {
  filter: (now: Date) => ListFilter;
  format: Format;
  hours: number;
  download: 0 | 1;
  /** /api/export: cap and truncate above LIMITS.exportMaxRecords. */
  truncates: boolean;
  /** Seconds a long poll may be held. */
  wait?: number;
  /** How the body is sent: as the client's Accept-Encoding allows. */
  coding: ContentCoding;
}

/** Everything but the body of a list's answer: its validators, all known before the list is read. */
function listAnswer(deps: ResponderDeps, route: ApiRoute, asked: ListRequest, key: string, asOf: Date, version: DataVersionRow) {
  const headers: Record<string, string> = {
    'content-type': CONTENT_TYPES[asked.format],
    ...codingHeaders(asked.coding),
    'x-blocklist-data-changed': version.changedAt.toISOString(),
  };
  if (asked.download === 1) headers['content-disposition'] = `attachment; filename="${downloadName(route.endpoint, asked.hours, asOf, asked.format)}"`;
  return {
    etag: listEtag({ release: deps.release, dataVersion: version.text, key, asOf }),
    generatedAt: new Date(),
    lastModified: asOf.toUTCString(),
    ttlSeconds: cacheSeconds(route.cache, asked.hours, deps.lifetimes),
    headers,
    dataVersion: version,
  };
}

/** The code a shared list fails with when its request found it in the cache, current: not a failure. */
const FROM_CACHE = 'ERR_LIST_ANSWERED_FROM_CACHE';

/** Whether a list stream ended by design (its reader went, or no request wanted it any more), not by a failure. */
function endedByDesign(err: NodeJS.ErrnoException): boolean {
  return err.code === 'ERR_STREAM_PREMATURE_CLOSE' || err.code === ABANDONED;
}

/**
 * A list: from the cache, or read from the store. A long poll (`wait`) is first held while the client's
 * list is made of the current data (holdWhileCurrent). A fresh answer — a long poll's, or one asked for with
 * `Cache-Control: no-cache` — is made from the current data version: a cached copy serves only if it was
 * read at that version; else the list is read (once per query and data version, then cached). Without it a
 * cached copy serves for its lifetime. A HEAD reads no list: its validators are known without it.
 *
 * A list read from the store is shared: a request that finds the identical request's list being made answers
 * from it (request coalescing, docs/http-api.md "Identical requests"), and the one making it makes it for
 * every identical request meanwhile; a fresh request only from a list of the current data version or a later
 * one (so long polls woken by one change read the list once). `retried`: this request already waited for an
 * answer that failed, or that was older than the list its client holds or than the data it must be made of
 * (`alone`: then it makes its own).
 */
async function respondList(deps: ResponderDeps, route: ApiRoute, req: FastifyRequest, reply: FastifyReply, asked: ListRequest, retried = false, alone = false): Promise<FastifyReply> {
  // A long poll's URL is never remembered: the fast path would answer it from the cache without waiting.
  const key = keyOf(deps.cache, route, req, asked.wait === undefined, asked.coding);
  let atLeast: DataVersion | undefined;
  if (!retried && asked.wait !== undefined) {
    const held = await holdWhileCurrent(deps, route, req, reply, asked, key, asked.wait);
    if (held === 'answered') return reply;
    atLeast = held.atLeast;
  }
  const held = req.headers['if-none-match'];
  const fresh = asked.wait !== undefined || asksRevalidation(req.headers['cache-control']);
  // Not a copy older than the list the client holds (ResponseCache.peek).
  const cached = deps.cache.peek(key, held);
  if (cached && !fresh) {
    if (!retried) deps.cache.countLookup(route.endpoint, true);
    return sendBody(req, reply, visibility(route), cached);
  }
  // The list describes the store at the start of this minute: its window, generated_at, Last-Modified,
  // download name and ETag all follow from this instant, so equal ETags mean equal bytes.
  const asOf = listInstant(deps.clock());
  if (req.method === 'HEAD') {
    // The primary's version: the freshest there is, and the one a long poll compares with.
    const version = await readDataVersion(deps.pool);
    if (cached?.dataVersion && sameVersion(cached.dataVersion, version)) {
      deps.cache.countLookup(route.endpoint, true);
      return sendBody(req, reply, visibility(route), cached);
    }
    deps.cache.countLookup(route.endpoint, false);
    const answer = listAnswer(deps, route, asked, key, asOf, version);
    if (etagMatches(held, answer.etag)) return sendNotModified(reply, visibility(route), answer);
    return sendHead(reply, visibility(route), answer);
  }
  const shared = alone ? undefined : deps.cache.listInFlight(key);
  if (shared) {
    if (!retried) deps.cache.countLookup(route.endpoint, 'coalesced');
    // A fresh answer needs the current data version: it joins a list of that version or a later one.
    const floor = fresh ? (atLeast ?? (await readDataVersion(deps.pool))) : undefined;
    return joinList(deps, route, req, reply, asked, shared, retried, floor);
  }
  if (!cached && !retried) deps.cache.countLookup(route.endpoint, false);
  const made = deps.cache.startList(key);
  try {
    return await makeList(deps, route, req, reply, asked, { key, asOf, cached, made, counted: retried || !cached });
  } catch (err) {
    made.fail(err as Error);
    throw err;
  }
}

async function makeList(
  deps: ResponderDeps,
  route: ApiRoute,
  req: FastifyRequest,
  reply: FastifyReply,
  asked: ListRequest,
  { key, asOf, cached, made, counted }: { key: string; asOf: Date; cached: CachedBody | undefined; made: SharedBody<AnswerMeta>; counted: boolean },
): Promise<FastifyReply> {
  const held = req.headers['if-none-match'];
  // Not from a standby behind the last change to the exclusions (cache floor): its list may hold an address
  // that must be left out now.
  const snapshot = await openListSource(deps, deps.log, heldListVersion(held), deps.cache.floor);
  if (cached?.dataVersion && sameVersion(cached.dataVersion, snapshot.dataVersion)) {
    // The body is not made: requests that joined it look in the cache again.
    made.fail(Object.assign(new Error('answered from the cache'), { code: FROM_CACHE }));
    await snapshot.close();
    if (!counted) deps.cache.countLookup(route.endpoint, true);
    return sendBody(req, reply, visibility(route), cached);
  }
  if (!counted) deps.cache.countLookup(route.endpoint, false);
  deps.listReads.inc({ source: snapshot.source });
  const answer = listAnswer(deps, route, asked, key, asOf, snapshot.dataVersion);
  const notModified = etagMatches(held, answer.etag);
  if (notModified && made.others === 0) {
    // This client has the list, and no other request waits for it: it is not read at all.
    made.release();
    await snapshot.close();
    return sendNotModified(reply, visibility(route), answer);
  }
  const limit = asked.truncates ? LIMITS.exportMaxRecords : undefined;
  const stream = await readListBody(snapshot, {
    filter: asked.filter(asOf),
    format: asked.format,
    generatedAt: asOf,
    windowHours: asked.hours,
    limit,
    count: asked.format === 'json' || limit !== undefined,
  });
  if (asked.truncates) answer.headers['x-blocklist-truncated'] = String(stream.truncated);
  made.publish(answer);
  // This request reads the list as every other one does; its client going away ends the read only when
  // no other request reads it or waits for it.
  const own = notModified ? undefined : made.reader();
  const ended = (err: NodeJS.ErrnoException | null) => {
    if (err && !endedByDesign(err)) deps.log.warn({ err: { message: err.message } }, 'list stream failed');
  };
  if (asked.coding === 'gzip') pipeline(stream.body, gzipStream(), made.sink(), ended);
  else pipeline(stream.body, made.sink(), ended);
  if (!own) {
    made.release();
    return sendNotModified(reply, visibility(route), answer);
  }
  return sendStream(reply, visibility(route), answer, own);
}

/**
 * Answers from an identical request's list being made: 304 as soon as its validators match, else the whole
 * body when it completes (kept), or the body from its first byte as it streams (too large to keep). A
 * failure before this request's answer began is retried once: its next try makes the list, or joins the
 * identical request that does. A list older than the one the client holds is not for it: it makes its own.
 */
async function joinList(
  deps: ResponderDeps,
  route: ApiRoute,
  req: FastifyRequest,
  reply: FastifyReply,
  asked: ListRequest,
  shared: SharedBody<AnswerMeta>,
  retried: boolean,
  atLeast: DataVersion | undefined,
): Promise<FastifyReply> {
  const gone = new AbortController();
  const hangUp = () => gone.abort();
  reply.raw.once('close', hangUp);
  const joined = shared.join(gone.signal);
  joined.catch(() => undefined);
  try {
    const meta = await shared.published;
    if (etagMatches(req.headers['if-none-match'], meta.etag)) {
      gone.abort();
      return sendNotModified(reply, visibility(route), meta);
    }
    if (holdsNewer(req.headers['if-none-match'], meta) || (atLeast && meta.dataVersion && isNewer(atLeast, meta.dataVersion))) {
      // Read on a standby that lagged, or begun before the change a fresh answer must hold: older than the list
      // this client holds (which it would take back) or than the data it asked for.
      gone.abort();
      return await respondList(deps, route, req, reply, asked, true, true);
    }
    const answer = await joined;
    switch (answer.kind) {
      case 'whole':
        return sendBody(req, reply, visibility(route), { ...meta, body: answer.body });
      case 'live':
        return sendStream(reply, visibility(route), meta, answer.body);
      case 'missed':
        return await respondList(deps, route, req, reply, asked, true);
      case 'gone':
        // The client went away while it waited: nobody to answer.
        reply.hijack();
        reply.raw.destroy();
        return reply;
    }
  } catch (err) {
    // Answered from the cache by the request making it: this one looks again.
    if ((err as NodeJS.ErrnoException).code === FROM_CACHE && !gone.signal.aborted) return respondList(deps, route, req, reply, asked, true);
    if (retried || gone.signal.aborted) throw err;
    return respondList(deps, route, req, reply, asked, true);
  } finally {
    reply.raw.off('close', hangUp);
  }
}

/**
 * A long poll (docs/http-api.md "Live lists"): when If-None-Match names this list at the current data
 * version — of any minute, so the minute turning wakes nobody — the request is held until the version moves
 * (then the caller answers with the new list) or the wait ends, the server closes or the client leaves (then
 * 304: the client's list is still made of the current data). Otherwise nothing is held: the caller answers
 * now. Only data versions are compared while waiting: no list is read. `answered` when it has; else the data
 * version the caller's answer must be made of at least.
 */
async function holdWhileCurrent(
  deps: ResponderDeps,
  route: ApiRoute,
  req: FastifyRequest,
  reply: FastifyReply,
  asked: ListRequest,
  key: string,
  seconds: number,
): Promise<'answered' | { atLeast: DataVersion }> {
  const current = await readDataVersion(deps.pool);
  const held = heldListEtag(req.headers['if-none-match'], (asOf) => listEtag({ release: deps.release, dataVersion: current.text, key, asOf }));
  if (!held) return { atLeast: current };
  const caller = callerOf(req);
  // Long polls are on routes that require a key (endpoints.ts): the guard admitted a key or nobody.
  if (caller?.kind !== 'key') throw new Error(`a long poll on ${route.path} without a key`);
  const gone = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableEnded) gone.abort();
  };
  reply.raw.once('close', onClose);
  const started = Date.now();
  let outcome: WaitOutcome;
  try {
    outcome = await deps.longPolls.wait(current, `key:${caller.key.id}`, seconds, gone.signal);
  } finally {
    reply.raw.removeListener('close', onClose);
    noteHeld(req, Date.now() - started);
  }
  if (outcome.kind === 'changed') return { atLeast: outcome.version };
  sendNotModified(reply, visibility(route), listAnswer(deps, route, asked, key, held.asOf, current));
  return 'answered';
}

/**
 * For small documents (stats, recent): produce, keep, answer with validators (304 when unchanged). A cached
 * answer is sent synchronously (no promise); only producing a document is asynchronous. Identical requests
 * that arrive while a document is being produced get that one.
 */
function respondDocument(
  deps: ResponderDeps,
  route: ApiRoute,
  req: FastifyRequest,
  reply: FastifyReply,
  doc: { hours?: number; format: Format; produce: (now: Date) => Promise<string> },
): undefined | Promise<FastifyReply> {
  if (route.cache === 'none') return produceUncached(deps, reply, doc);
  const key = keyOf(deps.cache, route, req);
  const hit = deps.cache.peek(key);
  const making = hit ? undefined : deps.cache.documentInFlight(key);
  deps.cache.countLookup(route.endpoint, hit !== undefined || (making !== undefined && 'coalesced'));
  if (hit) {
    sendBody(req, reply, visibility(route), hit);
    return undefined;
  }
  return produceDocument(deps, route, req, reply, key, doc, making);
}

/**
 * A document never kept (cache class `none`): produced for every request at the server's clock, and marked
 * so that no browser or proxy keeps it either.
 */
async function produceUncached(deps: ResponderDeps, reply: FastifyReply, doc: { format: Format; produce: (now: Date) => Promise<string> }): Promise<FastifyReply> {
  const body = await doc.produce(deps.clock());
  return reply.code(200).type(CONTENT_TYPES[doc.format]).header('cache-control', 'no-store').send(body);
}

async function produceDocument(
  deps: ResponderDeps,
  route: ApiRoute,
  req: FastifyRequest,
  reply: FastifyReply,
  key: string,
  doc: { hours?: number; format: Format; produce: (now: Date) => Promise<string> },
  making: Promise<CachedBody> | undefined,
): Promise<FastifyReply> {
  const make = async (): Promise<CachedBody> => {
    const now = new Date();
    const body = Buffer.from(await doc.produce(now));
    return { body, etag: strongEtag(body), generatedAt: now, ttlSeconds: cacheSeconds(route.cache, doc.hours, deps.lifetimes), headers: { 'content-type': CONTENT_TYPES[doc.format] } };
  };
  let entry: CachedBody;
  try {
    entry = await (making ?? deps.cache.makeDocument(key, make));
  } catch (err) {
    // A request that waited for another's document tries once more itself; the first one fails as it did.
    if (!making) throw err;
    entry = await (deps.cache.documentInFlight(key) ?? deps.cache.makeDocument(key, make));
  }
  return sendBody(req, reply, visibility(route), entry);
}

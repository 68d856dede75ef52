// The renderers of the endpoint table (endpoints.ts) — a list streamed from the store, or a whole document —
// and the shared shape of every API answer: look in the cache, else produce the body and keep a copy.
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
import { readDataVersion, sameVersion, type DataVersionRow } from '../query/data-version.ts';
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
  listEtag,
  sendBody,
  sendHead,
  sendNotModified,
  sendStream,
  strongEtag,
  type CacheLifetimes,
  type ResponseCache,
} from './cache.ts';
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
export type Renderer<Q> = (deps: ResponderDeps, route: ApiRoute, query: Q, req: FastifyRequest, reply: FastifyReply) => undefined | Promise<FastifyReply>;

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
  return (deps, route, q, req, reply) =>
    respondList(deps, route, req, reply, { filter: (now) => filter(q, now), format: q.format, hours: q.hours, download: q.download, truncates, wait: q.wait });
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
  return (deps, route, q, req, reply) =>
    respondDocument(deps, route, req, reply, {
      hours: q.hours,
      format: q.format,
      produce: (now) => (readFrom === 'primary' ? produce(deps.pool, q, now) : readFromStandbys(deps, (pool) => produce(pool, q, now))),
    });
}

const CONTENT_TYPES: Record<Format, string> = {
  txt: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
  json: 'application/json; charset=utf-8',
};

function downloadName(endpoint: string, hours: number, at: Date, format: Format): string {
  return `blockfeed-${endpoint}-${hours}h-${at.toISOString().slice(0, 10)}.${format}`;
}

/** `remember`: whether the URL may take the cached-answer fast path (guard.ts) next time. */
function keyOf(cache: ResponseCache, route: ApiRoute, req: FastifyRequest, remember = true): string {
  // URLs carrying a credential are normalized every time rather than remembered. The raw URL alone is
  // unambiguous: no two routes share a path.
  return cache.normalizedKey(req.url, remember && !/[?&]key=/i.test(req.url), () => cacheKey(route.variant, route.endpoint, req.query as Record<string, unknown>));
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
}

/** Everything but the body of a list's answer: its validators, all known before the list is read. */
function listAnswer(deps: ResponderDeps, route: ApiRoute, asked: ListRequest, key: string, asOf: Date, version: DataVersionRow) {
  const headers: Record<string, string> = { 'content-type': CONTENT_TYPES[asked.format], 'x-blocklist-data-changed': version.changedAt.toISOString() };
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

/**
 * A list: from the cache, or read from the store. A long poll (`wait`) is first held while the client's
 * list is made of the current data (holdWhileCurrent). A fresh answer — a long poll's, or one asked for with
 * `Cache-Control: no-cache` — is made from the current data version: a cached copy serves only if it was
 * read at that version; else the list is read (once per query and data version, then cached). Without it a
 * cached copy serves for its lifetime. A HEAD reads no list: its validators are known without it.
 */
async function respondList(deps: ResponderDeps, route: ApiRoute, req: FastifyRequest, reply: FastifyReply, asked: ListRequest): Promise<FastifyReply> {
  // A long poll's URL is never remembered: the fast path would answer it from the cache without waiting.
  const key = keyOf(deps.cache, route, req, asked.wait === undefined);
  if (asked.wait !== undefined && (await holdWhileCurrent(deps, route, req, reply, asked, key, asked.wait))) return reply;
  const held = req.headers['if-none-match'];
  const fresh = asked.wait !== undefined || asksRevalidation(req.headers['cache-control']);
  // Not a copy older than the list the client holds (ResponseCache.peek).
  const cached = deps.cache.peek(key, held);
  if (cached && !fresh) {
    deps.cache.countLookup(route.endpoint, true);
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
  // Not from a standby behind the last change to the exclusions (cache floor): its list may hold an address
  // that must be left out now.
  const snapshot = await openListSource(deps, deps.log, heldListVersion(held), deps.cache.floor);
  if (cached?.dataVersion && sameVersion(cached.dataVersion, snapshot.dataVersion)) {
    await snapshot.close();
    deps.cache.countLookup(route.endpoint, true);
    return sendBody(req, reply, visibility(route), cached);
  }
  deps.cache.countLookup(route.endpoint, false);
  deps.listReads.inc({ source: snapshot.source });
  const answer = listAnswer(deps, route, asked, key, asOf, snapshot.dataVersion);
  if (etagMatches(req.headers['if-none-match'], answer.etag)) {
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
  const tee = deps.cache.tee(key, answer);
  // pipeline, not pipe: a client that goes away destroys the tee, and with it the statement's stream.
  pipeline(stream.body, tee, (err) => {
    if (err && (err).code !== 'ERR_STREAM_PREMATURE_CLOSE') deps.log.warn({ err: { message: err.message } }, 'list stream failed');
  });
  return sendStream(reply, visibility(route), answer, tee);
}

/**
 * A long poll (docs/http-api.md "Live lists"): when If-None-Match names this list at the current data
 * version — of any minute, so the minute turning wakes nobody — the request is held until the version moves
 * (then the caller answers with the new list) or the wait ends, the server closes or the client leaves (then
 * 304: the client's list is still made of the current data). Otherwise nothing is held: the caller answers
 * now. Only data versions are compared while waiting: no list is read. True when it has answered (a reply is
 * a thenable, so it is not what this resolves with).
 */
async function holdWhileCurrent(deps: ResponderDeps, route: ApiRoute, req: FastifyRequest, reply: FastifyReply, asked: ListRequest, key: string, seconds: number): Promise<boolean> {
  const current = await readDataVersion(deps.pool);
  const held = heldListEtag(req.headers['if-none-match'], (asOf) => listEtag({ release: deps.release, dataVersion: current.text, key, asOf }));
  if (!held) return false;
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
  if (outcome.kind === 'changed') return false;
  sendNotModified(reply, visibility(route), listAnswer(deps, route, asked, key, held.asOf, current));
  return true;
}

/**
 * For small documents (stats, recent): produce, keep, answer with validators (304 when unchanged). A cached
 * answer is sent synchronously (no promise); only producing a document is asynchronous.
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
  const hit = deps.cache.get(route.endpoint, key);
  if (hit) {
    sendBody(req, reply, visibility(route), hit);
    return undefined;
  }
  return produceDocument(deps, route, req, reply, key, doc);
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
): Promise<FastifyReply> {
  const now = new Date();
  const body = Buffer.from(await doc.produce(now));
  const entry = {
    body,
    etag: strongEtag(body),
    generatedAt: now,
    ttlSeconds: cacheSeconds(route.cache, doc.hours, deps.lifetimes),
    headers: { 'content-type': CONTENT_TYPES[doc.format] },
  };
  deps.cache.set(key, entry);
  return sendBody(req, reply, visibility(route), entry);
}

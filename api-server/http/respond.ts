// The renderers of the endpoint table (endpoints.ts) — a list streamed from the store, or a whole document —
// and the shared shape of every API answer: look in the cache, else produce the body and keep a copy.
// Headers for download and truncation travel with the cached copy. A list's ETag is known before its body
// (listEtag): its first answer carries it, and a conditional request the store's data version still matches
// is answered 304 without reading the list.
import { pipeline } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { Counter } from 'prom-client';
import type { Format } from '../../common/vocabulary.ts';
import type { Logger } from '../../common/logging.ts';
import { LIMITS } from '../../common/vocabulary.ts';
import type { ListFilter } from '../query/list-sql.ts';
import { listInstant } from '../query/lists.ts';
import { openListSource } from '../query/list-source.ts';
import { readListBody } from '../render/list-body.ts';
import { readFromStandbys, type StorePools } from '../store/database.ts';
import { cacheKey, cacheSeconds, etagMatches, heldListVersion, listEtag, sendBody, sendNotModified, sendStream, strongEtag, type CacheLifetimes, type ResponseCache } from './cache.ts';
import { visibility } from './guard.ts';
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
}

/** How an endpoint answers its validated query `Q` (defaults applied): list() or document(). */
export type Renderer<Q> = (deps: ResponderDeps, route: ApiRoute, query: Q, req: FastifyRequest, reply: FastifyReply) => undefined | Promise<FastifyReply>;

/** What every list endpoint's query holds besides its filters. */
interface ListQuery {
  hours: number;
  format: Format;
  download: 0 | 1;
}

/**
 * A list streamed from the store: the addresses `filter` selects from the query, in the query's format.
 * `truncates`: at most LIMITS.exportMaxRecords records, the most severe and most recent (/api/export).
 */
export function list<Q>(filter: (query: Q, now: Date) => ListFilter, { truncates = false } = {}): Renderer<Q & ListQuery> {
  return (deps, route, q, req, reply) => respondList(deps, route, req, reply, { filter: (now) => filter(q, now), format: q.format, hours: q.hours, download: q.download, truncates });
}

/**
 * A small document produced whole from the query (stats, recent), read from the standbys when there are some.
 * Its lifetime counts from `hours` if the query has it.
 */
export function document<Q extends { format: Format; hours?: number }>(produce: (pool: pg.Pool, query: Q, now: Date) => Promise<string>): Renderer<Q> {
  return (deps, route, q, req, reply) =>
    respondDocument(deps, route, req, reply, { hours: q.hours, format: q.format, produce: (now) => readFromStandbys(deps, (pool) => produce(pool, q, now)) });
}

const CONTENT_TYPES: Record<Format, string> = {
  txt: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
  json: 'application/json; charset=utf-8',
};

function downloadName(endpoint: string, hours: number, at: Date, format: Format): string {
  return `blockfeed-${endpoint}-${hours}h-${at.toISOString().slice(0, 10)}.${format}`;
}

function keyOf(cache: ResponseCache, route: ApiRoute, req: FastifyRequest): string {
  // URLs carrying a credential are normalized every time rather than remembered. The raw URL alone is
  // unambiguous: no two routes share a path.
  const remember = !/[?&]key=/i.test(req.url);
  return cache.normalizedKey(req.url, remember, () => cacheKey(route.variant, route.endpoint, req.query as Record<string, unknown>));
}

interface ListRequest {
  filter: (now: Date) => ListFilter;
  format: Format;
  hours: number;
  download: 0 | 1;
  /** /api/export: cap and truncate above LIMITS.exportMaxRecords. */
  truncates: boolean;
}

async function respondList(deps: ResponderDeps, route: ApiRoute, req: FastifyRequest, reply: FastifyReply, asked: ListRequest): Promise<FastifyReply> {
  const key = keyOf(deps.cache, route, req);
  const held = req.headers['if-none-match'];
  const hit = deps.cache.get(route.endpoint, key, held);
  if (hit) return sendBody(req, reply, visibility(route), hit);
  // The list describes the store at the start of this minute: its window, generated_at, Last-Modified,
  // download name and ETag all follow from this instant, so equal ETags mean equal bytes.
  const asOf = listInstant(deps.clock());
  const snapshot = await openListSource(deps, deps.log, heldListVersion(held));
  deps.listReads.inc({ source: snapshot.source });
  const headers: Record<string, string> = { 'content-type': CONTENT_TYPES[asked.format] };
  if (asked.download === 1) headers['content-disposition'] = `attachment; filename="${downloadName(route.endpoint, asked.hours, asOf, asked.format)}"`;
  const etag = listEtag({ release: deps.release, dataVersion: snapshot.dataVersion, key, asOf });
  const entry = { etag, generatedAt: new Date(), lastModified: asOf.toUTCString(), ttlSeconds: cacheSeconds(route.cache, asked.hours, deps.lifetimes), headers };
  if (etagMatches(req.headers['if-none-match'], etag)) {
    await snapshot.close();
    return sendNotModified(reply, visibility(route), entry);
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
  if (asked.truncates) headers['x-blocklist-truncated'] = String(stream.truncated);
  const tee = deps.cache.tee(key, entry);
  // pipeline, not pipe: a client that goes away destroys the tee, and with it the statement's stream.
  pipeline(stream.body, tee, (err) => {
    if (err && (err).code !== 'ERR_STREAM_PREMATURE_CLOSE') deps.log.warn({ err: { message: err.message } }, 'list stream failed');
  });
  return sendStream(reply, visibility(route), entry, tee);
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
  const key = keyOf(deps.cache, route, req);
  const hit = deps.cache.get(route.endpoint, key);
  if (hit) {
    sendBody(req, reply, visibility(route), hit);
    return undefined;
  }
  return produceDocument(deps, route, req, reply, key, doc);
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

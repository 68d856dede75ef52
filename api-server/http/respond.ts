// The shared shape of every API handler: look in the cache, else produce the body (a whole document or a
// stream from the store) and keep a copy. Headers for download and truncation travel with the cached copy.
// A list's ETag is known before its body (listEtag): its first answer carries it, and a conditional request
// the store's data version still matches is answered 304 without reading the list.
import { pipeline } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { Format } from '../../common/vocabulary.ts';
import type { Logger } from '../../common/logging.ts';
import { LIMITS } from '../../common/vocabulary.ts';
import type { ListFilter } from '../query/list-sql.ts';
import { listInstant } from '../query/lists.ts';
import { openListSnapshot } from '../query/stream.ts';
import { readListBody } from '../render/list-body.ts';
import { cacheKey, cacheSeconds, etagMatches, listEtag, sendBody, sendNotModified, sendStream, strongEtag, type CacheLifetimes, type ResponseCache } from './cache.ts';
import { visibility, type RouteGuard } from './guard.ts';
import type { ApiRouteConfig } from './route-config.ts';

export interface ResponderDeps {
  pool: pg.Pool;
  log: Logger;
  cache: ResponseCache;
  lifetimes: CacheLifetimes;
  /** The per-route hooks (guard.ts): the cached-answer fast path, auth → limits, request metrics. */
  guard(route: ApiRouteConfig, url: string): RouteGuard;
  /** The software release (package.json), part of every list's ETag. */
  release: string;
  clock: () => Date;
}

const CONTENT_TYPES: Record<Format, string> = {
  txt: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
  json: 'application/json; charset=utf-8',
};

function downloadName(endpoint: string, hours: number, at: Date, format: Format): string {
  return `blockfeed-${endpoint}-${hours}h-${at.toISOString().slice(0, 10)}.${format}`;
}

function keyOf(cache: ResponseCache, route: ApiRouteConfig, req: FastifyRequest): string {
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

export async function respondList(deps: ResponderDeps, route: ApiRouteConfig, req: FastifyRequest, reply: FastifyReply, list: ListRequest): Promise<FastifyReply> {
  const key = keyOf(deps.cache, route, req);
  const hit = deps.cache.get(route.endpoint, key);
  if (hit) return sendBody(req, reply, visibility(route), hit);
  // The list describes the store at the start of this minute: its window, generated_at, Last-Modified,
  // download name and ETag all follow from this instant, so equal ETags mean equal bytes.
  const asOf = listInstant(deps.clock());
  const snapshot = await openListSnapshot(deps.pool, deps.log);
  const headers: Record<string, string> = { 'content-type': CONTENT_TYPES[list.format] };
  if (list.download === 1) headers['content-disposition'] = `attachment; filename="${downloadName(route.endpoint, list.hours, asOf, list.format)}"`;
  const etag = listEtag({ release: deps.release, dataVersion: snapshot.dataVersion, key, asOf });
  const entry = { etag, generatedAt: new Date(), lastModified: asOf.toUTCString(), ttlSeconds: cacheSeconds(route.variant, route.endpoint, list.hours, deps.lifetimes), headers };
  if (etagMatches(req.headers['if-none-match'], etag)) {
    await snapshot.close();
    return sendNotModified(reply, visibility(route), entry);
  }
  const limit = list.truncates ? LIMITS.exportMaxRecords : undefined;
  const stream = await readListBody(snapshot, {
    filter: list.filter(asOf),
    format: list.format,
    generatedAt: asOf,
    windowHours: list.hours,
    limit,
    count: list.format === 'json' || limit !== undefined,
  });
  if (list.truncates) headers['x-blocklist-truncated'] = String(stream.truncated);
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
export function respondDocument(
  deps: ResponderDeps,
  route: ApiRouteConfig,
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
  route: ApiRouteConfig,
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
    ttlSeconds: cacheSeconds(route.variant, route.endpoint, doc.hours, deps.lifetimes),
    headers: { 'content-type': CONTENT_TYPES[doc.format] },
  };
  deps.cache.set(key, entry);
  return sendBody(req, reply, visibility(route), entry);
}

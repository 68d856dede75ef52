// The response cache: whole bodies keyed by endpoint + normalized parameters + format (never the
// credential), bounded in bytes, each entry living as long as its endpoint's lifetime. Runs after auth and
// limits. Serves strong ETags, Last-Modified, Cache-Control, Age, and 304 for a matching If-None-Match.
// Beside the entries, the answers being made: identical requests that arrive meanwhile share the one being
// made instead of making their own (docs/http-api.md "Identical requests").
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Counter } from 'prom-client';
import { isNewer, isOlder, newer, parseDataVersion, type DataVersion } from '../query/data-version.ts';
import { SharedBody } from './shared-body.ts';

export interface CachedBody {
  body: Buffer;
  /** Small bodies also as text: Node writes headers and a string body in one write, a Buffer in a writev. */
  text?: string;
  etag: string;
  /** When the answer was made: Age and max-age count from it. */
  generatedAt: Date;
  /** Last-Modified as an HTTP date, formatted once: generatedAt, or for a list the instant it describes. */
  lastModified?: string;
  ttlSeconds: number;
  headers: Record<string, string>;
  /** A list's: the data version it was read at (a fresh answer needs the current one, respond.ts). */
  dataVersion?: DataVersion;
}

/** Response lifetimes in seconds, by what is answered. */
export interface CacheLifetimes {
  variantA: number;
  upTo24h: number;
  upTo72h: number;
  over72h: number;
  recent: number;
}

/** The specification's lifetimes (docs/http-api.md "Cache"): variant A 5 min; B by window (≤24 h 30 min, <72 h 1 h, ≥72 h 2 h); recent 1 min. */
const SPEC_LIFETIMES: Readonly<CacheLifetimes> = { variantA: 300, upTo24h: 1800, upTo72h: 3600, over72h: 7200, recent: 60 };

/** `upTo24h=900,recent=30` (BLOCKFEED_CACHE_LIFETIMES) over the spec's values; the config schema checks the form. */
export function parseCacheLifetimes(text: string): CacheLifetimes {
  const lifetimes = { ...SPEC_LIFETIMES };
  for (const pair of text.split(',').filter(Boolean)) {
    const [name, seconds] = pair.split('=');
    if (name && name in lifetimes) lifetimes[name as keyof CacheLifetimes] = Number(seconds);
  }
  return lifetimes;
}

/**
 * Which lifetime an endpoint's answers get: variant A's, variant B's by the window asked for, or recent events';
 * `none`: never kept (the check: one answer per address asked about, which must say at once what the operator
 * decided).
 */
export type CacheClass = 'variantA' | 'byWindow' | 'recent' | 'none';

/** The lifetime of an answer of a cache class, for a window of `hours` (byWindow; 24 when not given). */
export function cacheSeconds(cacheClass: CacheClass, hours: number | undefined, lifetimes: CacheLifetimes = SPEC_LIFETIMES): number {
  if (cacheClass === 'none') return 0;
  if (cacheClass === 'recent') return lifetimes.recent;
  if (cacheClass === 'variantA') return lifetimes.variantA;
  const h = hours ?? 24;
  return h <= 24 ? lifetimes.upTo24h : h < 72 ? lifetimes.upTo72h : lifetimes.over72h;
}

/**
 * Parameters that say who asks (`key`) or how long to wait for an answer (`wait`, a long poll), not what the
 * answer holds: never part of the cache key, and so of no ETag.
 */
const NOT_OF_THE_ANSWER: ReadonlySet<string> = new Set(['key', 'wait']);

/** Canonical key: parameters sorted, defaults already applied, credentials and waits left out. Pure. */
export function cacheKey(variant: 'A' | 'B', endpoint: string, params: Record<string, unknown>): string {
  const parts = Object.keys(params)
    .filter((k) => !NOT_OF_THE_ANSWER.has(k) && params[k] !== undefined)
    .sort()
    .map((k) => `${k}=${String(params[k] as string | number)}`);
  return `${variant}:${endpoint}?${parts.join('&')}`;
}

function etagOf(hash: ReturnType<typeof createHash>): string {
  return `"${hash.digest('base64url').slice(0, 32)}"`;
}

/** A document's ETag: a digest of its bytes. */
export function strongEtag(body: Buffer): string {
  return etagOf(createHash('sha256').update(body));
}

/** What a list's bytes are a function of (docs/http-api.md "Validators"). */
export interface ListIdentity {
  /** The software release: one that renders differently has another version. */
  release: string;
  /** The data version of the snapshot the list is read from (query/stream.ts). */
  dataVersion: string;
  /** The normalised query: the cache key (endpoint, parameters with defaults, format). */
  key: string;
  /** The window's end, whole minutes: the window start and generated_at follow from it. */
  asOf: Date;
}

/**
 * A list's ETag, known before its body exists: a digest of everything the bytes are a function of, so two
 * answers share it only when their bytes are equal. In front of it, readable, the data version it was read at
 * and the minute the list describes (`"<epoch>.<version>.<minutes since 1970>.<digest>"`): a server tells from
 * a client's If-None-Match how new a list it holds (versionOfEtag), and a long poll whether an ETag of any
 * minute names the current data (heldListEtag). Pure.
 */
export function listEtag({ release, dataVersion, key, asOf }: ListIdentity): string {
  const digest = createHash('sha256').update(`list\n${release}\n${dataVersion}\n${key}\n${asOf.toISOString()}`).digest('base64url').slice(0, 32);
  const version = parseDataVersion(dataVersion);
  const minute = Math.floor(asOf.getTime() / 60_000);
  return version ? `"${version.epoch}.${version.version}.${minute}.${digest}"` : `"${minute}.${digest}"`;
}

const LIST_ETAG = /^(?:W\/)?"(?:([0-9a-f]{8})\.(\d{1,19})\.)?(\d{1,10})\.[A-Za-z0-9_-]{32}"$/;

/** The data version a list's ETag carries; undefined for any other ETag (a document's, a malformed one). Pure. */
export function versionOfEtag(etag: string): DataVersion | undefined {
  const m = LIST_ETAG.exec(etag.trim());
  return m?.[1] && m[2] ? { epoch: m[1], version: BigInt(m[2]) } : undefined;
}

/** The newest list version among the ETags of an If-None-Match: the list the client holds. Pure. */
export function heldListVersion(ifNoneMatch: string | undefined): DataVersion | undefined {
  let held: DataVersion | undefined;
  for (const tag of ifNoneMatch?.split(',') ?? []) {
    const version = versionOfEtag(tag);
    if (version) held = held ? newer(held, version) : version;
  }
  return held;
}

/**
 * Does the client hold a list newer than this answer (one read on a standby that lagged, or on another replica
 * before a write)? Then the answer is not for it: it would take the client back. Pure.
 */
export function holdsNewer(ifNoneMatch: string | undefined, answer: { etag: string }): boolean {
  const own = versionOfEtag(answer.etag);
  const held = own && heldListVersion(ifNoneMatch);
  return held !== undefined && own !== undefined && isOlder(own, held);
}

/** The minute a list ETag names, or undefined when the tag is not one of ours. Pure. */
export function listEtagInstant(etag: string): Date | undefined {
  const m = LIST_ETAG.exec(etag.trim());
  return m?.[3] ? new Date(Number(m[3]) * 60_000) : undefined;
}

/** At most this many entity tags of an If-None-Match are considered for a wait (each costs a digest). */
const MAX_HELD_TAGS = 8;

/**
 * The list ETag among an If-None-Match's tags that is this query's at the current data version, of whatever
 * minute: `etagAt(minute)` is the ETag the list would have had then. Pure.
 */
export function heldListEtag(ifNoneMatch: string | undefined, etagAt: (asOf: Date) => string): { etag: string; asOf: Date } | undefined {
  if (!ifNoneMatch) return undefined;
  for (const tag of ifNoneMatch.split(',').slice(0, MAX_HELD_TAGS)) {
    const asOf = listEtagInstant(tag);
    if (!asOf) continue;
    const etag = etagAt(asOf);
    if (etag === tag.trim().replace(/^W\//, '')) return { etag, asOf };
  }
  return undefined;
}

/**
 * Whether a request's Cache-Control asks that no stored answer be used without checking it with the origin
 * (`no-cache`, or `max-age=0`: RFC 9111 5.2.1). For a list the check is its data version (respond.ts). Pure.
 */
export function asksRevalidation(cacheControl: string | undefined): boolean {
  if (!cacheControl) return false;
  return cacheControl.split(',').some((d) => /^\s*(no-cache|max-age\s*=\s*0+)\s*$/i.test(d));
}

/** Does an If-None-Match header list this ETag (or `*`)? Weak comparison, as RFC 9110 asks for 304s. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === bare);
}

const SMALL_BODY_BYTES = 64 * 1024;
/** How far a live shared list may run ahead of its slowest reader, at least (when entries are smaller). */
const MIN_LIVE_WINDOW_BYTES = 4 * 1024 * 1024;
/** How long a reader of a shared list may hold the others up without reading. */
const STALL_MS = 10_000;

/** What an answer being made is known by before its body: everything of its cache entry but the bytes. */
export type AnswerMeta = Omit<CachedBody, 'body'>;

interface ResponseCacheOptions {
  maxBytes: number;
  lookups: Counter<'endpoint' | 'result'>;
}

export class ResponseCache {
  readonly #lru: LRUCache<string, CachedBody> | undefined;
  readonly #lookups: Counter<'endpoint' | 'result'>;
  /** Largest body kept: a quarter of the cache, so one export cannot flush everything else. */
  readonly maxEntryBytes: number;

  constructor({ maxBytes, lookups }: ResponseCacheOptions) {
    this.#lookups = lookups;
    this.maxEntryBytes = Math.floor(maxBytes / 4);
    this.#lru =
      maxBytes > 0
        ? new LRUCache<string, CachedBody>({ maxSize: maxBytes, maxEntrySize: this.maxEntryBytes, sizeCalculation: (v, k) => v.body.length * (v.text === undefined ? 1 : 2) + k.length + 256 })
        : undefined;
  }

  /** Raw URL → normalized cache key, so a repeated request skips normalizing its parameters. */
  readonly #normalized = new Map<string, string>();

  normalizedKey(rawUrl: string, remember: boolean, normalize: () => string): string {
    const known = this.#normalized.get(rawUrl);
    if (known !== undefined) return known;
    const key = normalize();
    if (remember) {
      if (this.#normalized.size >= 4096) this.#normalized.clear();
      this.#normalized.set(rawUrl, key);
    }
    return key;
  }

  /** The cache key of a URL answered before (and remembered), without parsing it. */
  knownKey(rawUrl: string): string | undefined {
    return this.#normalized.get(rawUrl);
  }

  /**
   * The entry under a key, if any, without counting the lookup (see countLookup). Not an entry older than the
   * list the request's If-None-Match holds: that request is answered from the store, and its answer replaces
   * the entry.
   */
  peek(key: string, ifNoneMatch?: string): CachedBody | undefined {
    const entry = this.#lru?.get(key);
    return entry && ifNoneMatch !== undefined && holdsNewer(ifNoneMatch, entry) ? undefined : entry;
  }

  /** `coalesced`: a miss answered by an identical request's answer being made. */
  countLookup(endpoint: string, result: boolean | 'coalesced'): void {
    this.#lookups.inc({ endpoint, result: result === 'coalesced' ? result : result ? 'hit' : 'miss' });
  }

  get(endpoint: string, key: string, ifNoneMatch?: string): CachedBody | undefined {
    const hit = this.peek(key, ifNoneMatch);
    this.countLookup(endpoint, hit !== undefined);
    return hit;
  }

  set(key: string, entry: CachedBody): void {
    if (entry.body.length > this.maxEntryBytes || !this.#lru) return;
    // A list read at an older data version that finishes last never replaces a newer one, and none older than
    // the last change to the exclusions is kept.
    const kept = this.#lru.peek(key)?.dataVersion;
    if (kept && entry.dataVersion && isNewer(kept, entry.dataVersion)) return;
    if (this.#floor && entry.dataVersion && isOlder(entry.dataVersion, this.#floor)) return;
    // Text only of text: a compressed body is bytes.
    const text = entry.body.length <= SMALL_BODY_BYTES && !entry.headers['content-encoding'] ? entry.body.toString('utf8') : undefined;
    this.#lru.set(key, { ...entry, text, lastModified: entry.lastModified ?? entry.generatedAt.toUTCString() }, { ttl: entry.ttlSeconds * 1000 });
  }

  /** Bumped by clear(): an answer made before it is not kept after it. */
  #generation = 0;
  #floor: DataVersion | undefined;

  /**
   * The data version of the last change to the exclusions this server was told of: a list read at an older
   * one may hold an address that must be left out now, so none is kept (set) or read from a standby
   * (query/list-source.ts).
   */
  get floor(): DataVersion | undefined {
    return this.#floor;
  }

  /**
   * Forgets every answer (the exclusions changed: a kept list may hold an address it must leave out now), and
   * every answer still being made: its snapshot may be older than the change, so no later request joins it
   * and it is not kept. `floor`: the data version the change moved to, when known.
   */
  clear(floor?: DataVersion): void {
    this.#generation++;
    if (floor && (!this.#floor || isNewer(floor, this.#floor))) this.#floor = floor;
    this.#lru?.clear();
    this.#lists.clear();
    this.#documents.clear();
  }

  readonly #lists = new Map<string, SharedBody<AnswerMeta>>();
  readonly #documents = new Map<string, Promise<CachedBody>>();

  /** The list being made under `key` that a new request may still read from its first byte, if any. */
  listInFlight(key: string): SharedBody<AnswerMeta> | undefined {
    const body = this.#lists.get(key);
    return body?.joinable ? body : undefined;
  }

  /**
   * Starts the shared body of the list answered under `key`: identical requests join it until it ends, and
   * it becomes the cache entry when it fits one. Memory: at most an entry's bound per list being made.
   */
  startList(key: string): SharedBody<AnswerMeta> {
    const generation = this.#generation;
    const body: SharedBody<AnswerMeta> = new SharedBody<AnswerMeta>({
      keepBytes: this.#lru ? this.maxEntryBytes : 0,
      windowBytes: Math.max(this.maxEntryBytes, MIN_LIVE_WINDOW_BYTES),
      stallMs: STALL_MS,
      keep: (bytes, meta) => {
        if (generation === this.#generation) this.set(key, { ...meta, body: bytes });
      },
      settled: () => {
        if (this.#lists.get(key) === body) this.#lists.delete(key);
      },
    });
    this.#lists.set(key, body);
    return body;
  }

  /** The document being made under `key`, if any. */
  documentInFlight(key: string): Promise<CachedBody> | undefined {
    return this.#documents.get(key);
  }

  /** Makes the document under `key` once for every request that asks meanwhile, and keeps it. */
  makeDocument(key: string, make: () => Promise<CachedBody>): Promise<CachedBody> {
    const generation = this.#generation;
    const made = make().then((entry) => {
      if (generation === this.#generation) this.set(key, entry);
      return entry;
    });
    this.#documents.set(key, made);
    const forget = () => {
      if (this.#documents.get(key) === made) this.#documents.delete(key);
    };
    made.then(forget, forget);
    return made;
  }
}

function freshnessHeaders(reply: FastifyReply, visibility: 'public' | 'private', entry: Pick<CachedBody, 'generatedAt' | 'ttlSeconds' | 'lastModified'>): void {
  const age = Math.max(0, Math.floor((Date.now() - entry.generatedAt.getTime()) / 1000));
  reply.header('cache-control', `${visibility}, max-age=${Math.max(0, entry.ttlSeconds - age)}`);
  reply.header('age', String(age));
  reply.header('last-modified', entry.lastModified ?? entry.generatedAt.toUTCString());
}

/**
 * The headers of a 200 from a cached body as Node's flat [name, value, ...] list, rebuilt only when the
 * entry's age (whole seconds, so Age and max-age are exact for every request) has changed.
 */
interface HitHeaders {
  age: number;
  visibility: 'public' | 'private';
  list: string[];
}
const hitHeaders = new WeakMap<CachedBody, HitHeaders>();

export function headersOfHit(entry: CachedBody, visibility: 'public' | 'private', nowMs: number): string[] {
  const age = Math.max(0, Math.floor((nowMs - entry.generatedAt.getTime()) / 1000));
  const known = hitHeaders.get(entry);
  if (known && known.age === age && known.visibility === visibility) return known.list;
  const list = [
    'cache-control', `${visibility}, max-age=${Math.max(0, entry.ttlSeconds - age)}`,
    'age', String(age),
    'last-modified', entry.lastModified ?? entry.generatedAt.toUTCString(),
    'etag', entry.etag,
    ...Object.entries(entry.headers).flat(),
    'content-length', String(entry.body.length),
  ];
  hitHeaders.set(entry, { age, visibility, list });
  return list;
}

/**
 * Answers from a complete body: 304 when the client has it, else the body with its validators. The 200 is
 * the hot path of the API (every cached answer): precomputed headers and the body go to Node in one call,
 * past fastify's send pipeline (this API registers no onSend hooks); onResponse hooks still run on finish.
 */
export function sendBody(req: FastifyRequest, reply: FastifyReply, visibility: 'public' | 'private', entry: CachedBody): FastifyReply {
  if (etagMatches(req.headers['if-none-match'], entry.etag)) return sendNotModified(reply, visibility, entry);
  const list = headersOfHit(entry, visibility, Date.now());
  // Node merges these with the RateLimit fields the limits step set on the raw response.
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, list);
  raw.end(entry.text ?? entry.body);
  return reply;
}

/** Headers of a body, not of a 304 that has none. */
const NOT_IN_304: ReadonlySet<string> = new Set(['content-disposition', 'content-encoding']);

/** 304: the client holds this answer. Its validators and freshness, no body. */
export function sendNotModified(reply: FastifyReply, visibility: 'public' | 'private', entry: Omit<CachedBody, 'body'>): FastifyReply {
  freshnessHeaders(reply, visibility, entry);
  reply.header('etag', entry.etag);
  for (const [k, v] of Object.entries(entry.headers)) if (!NOT_IN_304.has(k)) reply.header(k, v);
  return reply.code(304).send();
}

/**
 * 200 to a HEAD without reading the body: a list's validators are known before it is read (listEtag). No
 * Content-Length, which would have to be the body's (RFC 9110 9.3.2); written past fastify's send pipeline,
 * whose HEAD handling would add `content-length: 0`.
 */
export function sendHead(reply: FastifyReply, visibility: 'public' | 'private', entry: Omit<CachedBody, 'body'>): FastifyReply {
  freshnessHeaders(reply, visibility, entry);
  reply.header('etag', entry.etag);
  for (const [k, v] of Object.entries(entry.headers)) reply.header(k, v);
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, reply.getHeaders() as Record<string, string>);
  raw.end();
  return reply;
}

/** Answers with a stream, its validators known ahead (a list's ETag, listEtag). */
export function sendStream(reply: FastifyReply, visibility: 'public' | 'private', entry: Omit<CachedBody, 'body'>, body: Readable): FastifyReply {
  freshnessHeaders(reply, visibility, entry);
  reply.header('etag', entry.etag);
  for (const [k, v] of Object.entries(entry.headers)) reply.header(k, v);
  return reply.send(body);
}

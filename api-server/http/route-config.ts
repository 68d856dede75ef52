// What the steps of an answer know of the API route they serve: which of the two APIs it belongs to and who
// may call it (auth, limits), its path (metrics, CORS) and how long its answers live (cache). The auth, limit
// and cache steps read this instead of guessing from the path. Every route is a row of endpoints.ts.
import type { CacheClass } from './cache.ts';

/**
 * Which API a route belongs to, in the code's short names: A is the token API (/api/honeypot/, an optional
 * bearer token), B the key API (/api/, an API key). Users only ever see the names of API_NAMES.
 */
export type Variant = 'A' | 'B';

/** The two APIs as users know them: OpenAPI tags and the /docs page's groups. */
export const API_NAMES: Readonly<Record<Variant, string>> = { A: 'Token API', B: 'Key API' };

export interface ApiRouteConfig {
  /** A: the credential is an optional bearer token; B: an API key (X-API-Key, or key=). */
  variant: Variant;
  /** `public`: anyone, anonymous callers limited per address; `key`: a subscription key is required. */
  access: 'public' | 'key';
  /** Name used in file names, cache keys and metrics (dedup, export, scan-export, stats, recent). */
  endpoint: string;
}

export interface ApiRoute extends ApiRouteConfig {
  /** The URL path, written once: the route, its metrics label and its OpenAPI entry. */
  path: string;
  cache: CacheClass;
  /**
   * Takes `wait=`, a long poll: held until the list data changes (long-poll.ts). Only where a key is
   * required: a waiter is not something an anonymous client may make the server hold.
   */
  longPoll?: boolean;
  /**
   * What its answers are, from its renderer: lists go out gzip-compressed to clients that accept it, under a
   * cache key of their own (content-coding.ts); documents always as they are.
   */
  answers: 'list' | 'document';
}

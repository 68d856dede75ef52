// What the steps of an answer know of the API route they serve: which variant it belongs to and who may call
// it (auth, limits), its path (metrics, CORS) and how long its answers live (cache). The auth, limit and
// cache steps read this instead of guessing from the path. Every route is a row of endpoints.ts.
import type { CacheClass } from './cache.ts';

export type Variant = 'A' | 'B';

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
}

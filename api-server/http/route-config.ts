// What every API route declares in its fastify `config`: which variant it belongs to and who may call it.
// The auth, limit and cache steps read this instead of guessing from the path.

export type Variant = 'A' | 'B';

export interface ApiRouteConfig {
  variant: Variant;
  /** `public`: anyone, anonymous callers limited per address; `key`: a subscription key is required. */
  access: 'public' | 'key';
  /** Name used in file names, cache keys and metrics (dedup, export, scan-export, stats, recent). */
  endpoint: string;
}

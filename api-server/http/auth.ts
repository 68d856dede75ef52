// Who is calling: anonymous, or a subscription key presented as `Authorization: Bearer` (variant A) or
// `X-API-Key` / `key=` (variant B). Verified keys are remembered briefly so a hot path costs no query.
import type { FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import type pg from 'pg';
import type { ApiKey } from '../keys/store.ts';
import { verifyKeyWithStandbys } from '../keys/store.ts';
import type { Quota } from '../keys/tiers.ts';
import { ProblemError } from './problem.ts';
import type { ApiRouteConfig } from './route-config.ts';

export type Caller = { kind: 'anonymous' } | { kind: 'key'; key: ApiKey; quota: Quota };

export interface Authenticator {
  /** The caller, synchronously when no store lookup is needed (no credential, or a recently verified key). */
  authenticate(req: FastifyRequest, route: ApiRouteConfig): Caller | Promise<Caller>;
  /** Drops every remembered key (a key was revoked somewhere). */
  forget(): void;
}

interface AuthOptions {
  /** Keys are verified on the primary; on a standby of `readPool` only while the primary cannot be reached. */
  pool: pg.Pool;
  readPool?: pg.Pool;
  tiers: Map<string, Quota>;
  keyCacheSeconds: number;
  /** Where members download the basic list (named in the 403 detail). */
  websiteDownload?: string;
}

const NO_ACCESS: Quota = { kind: 'none' };

function unauthorized(variant: 'A' | 'B', detail: string): ProblemError {
  return new ProblemError({
    status: 401,
    slug: 'unauthorized',
    title: 'Missing or invalid credential',
    detail,
    headers: variant === 'A' ? { 'www-authenticate': 'Bearer realm="blockfeed"' } : { 'www-authenticate': 'APIKey realm="blockfeed", header="X-API-Key"' },
  });
}

/** The secret the request presents for its variant, '' for a malformed Authorization header, or undefined. */
function presentedSecret(req: FastifyRequest, variant: 'A' | 'B'): string | undefined {
  if (variant === 'A') {
    const header = req.headers.authorization;
    if (header === undefined) return undefined;
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    return m?.[1] ?? '';
  }
  const header = req.headers['x-api-key'];
  if (typeof header === 'string') return header.trim();
  const query = req.query as { key?: unknown } | undefined;
  return typeof query?.key === 'string' ? query.key : undefined;
}

export function createAuthenticator({ pool, readPool = pool, tiers, keyCacheSeconds, websiteDownload = 'the download page of the member centre' }: AuthOptions): Authenticator {
  const verified = keyCacheSeconds > 0 ? new LRUCache<string, ApiKey>({ max: 10_000, ttl: keyCacheSeconds * 1000 }) : undefined;

  function classify(key: ApiKey | undefined, route: ApiRouteConfig): Caller {
    if (!key) throw unauthorized(route.variant, route.variant === 'A' ? 'the bearer token is invalid or revoked' : 'the API key is invalid or revoked');
    const quota = tiers.get(key.tier) ?? NO_ACCESS;
    if (quota.kind === 'none') {
      // Public endpoints stay public: a member key there counts as no key.
      if (route.access === 'public' && route.variant === 'B') return { kind: 'anonymous' };
      throw new ProblemError({
        status: 403,
        slug: 'no-api-access',
        title: 'No API access for this membership tier',
        detail: `keys of the "${key.tier}" tier have no API or script access; download the basic blocklist from ${websiteDownload} on the website, or upgrade to a subscription tier`,
      });
    }
    return { kind: 'key', key, quota };
  }

  // Bumped by forget(): a verification that started before a revocation must not put the key back.
  let generation = 0;

  return {
    forget: () => {
      generation++;
      verified?.clear();
    },
    authenticate(req, route) {
      const secret = presentedSecret(req, route.variant);
      if (secret === undefined) {
        if (route.access === 'key') {
          throw unauthorized(route.variant, 'this endpoint needs a subscription API key: send it in the X-API-Key header (or as key= for temporary script use)');
        }
        return { kind: 'anonymous' };
      }
      if (secret === '') throw unauthorized(route.variant, 'the Authorization header must read "Bearer <token>"');
      // Keyed by the presented secret itself: it is in this process's memory anyway while the request lives,
      // and hashing it on every request would cost more than the rest of a cached answer.
      const known = verified?.get(secret);
      if (known) return classify(known, route);
      const startedIn = generation;
      return verifyKeyWithStandbys({ pool, readPool }, secret).then((key) => {
        if (key && startedIn === generation) verified?.set(secret, key);
        return classify(key, route);
      });
    },
  };
}

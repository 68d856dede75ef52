// What every API route carries: auth → limits before the handler, the request metric after the response,
// in front of both the fast path for cached answers, and whether other origins may read it (the public
// endpoints, security-headers.ts). Attached per route (not as context-wide hooks) so each knows its route
// without a per-request lookup. The common case — a cached answer to no credential or a recently verified
// unmetered key — takes no promise at all: callback hooks that finish synchronously.
import type { FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { ApiMetrics } from './api-metrics.ts';
import type { Authenticator, Caller } from './auth.ts';
import { asksRevalidation, sendBody, type ResponseCache } from './cache.ts';
import { codedKey, listCoding } from './content-coding.ts';
import type { Limiter } from './limits.ts';
import type { ApiRoute, ApiRouteConfig } from './route-config.ts';

export interface GuardDeps {
  auth: Authenticator;
  limiter: Limiter;
  cache: ResponseCache;
  metrics: Pick<ApiMetrics, 'requestDuration'>;
}

export type RouteGuard = Pick<RouteShorthandOptions, 'onRequest' | 'preHandler' | 'onResponse' | 'config'>;

type Next = (err?: Error) => void;

export function visibility(route: Pick<ApiRouteConfig, 'access'>): 'public' | 'private' {
  return route.access === 'key' ? 'private' : 'public';
}

/** Who each admitted request is, for the handler (a long poll is bounded per key). */
const callers = new WeakMap<FastifyRequest, Caller>();

/** The caller the guard admitted this request as; undefined before preHandler has run. */
export function callerOf(req: FastifyRequest): Caller | undefined {
  return callers.get(req);
}

/** Milliseconds a request was held by a long poll: the request metric leaves them out (it measures the work). */
const held = new WeakMap<FastifyRequest, number>();

export function noteHeld(req: FastifyRequest, ms: number): void {
  held.set(req, (held.get(req) ?? 0) + ms);
}

export function routeGuard({ auth, limiter, cache, metrics }: GuardDeps, route: ApiRoute): RouteGuard {
  const answersVisibility = visibility(route);

  /** Auth, then the limit or quota of the caller; `next` runs synchronously when neither needs the store. */
  function admit(req: FastifyRequest, reply: FastifyReply, next: Next): void {
    let caller: Caller | Promise<Caller>;
    try {
      caller = auth.authenticate(req, route);
    } catch (err) {
      return next(err as Error);
    }
    if (caller instanceof Promise) caller.then((c) => meter(req, reply, c, next), next);
    else meter(req, reply, caller, next);
  }

  function meter(req: FastifyRequest, reply: FastifyReply, caller: Caller, next: Next): void {
    callers.set(req, caller);
    const policy = limiter.policy(req, caller, route);
    if (!policy) return next();
    limiter.enforce(reply, caller, policy).then(() => next(), next);
  }

  const observe = (method: string, status: number, seconds: number) =>
    metrics.requestDuration.labels({ method, route: route.path, status }).observe(seconds);

  return {
    config: { crossOriginRead: route.access === 'public' },
    /**
     * The fast path of a cached answer, the bulk of a busy server's requests. A URL answered before maps
     * straight to its cache key (the same URL validates the same way), so while the cache holds the answer,
     * auth and limits run here — exactly as in preHandler — and the body goes out without fastify's
     * validation, preHandler and handler steps, work a repeated URL does not need.
     * Everything else (first sight of a URL, a miss, URLs carrying key= or wait=, a request that asks for the
     * current data with Cache-Control) continues down the normal path.
     */
    onRequest: (req: FastifyRequest, reply: FastifyReply, done: Next) => {
      if (asksRevalidation(req.headers['cache-control'])) return done();
      const known = cache.knownKey(req.url);
      const key = known === undefined || route.answers === 'document' ? known : codedKey(known, listCoding(req.headers['accept-encoding']));
      const hit = key === undefined ? undefined : cache.peek(key, req.headers['if-none-match']);
      if (!hit) return done();
      admit(req, reply, (err) => {
        if (err) return done(err);
        // Counted once admitted, as the normal path counts its lookup after auth and limits.
        cache.countLookup(route.endpoint, true);
        sendBody(req, reply, answersVisibility, hit);
      });
    },
    preHandler: admit,
    onResponse: (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
      observe(req.method, reply.statusCode, Math.max(0, reply.elapsedTime - (held.get(req) ?? 0)) / 1000);
      done();
    },
  };
}

// Anonymous rate limits (per client address per minute) and tier quotas (per key per UTC day), counted in
// the store's rate counters (store/rate-counters.ts) so every replica sees the same counts. Announced with the
// IETF RateLimit-Policy / RateLimit header fields (draft-ietf-httpapi-ratelimit-headers).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { Counter } from 'prom-client';
import { QUOTA_WINDOW_SECONDS, quotaBucket } from '../keys/tiers.ts';
import { clientSubject, countHit, type Count, type CounterWindow } from '../store/rate-counters.ts';
import type { Caller } from './auth.ts';
import { ProblemError } from './problem.ts';
import type { ApiRouteConfig } from './route-config.ts';

/** A limit on a counter: at most `limit` hits per window, announced under `name`. */
export interface Policy extends CounterWindow {
  name: string;
  limit: number;
}

/** The policy that meters a caller on a route, or undefined when it is not limited. Pure. */
export function policyFor(caller: Caller, route: ApiRouteConfig, clientAddress: string, anonymousPerMinute: number): Policy | undefined {
  if (caller.kind === 'anonymous') return { name: 'anonymous', bucket: `anon:${clientSubject(clientAddress)}`, limit: anonymousPerMinute, windowSeconds: 60 };
  // Variant A: "subscription tokens are not limited".
  if (route.variant === 'A') return undefined;
  const q = caller.quota;
  if (q.kind !== 'daily') return undefined;
  return { name: caller.key.tier, bucket: quotaBucket(caller.key.id), limit: q.calls, windowSeconds: QUOTA_WINDOW_SECONDS };
}

export function policyHeader(p: Policy): string {
  return `"${p.name}";q=${p.limit};w=${p.windowSeconds}`;
}

export function rateLimitHeader(p: Policy, c: Count): string {
  return `"${p.name}";r=${Math.max(0, p.limit - c.hits)};t=${c.resetSeconds}`;
}

interface LimiterOptions {
  pool: pg.Pool;
  anonymousPerMinute: number;
  rejections: Counter<'policy'>;
  /** The time windows are counted in (tests set it; a server uses the system clock). */
  clock?: () => Date;
}

export interface Limiter {
  /** The policy metering this request, if any (pure; no I/O). */
  policy(req: FastifyRequest, caller: Caller, route: ApiRouteConfig): Policy | undefined;
  /** Counts the request under its policy; announces the limit; throws 429 when it is spent. */
  enforce(reply: FastifyReply, caller: Caller, policy: Policy): Promise<void>;
}

export function createLimiter({ pool, anonymousPerMinute, rejections, clock = () => new Date() }: LimiterOptions): Limiter {
  const policy = (req: FastifyRequest, caller: Caller, route: ApiRouteConfig) => policyFor(caller, route, req.ip, anonymousPerMinute);
  return { policy, enforce };
  async function enforce(reply: FastifyReply, caller: Caller, policy: Policy): Promise<void> {
    const count = await countHit(pool, policy, clock());
    // On Node's response itself: every way of answering (fastify's send, or the cached-answer fast path
    // writing to Node directly, guard.ts) then carries the fields without copying them over.
    reply.raw.setHeader('ratelimit-policy', policyHeader(policy));
    reply.raw.setHeader('ratelimit', rateLimitHeader(policy, count));
    if (count.hits > policy.limit) {
      rejections.inc({ policy: caller.kind === 'anonymous' ? 'anonymous' : 'quota' });
      throw new ProblemError({
        status: 429,
        slug: caller.kind === 'anonymous' ? 'rate-limited' : 'quota-exhausted',
        title: caller.kind === 'anonymous' ? 'Too many requests' : 'Quota exhausted',
        detail:
          caller.kind === 'anonymous'
            ? `anonymous callers may make ${policy.limit} requests per minute; retry in ${count.resetSeconds} s or use a subscription key`
            : `the "${policy.name}" tier allows ${policy.limit} calls per UTC day; the quota renews in ${count.resetSeconds} s`,
        retryAfterSeconds: count.resetSeconds,
      });
    }
  }
}

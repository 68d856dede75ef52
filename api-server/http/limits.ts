// Anonymous rate limits (per client address per minute) and tier quotas (per key per UTC day), counted in
// PostgreSQL with one atomic UPSERT per request so every replica sees the same counters. Announced with the
// IETF RateLimit-Policy / RateLimit header fields (draft-ietf-httpapi-ratelimit-headers).
import type { FastifyReply, FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';
import type pg from 'pg';
import type { Counter } from 'prom-client';
import type { Caller } from './auth.ts';
import { ProblemError } from './problem.ts';
import type { ApiRouteConfig } from './route-config.ts';

export interface Policy {
  name: string;
  bucket: string;
  limit: number;
  windowSeconds: number;
}

/**
 * What a client address is limited as: an IPv4 address as itself, an IPv6 address by its /64. A subscriber
 * gets a /64 at least, so counting single IPv6 addresses would let one client rotate past every limit.
 */
export function clientSubject(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address); // an IPv4-mapped IPv6 address is the IPv4 client it carries
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
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

/** Tier quotas count calls per UTC day. */
export const QUOTA_WINDOW_SECONDS = 86_400;

/** The counter of a key's daily quota (the member centre reads it to show calls today). */
export function quotaBucket(keyId: number): string {
  return `quota:${keyId}`;
}

/** The start of the fixed window of `windowSeconds` that `now` falls in (aligned to the epoch: minutes, UTC days). */
export function windowStart(windowSeconds: number, now: Date): Date {
  const windowMs = windowSeconds * 1000;
  return new Date(Math.floor(now.getTime() / windowMs) * windowMs);
}

export interface Count {
  hits: number;
  resetSeconds: number;
}

/**
 * Counts one request in the policy's current fixed window. The window is the one `now` falls in; replicas
 * agree on it as far as their clocks agree.
 */
export async function countHit(pool: pg.Pool, policy: Pick<Policy, 'bucket' | 'windowSeconds'>, now: Date): Promise<Count> {
  const windowMs = policy.windowSeconds * 1000;
  const start = windowStart(policy.windowSeconds, now).getTime();
  const { rows } = await pool.query<{ hits: number }>(
    `insert into rate_counters (bucket, window_start, hits) values ($1, $2, 1)
     on conflict (bucket, window_start) do update set hits = rate_counters.hits + 1
     returning hits`,
    [policy.bucket, new Date(start)],
  );
  const row = rows[0];
  if (!row) throw new Error('rate counter upsert returned no row');
  return { hits: row.hits, resetSeconds: Math.max(1, Math.ceil((start + windowMs - now.getTime()) / 1000)) };
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

/** Forgets the count of a bucket's current window (a successful sign-in clears its account's failures). */
export async function clearHits(pool: pg.Pool, policy: Pick<Policy, 'bucket' | 'windowSeconds'>, now: Date): Promise<void> {
  await pool.query('delete from rate_counters where bucket = $1 and window_start = $2', [policy.bucket, windowStart(policy.windowSeconds, now)]);
}

/** Forgets counters of windows long past. */
export async function pruneCounters(pool: pg.Pool): Promise<void> {
  await pool.query(`delete from rate_counters where window_start < now() - interval '2 days'`);
}

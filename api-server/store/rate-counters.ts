// Fixed-window counters in PostgreSQL (`rate_counters`, migration 0003): one atomic UPSERT per counted
// request, so every replica on one database sees the same counts. The API's rate limits and tier quotas
// (http/limits.ts) and the website's throttles (website/throttle.ts) count here, each in buckets of its own.
import { cidrText, ipv6Network, ipv6Value, parseAddress } from '../../common/ip.ts';
import type pg from 'pg';

/** A counter: its bucket (a name of the counting policy's choosing) and the length of its fixed windows. */
export interface CounterWindow {
  bucket: string;
  windowSeconds: number;
}

export interface Count {
  hits: number;
  /** Seconds until the current window ends (at least 1). */
  resetSeconds: number;
}

/**
 * What a client address is counted as: an IPv4 address as itself, an IPv6 address by its /64. A subscriber
 * gets a /64 at least, so counting single IPv6 addresses would let one client rotate past every limit.
 */
export function clientSubject(address: string): string {
  const parsed = parseAddress(address); // an IPv4-mapped IPv6 address is the IPv4 client it carries
  if (!parsed) return address;
  if (parsed.kind === 4) return parsed.text;
  return cidrText({ kind: 6, network: ipv6Network(ipv6Value(parsed), 64), prefix: 64 });
}

/** The start of the fixed window of `windowSeconds` that `now` falls in (aligned to the epoch: minutes, UTC days). */
export function windowStart(windowSeconds: number, now: Date): Date {
  const windowMs = windowSeconds * 1000;
  return new Date(Math.floor(now.getTime() / windowMs) * windowMs);
}

/**
 * Counts one request in the counter's current fixed window. The window is the one `now` falls in; replicas
 * agree on it as far as their clocks agree.
 */
export async function countHit(pool: pg.Pool, counter: CounterWindow, now: Date): Promise<Count> {
  const windowMs = counter.windowSeconds * 1000;
  const start = windowStart(counter.windowSeconds, now).getTime();
  const { rows } = await pool.query<{ hits: number }>(
    `insert into rate_counters (bucket, window_start, hits) values ($1, $2, 1)
     on conflict (bucket, window_start) do update set hits = rate_counters.hits + 1
     returning hits`,
    [counter.bucket, new Date(start)],
  );
  const row = rows[0];
  if (!row) throw new Error('rate counter upsert returned no row');
  return { hits: row.hits, resetSeconds: Math.max(1, Math.ceil((start + windowMs - now.getTime()) / 1000)) };
}

/** The counts of the current window of buckets sharing one window length (0 for a bucket not counted yet). */
export async function currentHits(pool: pg.Pool, buckets: readonly string[], windowSeconds: number, now: Date): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ bucket: string; hits: number }>('select bucket, hits from rate_counters where bucket = any($1) and window_start = $2', [
    buckets,
    windowStart(windowSeconds, now),
  ]);
  const hits = new Map(rows.map((r) => [r.bucket, r.hits]));
  return new Map(buckets.map((b) => [b, hits.get(b) ?? 0]));
}

/** Forgets the count of a counter's current window (a successful sign-in clears its account's failures). */
export async function clearHits(pool: pg.Pool, counter: CounterWindow, now: Date): Promise<void> {
  await pool.query('delete from rate_counters where bucket = $1 and window_start = $2', [counter.bucket, windowStart(counter.windowSeconds, now)]);
}

/** Forgets counters of windows long past. */
export async function pruneCounters(pool: pg.Pool): Promise<void> {
  await pool.query(`delete from rate_counters where window_start < now() - interval '2 days'`);
}

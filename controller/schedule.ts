// When a subscription syncs next: its cron schedule, its interval, or by default once a day early in the
// morning (UTC) at a minute fixed per subscription, so many subscriptions do not pull the feed at once.
import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { MIN_INTERVAL_SECONDS, type BlocklistSubscription } from '../api/v1alpha1/blocklist-subscription.ts';

/** Go-style duration (6h, 90m, 1h30m, 45s) in seconds, or undefined. */
export function parseDuration(text: string): number | undefined {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text.trim());
  if (!m || text.trim() === '') return undefined;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

/** The default schedule: daily between 03:00 and 04:59 UTC, the minute derived from the subscription uid. */
export function defaultSchedule(sub: Pick<BlocklistSubscription, 'metadata'>): string {
  const seed = createHash('sha256').update(sub.metadata.uid ?? `${sub.metadata.namespace}/${sub.metadata.name}`).digest().readUInt16BE(0);
  const minuteOfWindow = seed % 120;
  return `${minuteOfWindow % 60} ${3 + Math.floor(minuteOfWindow / 60)} * * *`;
}

/** Next sync time after `from`; `lastSync` anchors intervals. Throws on an unusable schedule. */
export function nextSyncTime(sub: Pick<BlocklistSubscription, 'metadata' | 'spec'>, from: Date, lastSync?: Date): Date {
  if (sub.spec.interval) {
    const seconds = parseDuration(sub.spec.interval);
    if (seconds === undefined || seconds < MIN_INTERVAL_SECONDS) throw new Error(`interval "${sub.spec.interval}" must be a duration of at least 5m`);
    const anchor = lastSync ?? from;
    const next = new Date(anchor.getTime() + seconds * 1000);
    return next < from ? from : next;
  }
  const expr = sub.spec.schedule ?? defaultSchedule(sub);
  const next = new Cron(expr, { timezone: 'UTC', paused: true }).nextRun(from);
  if (!next) throw new Error(`schedule "${expr}" never fires`);
  return next;
}

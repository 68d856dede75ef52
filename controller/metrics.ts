// The controller's Prometheus metrics (README "Monitoring" documents each), on a registry of its own.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { createRegistry } from '../common/metrics.ts';

/** Every outcome of a pull; each subscription's counters start at 0 for all of them (see pullAndApply). */
export const PULL_RESULTS = ['changed', 'unchanged', 'refused', 'failed'] as const;

export interface ControllerMetrics {
  registry: Registry;
  pullTotal: Counter<'namespace' | 'name' | 'result'>;
  pullDuration: Histogram<'namespace' | 'name'>;
  listEntries: Gauge<'namespace' | 'name'>;
  targetCidrs: Gauge<'namespace' | 'name' | 'kind'>;
  lastSuccess: Gauge<'namespace' | 'name'>;
  droppedEntries: Counter<'namespace' | 'name' | 'reason'>;
  targetApply: Counter<'namespace' | 'name' | 'kind' | 'result'>;
  degraded: Gauge<'namespace' | 'name'>;
  driftRepairs: Counter<'namespace' | 'name' | 'kind'>;
  liveConnected: Gauge<'namespace' | 'name'>;
  liveWakeups: Counter<'namespace' | 'name'>;
  livePollErrors: Counter<'namespace' | 'name' | 'reason'>;
  appliedDataAge: Histogram<'namespace' | 'name'>;
  isLeader: Gauge;
}

export function createControllerMetrics(registry: Registry = createRegistry({ program: 'controller' })): ControllerMetrics {
  const registers = [registry];
  return {
    registry,
    pullTotal: new Counter({
      name: 'blockfeed_pull_total',
      help: `Feed pulls by outcome (${PULL_RESULTS.join(', ')}).`,
      labelNames: ['namespace', 'name', 'result'],
      registers,
    }),
    pullDuration: new Histogram({
      name: 'blockfeed_pull_duration_seconds',
      help: 'Time to pull and sanitise a feed.',
      labelNames: ['namespace', 'name'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    listEntries: new Gauge({
      name: 'blockfeed_list_entries',
      help: 'Entries in the applied list of a subscription, after sanitising.',
      labelNames: ['namespace', 'name'],
      registers,
    }),
    targetCidrs: new Gauge({
      name: 'blockfeed_target_cidrs',
      help: 'CIDRs applied per target kind.',
      labelNames: ['namespace', 'name', 'kind'],
      registers,
    }),
    lastSuccess: new Gauge({
      name: 'blockfeed_last_success_timestamp_seconds',
      help: 'Unix time of the last successful sync of a subscription.',
      labelNames: ['namespace', 'name'],
      registers,
    }),
    droppedEntries: new Counter({
      name: 'blockfeed_dropped_entries_total',
      help: 'Feed entries dropped by the safety stage, by reason.',
      labelNames: ['namespace', 'name', 'reason'],
      registers,
    }),
    targetApply: new Counter({
      name: 'blockfeed_target_apply_total',
      help: 'Target applications by kind and result (written, unchanged, degraded, failed).',
      labelNames: ['namespace', 'name', 'kind', 'result'],
      registers,
    }),
    degraded: new Gauge({
      name: 'blockfeed_subscription_degraded',
      help: '1 while a subscription has its Degraded condition True (the last applied list stays in force), else 0.',
      labelNames: ['namespace', 'name'],
      registers,
    }),
    driftRepairs: new Counter({
      name: 'blockfeed_drift_repairs_total',
      help: 'Objects written again because someone else changed or deleted them (the last applied list, no pull).',
      labelNames: ['namespace', 'name', 'kind'],
      registers,
    }),
    liveConnected: new Gauge({
      name: 'blockfeed_live_connected',
      help: '1 while the long poll of a live subscription (spec.feed.live) is open or being reopened without error, else 0.',
      labelNames: ['namespace', 'name'],
      registers,
    }),
    liveWakeups: new Counter({
      name: 'blockfeed_live_wakeups_total',
      help: 'Long polls of a live subscription that ended with new data (each asks for a sync).',
      labelNames: ['namespace', 'name'],
      registers,
    }),
    livePollErrors: new Counter({
      name: 'blockfeed_live_poll_errors_total',
      help: 'Long polls of a live subscription that failed, by reason (as the feed failures of a pull).',
      labelNames: ['namespace', 'name', 'reason'],
      registers,
    }),
    appliedDataAge: new Histogram({
      name: 'blockfeed_applied_data_age_seconds',
      help: "Age of a new list's data when it was applied: from the feed's data changing (X-Blocklist-Data-Changed) to the end of the apply.",
      labelNames: ['namespace', 'name'],
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 300, 3600, 21_600, 86_400],
      registers,
    }),
    isLeader: new Gauge({ name: 'blockfeed_controller_leader', help: '1 while this process holds the leader lease.', registers }),
  };
}

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
    isLeader: new Gauge({ name: 'blockfeed_controller_leader', help: '1 while this process holds the leader lease.', registers }),
  };
}

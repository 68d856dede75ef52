// One Prometheus registry per program instance (not the prom-client global), so tests can run several
// servers in one process and each /metrics shows only its own.
import { Registry, collectDefaultMetrics } from 'prom-client';

// prom-client's default gauges with a _total suffix, which `promtool check metrics` rejects as
// counter-named gauges. The same counts stay visible through nodejs_active_* (without _total).
const NON_COUNTER_TOTALS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

export function createRegistry(labels: Record<string, string> = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels(labels);
  collectDefaultMetrics({ register: registry });
  for (const name of NON_COUNTER_TOTALS) registry.removeSingleMetric(name);
  return registry;
}

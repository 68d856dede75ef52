// One Prometheus registry per program instance (not the prom-client global), so tests can run several
// servers in one process and each /metrics shows only its own.
import { Registry, collectDefaultMetrics } from 'prom-client';

export function createRegistry(labels: Record<string, string> = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels(labels);
  collectDefaultMetrics({ register: registry });
  return registry;
}

// The Grafana dashboard: an optional ConfigMap for Grafana's sidecar, and a dashboard that shows every
// blockfeed metric the two programs export and reads no blockfeed metric they do not. (That its queries run
// against a live Prometheus is the e2e tier's part.)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createApiMetrics } from '../../api-server/http/api-metrics.ts';
import { createControllerMetrics } from '../../controller/metrics.ts';
import { CHART, renderChart } from '../support/helm.ts';
import { dashboardQueries, metricNames, substituteVariables, type Dashboard } from '../support/promql.ts';

const FILE = path.join(CHART, 'dashboards/blockfeed.json');
interface PanelJson {
  id: number;
  type: string;
  targets?: { expr?: string; datasource?: { uid: string } }[];
}
const dashboard = JSON.parse(readFileSync(FILE, 'utf8')) as { panels: PanelJson[]; templating?: Dashboard['templating'] };

/** Every series name a program exports (histograms as _bucket, _count and _sum). */
async function exportedNames(registry: Registry): Promise<string[]> {
  return (await registry.getMetricsAsJSON()).flatMap((m) => (String(m.type) === 'histogram' ? ['_bucket', '_count', '_sum'].map((s) => m.name + s) : [m.name]));
}

describe('the Grafana dashboard ConfigMap', () => {
  it('is off by default', async () => {
    expect((await renderChart()).filter((o) => o.kind === 'ConfigMap')).toEqual([]);
  });

  it('carries the dashboard file with the grafana_dashboard label when enabled', async () => {
    const objs = await renderChart({ metrics: { grafanaDashboard: { enabled: true, labels: { team: 'sre' }, annotations: { grafana_folder: 'blockfeed' } } } }, { namespace: 'apps' });
    const cm = objs.find((o) => o.kind === 'ConfigMap') as { metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> }; data: Record<string, string> } | undefined;
    expect(cm?.metadata).toMatchObject({ name: 'blockfeed-dashboard', namespace: 'apps', labels: { grafana_dashboard: '1', team: 'sre' }, annotations: { grafana_folder: 'blockfeed' } });
    expect(JSON.parse(cm?.data['blockfeed.json'] ?? '')).toEqual(dashboard);
  });

  it("goes to Grafana's namespace when asked", async () => {
    const objs = await renderChart({ metrics: { grafanaDashboard: { enabled: true, namespace: 'monitoring' } } });
    expect(objs.find((o) => o.kind === 'ConfigMap')?.metadata.namespace).toBe('monitoring');
  });
});

describe('the dashboard', () => {
  const queries = dashboardQueries(dashboard);
  const read = new Set(queries.flatMap((q) => metricNames(substituteVariables(q.expr, { namespace: '.*', subscription: '.*', __rate_interval: '1m' }))));

  it('has unique panel ids and a data source variable on every target', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dashboard.panels.filter((x) => x.type !== 'row')) {
      expect(p.targets?.length, `panel ${p.id}`).toBeGreaterThan(0);
      for (const t of p.targets ?? []) expect(t.datasource?.uid).toBe('${datasource}');
    }
  });

  it('shows every blockfeed metric of both programs and reads no blockfeed metric they lack', async () => {
    const registry = new Registry();
    createApiMetrics(registry);
    const exported = [...(await exportedNames(registry)), ...(await exportedNames(createControllerMetrics().registry))].filter((n) => n.startsWith('blockfeed_'));
    const readBlockfeed = [...read].filter((n) => n.startsWith('blockfeed_'));
    expect(readBlockfeed.filter((n) => !exported.includes(n))).toEqual([]);
    const family = (n: string) => n.replace(/_(bucket|count|sum)$/, '');
    const shown = new Set(readBlockfeed.map(family));
    expect([...new Set(exported.map(family))].filter((n) => !shown.has(n))).toEqual([]);
  });
});

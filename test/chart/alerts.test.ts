// The PrometheusRule's alerts, checked and unit-tested by promtool (Debian's prometheus package) on the
// rules exactly as the chart renders them.
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { renderChart } from '../support/helm.ts';

function promtool(args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile('promtool', args, { cwd }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') reject(new Error(`cannot run promtool (Debian package prometheus, see .ci/system-deps): ${err.message}`));
      else resolve({ code: err ? Number(err.code) : 0, output: stdout + stderr });
    });
  });
}

const FIXTURE = path.join(import.meta.dirname, '../fixtures/chart/alerts.promtool.yaml');

describe('PrometheusRule alerts', () => {
  let dir: string;
  let spec: { groups: { name: string; rules: { alert: string; expr: string }[] }[] };

  beforeAll(async () => {
    const objects = await renderChart({ metrics: { prometheusRule: { enabled: true } } });
    const rule = objects.find((o) => o.kind === 'PrometheusRule');
    if (!rule) throw new Error('no PrometheusRule rendered');
    spec = rule.spec as typeof spec;
    dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-alerts-'));
    await writeFile(path.join(dir, 'blockfeed-rules.yaml'), stringify(spec));
    await copyFile(FIXTURE, path.join(dir, 'alerts.promtool.yaml'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('has the three alerts: pulls failing, list stale, subscription degraded', () => {
    const alerts = spec.groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts).toEqual(['BlockfeedPullsFailing', 'BlockfeedListStale', 'BlockfeedSubscriptionDegraded']);
  });

  it('passes promtool check rules', async () => {
    const r = await promtool(['check', 'rules', 'blockfeed-rules.yaml'], dir);
    expect(r.output).toContain('SUCCESS: 3 rules found');
    expect(r.code).toBe(0);
  });

  it('fires (and stays quiet) as promtool test rules expects', async () => {
    const r = await promtool(['test', 'rules', 'alerts.promtool.yaml'], dir);
    expect(r.output).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  it('promtool test rules notices a wrong threshold', async () => {
    // The same tests against rules rendered with a 30-hour staleness threshold must fail: the tests bite.
    const objects = await renderChart({ metrics: { prometheusRule: { enabled: true, listStale: { afterSeconds: 108000 } } } });
    const rule = objects.find((o) => o.kind === 'PrometheusRule');
    await writeFile(path.join(dir, 'blockfeed-rules.yaml'), stringify(rule?.spec));
    const r = await promtool(['test', 'rules', 'alerts.promtool.yaml'], dir);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('BlockfeedListStale');
  });
});

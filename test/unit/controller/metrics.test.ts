// The controller's metrics exposition passes `promtool check metrics` (Debian's prometheus package).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createControllerMetrics } from '../../../controller/metrics.ts';

describe('controller metrics', () => {
  it('are clean under promtool check metrics', async () => {
    const m = createControllerMetrics();
    const labels = { namespace: 'team-a', name: 'attackers' };
    m.pullTotal.inc({ ...labels, result: 'changed' });
    m.pullDuration.observe(labels, 0.4);
    m.listEntries.set(labels, 1200);
    m.targetCidrs.set({ ...labels, kind: 'NetworkPolicy' }, 900);
    m.lastSuccess.set(labels, 1_790_000_000);
    m.droppedEntries.inc({ ...labels, reason: 'never_block' }, 3);
    m.targetApply.inc({ ...labels, kind: 'ConfigMap', result: 'written' });
    m.degraded.set(labels, 1);
    m.driftRepairs.inc({ ...labels, kind: 'NetworkPolicy' });
    const text = await m.registry.metrics();
    for (const name of [
      'blockfeed_pull_total',
      'blockfeed_pull_duration_seconds',
      'blockfeed_list_entries',
      'blockfeed_target_cidrs',
      'blockfeed_last_success_timestamp_seconds',
      'blockfeed_dropped_entries_total',
      'blockfeed_target_apply_total',
      'blockfeed_subscription_degraded',
      'blockfeed_drift_repairs_total',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.error).toBeUndefined();
    expect(`${check.stdout}${check.stderr}`).toBe('');
    expect(check.status).toBe(0);
  });
});

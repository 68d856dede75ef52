import { describe, expect, it } from 'vitest';
import { defaultSchedule, nextSyncTime, parseDuration } from '../../../controller/schedule.ts';
import type { BlocklistSubscription } from '../../../api/v1alpha1/blocklist-subscription.ts';

const sub = (spec: Partial<BlocklistSubscription['spec']>, uid = 'u1') =>
  ({ metadata: { name: 'a', namespace: 'n', uid }, spec: spec as BlocklistSubscription['spec'] }) as BlocklistSubscription;

describe('schedule', () => {
  it('parses Go durations', () => {
    expect(parseDuration('6h')).toBe(21600);
    expect(parseDuration('1h30m')).toBe(5400);
    expect(parseDuration('5m')).toBe(300);
    expect(parseDuration('x')).toBeUndefined();
  });

  it('defaults to a fixed minute between 03:00 and 04:59 UTC, differing per subscription', () => {
    const minutes = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const expr = defaultSchedule(sub({}, `uid-${i}`));
      const [m, h] = expr.split(' ').map(Number);
      expect(h === 3 || h === 4).toBe(true);
      expect(m).toBeGreaterThanOrEqual(0);
      minutes.add(expr);
    }
    expect(minutes.size).toBeGreaterThan(20);
    expect(defaultSchedule(sub({}, 'same'))).toBe(defaultSchedule(sub({}, 'same')));
  });

  it('follows cron and intervals', () => {
    const from = new Date('2026-11-22T05:00:00Z');
    expect(nextSyncTime(sub({ schedule: '0 4 * * *' }), from).toISOString()).toBe('2026-11-23T04:00:00.000Z');
    expect(nextSyncTime(sub({ interval: '6h' }), from, new Date('2026-11-22T01:00:00Z')).toISOString()).toBe('2026-11-22T07:00:00.000Z');
    expect(nextSyncTime(sub({ interval: '6h' }), from, new Date('2026-11-21T01:00:00Z')).toISOString()).toBe(from.toISOString());
    expect(() => nextSyncTime(sub({ interval: '1m' }), from)).toThrow(/at least 5m/);
  });
});

// The status-write rule of an unchanged sync: written when anything but the sync times
// changed, when someone asked for the sync, or when the recorded times are an hour old; otherwise not.
import { describe, expect, it } from 'vitest';
import type { BlocklistSubscriptionStatus } from '../../../api/v1alpha1/blocklist-subscription.ts';
import { STATUS_REFRESH_MS, statusWriteNeeded } from '../../../controller/reconcile.ts';

const at = (ms: number) => new Date(Date.UTC(2026, 10, 1) + ms).toISOString();

const before: BlocklistSubscriptionStatus = {
  observedGeneration: 3,
  entries: 12,
  cidrs: 10,
  lastSyncTime: at(0),
  lastSuccessfulSyncTime: at(0),
  nextSyncTime: at(300_000),
  conditions: [{ type: 'Ready', status: 'True', reason: 'ListApplied', message: '10 CIDRs', lastTransitionTime: at(-1000), observedGeneration: 3 }],
};

describe('statusWriteNeeded', () => {
  const now = new Date(Date.parse(at(300_000)));
  const after = { ...before, lastSyncTime: now.toISOString(), lastSuccessfulSyncTime: now.toISOString(), nextSyncTime: at(600_000) };

  it('skips a status in which only the sync times moved', () => {
    expect(statusWriteNeeded(before, after, now, false)).toBe(false);
  });

  it('writes any other change at once', () => {
    expect(statusWriteNeeded(before, { ...after, entries: 13 }, now, false)).toBe(true);
    expect(statusWriteNeeded(before, { ...after, conditions: [{ ...before.conditions![0]!, status: 'False' }] }, now, false)).toBe(true);
    expect(statusWriteNeeded(undefined, after, now, false)).toBe(true);
  });

  it('writes a sync someone asked for (reconcile.fluxcd.io/requestedAt)', () => {
    expect(statusWriteNeeded(before, after, now, true)).toBe(true);
  });

  it('refreshes the sync times once they are STATUS_REFRESH_MS old', () => {
    const later = new Date(Date.parse(at(0)) + STATUS_REFRESH_MS);
    expect(statusWriteNeeded(before, { ...after, lastSyncTime: later.toISOString() }, later, false)).toBe(true);
    expect(statusWriteNeeded(before, after, new Date(later.getTime() - 1), false)).toBe(false);
  });
});

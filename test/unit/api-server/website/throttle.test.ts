// The device cookie's value: which account it names, and for how long it lets its browser past the
// account's sign-in ceiling.
import { describe, expect, it } from 'vitest';
import { DEVICE_DAYS, deviceOf, newDeviceValue } from '../../../../api-server/website/throttle.ts';

describe('device cookies', () => {
  const issued = new Date('2026-03-01T12:00:00Z');

  it('name the account they signed in to, and count for a while', () => {
    const value = newDeviceValue('owner@example.org', issued);
    const device = deviceOf(value, 'owner@example.org', issued);
    expect(device).toMatch(/^[\w-]{22}$/);
    expect(value).not.toContain('owner');
    expect(newDeviceValue('owner@example.org', issued)).not.toBe(value);
    expect(deviceOf(value, 'other@example.org', issued)).toBeUndefined();
    expect(deviceOf(value, 'owner@example.org', new Date(issued.getTime() + (DEVICE_DAYS * 86_400 - 1) * 1000))).toBe(device);
    expect(deviceOf(value, 'owner@example.org', new Date(issued.getTime() + DEVICE_DAYS * 86_400_000))).toBeUndefined();
  });

  it('are nothing when malformed', () => {
    for (const bad of [undefined, null, '', 'x', `${newDeviceValue('owner@example.org', issued)}.extra`, 'a.b.c']) expect(deviceOf(bad, 'owner@example.org', issued)).toBeUndefined();
  });
});

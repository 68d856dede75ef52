import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../../../controller/runtime/queue.ts';

describe('WorkQueue', () => {
  it('never runs one key twice at once, and reruns a key enqueued while it ran', async () => {
    const active = new Set<string>();
    const runs: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const q = new WorkQueue({
      concurrency: 4,
      work: async (key) => {
        expect(active.has(key)).toBe(false);
        active.add(key);
        runs.push(key);
        if (runs.length === 1) await gate;
        active.delete(key);
        return true;
      },
    });
    q.add('a');
    q.add('a');
    q.add('b');
    await new Promise((r) => setImmediate(r));
    q.add('a');
    release();
    await q.idle();
    expect(runs.sort()).toEqual(['a', 'a', 'b']);
  });

  it('limits concurrency', async () => {
    let now = 0;
    let max = 0;
    const q = new WorkQueue({
      concurrency: 2,
      work: async () => {
        now++;
        max = Math.max(max, now);
        await new Promise((r) => setImmediate(r));
        now--;
        return true;
      },
    });
    for (let i = 0; i < 10; i++) q.add(`k${i}`);
    await q.idle();
    expect(max).toBe(2);
  });

  it('retries failures with growing, capped, jittered back-off', async () => {
    const q = new WorkQueue({ concurrency: 1, backoffBaseMs: 1000, backoffMaxMs: 8000, random: () => 1, work: async () => true });
    expect([1, 2, 3, 4, 5, 6].map((n) => q.backoffMs(n))).toEqual([1000, 2000, 4000, 8000, 8000, 8000]);
    const low = new WorkQueue({ concurrency: 1, backoffBaseMs: 1000, random: () => 0, work: async () => true });
    expect(low.backoffMs(3)).toBe(2000);

    let attempts = 0;
    const retrying = new WorkQueue({
      concurrency: 1,
      backoffBaseMs: 5,
      work: async () => {
        attempts++;
        if (attempts < 3) throw new Error('transient');
        return true;
      },
    });
    retrying.add('x');
    await expect.poll(() => attempts, { timeout: 2000 }).toBe(3);
    retrying.stop();
  });
});

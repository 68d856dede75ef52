// A work queue that runs at most one job per key at a time (a key enqueued while running runs once more
// afterwards), at most `concurrency` jobs overall, and retries failures with capped exponential back-off and
// full jitter. Timers it sets are its own, so stop() leaves nothing behind.
interface QueueOptions {
  concurrency: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** returns true when the job succeeded; false or a throw retries with back-off */
  work: (key: string) => Promise<boolean>;
  onError?: (key: string, err: unknown) => void;
  random?: () => number;
}

export class WorkQueue {
  private readonly ready: string[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Set<string>();
  private readonly again = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly idleWaiters: (() => void)[] = [];
  private stopped = false;
  private readonly options: Required<Omit<QueueOptions, 'onError'>> & Pick<QueueOptions, 'onError'>;

  constructor(options: QueueOptions) {
    this.options = { backoffBaseMs: 1000, backoffMaxMs: 300_000, random: Math.random, ...options };
  }

  /** Runs the key as soon as possible (cancelling a pending delayed run). */
  add(key: string): void {
    if (this.stopped) return;
    this.cancelTimer(key);
    if (this.running.has(key)) {
      this.again.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.ready.push(key);
    this.pump();
  }

  /** Runs the key after a delay, unless it runs earlier for another reason. */
  addAfter(key: string, delayMs: number): void {
    if (this.stopped) return;
    this.cancelTimer(key);
    // setTimeout holds at most ~24.8 days; re-arm for longer delays.
    const step = Math.min(delayMs, 2 ** 31 - 1);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      if (step < delayMs) this.addAfter(key, delayMs - step);
      else this.add(key);
    }, Math.max(0, step));
    timer.unref();
    this.timers.set(key, timer);
  }

  /** Drops the key's pending runs and back-off state (the object is gone). */
  forget(key: string): void {
    this.cancelTimer(key);
    this.failures.delete(key);
    this.again.delete(key);
    if (this.queued.delete(key)) this.ready.splice(this.ready.indexOf(key), 1);
  }

  backoffMs(failures: number): number {
    const { backoffBaseMs, backoffMaxMs, random } = this.options;
    const cap = Math.min(backoffMaxMs, backoffBaseMs * 2 ** Math.min(failures - 1, 30));
    return Math.round(cap / 2 + (random() * cap) / 2);
  }

  get pending(): number {
    return this.ready.length + this.running.size;
  }

  /** Resolves when nothing is queued or running (delayed runs do not count). */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.ready.length = 0;
    this.queued.clear();
  }

  private cancelTimer(key: string): void {
    const t = this.timers.get(key);
    if (t) clearTimeout(t);
    this.timers.delete(key);
  }

  private pump(): void {
    while (!this.stopped && this.running.size < this.options.concurrency && this.ready.length) {
      const key = this.ready.shift()!;
      this.queued.delete(key);
      this.running.add(key);
      void this.run(key);
    }
    if (this.pending === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  private async run(key: string): Promise<void> {
    let ok = false;
    try {
      ok = await this.options.work(key);
    } catch (err) {
      this.options.onError?.(key, err);
    }
    this.running.delete(key);
    if (ok) {
      this.failures.delete(key);
    } else if (!this.stopped) {
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      if (!this.again.has(key)) this.addAfter(key, this.backoffMs(n));
    }
    if (this.again.delete(key)) this.add(key);
    this.pump();
  }
}

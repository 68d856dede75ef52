// Live blocking (docs/controller.md "Live blocking"): for every subscription with spec.feed.live.enabled, not
// suspended and not being deleted, one long poll held open on its feed (feed.ts waitForChange: a conditional
// HEAD with `wait=`, answered when the feed's data changes). A poll that ends with new data asks for a sync; the
// sync is the usual one (pull, sanitise, judge, apply; fail-static). Polls of one subscription start at most once
// per spec.feed.live.minIntervalSeconds; a failing one backs off (Retry-After when the feed gives one). The
// watches stop with the subscription's suspension or deletion, and all of them with the controller (leadership
// lost). Each watch's state is the subscription's Live condition and the blockfeed_live_* metrics.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../common/logging.ts';
import { LIVE_DEFAULTS, type BlocklistSubscription } from '../api/v1alpha1/blocklist-subscription.ts';
import { FEED_FAILURE_REASONS, FeedError, waitForChange } from './feed.ts';
import type { ControllerMetrics } from './metrics.ts';

/** How long the feed may hold a poll: under the 60 s idle timeout common proxies and load balancers apply. */
export const LIVE_WAIT_SECONDS = 50;

/** Every reason of blockfeed_live_poll_errors_total. */
const POLL_ERROR_REASONS = [...Object.values(FEED_FAILURE_REASONS), 'LiveWatchFailed'];

/** A poll the feed has held this long without an answer or an error is open: the watch is Watching. */
const HELD_AFTER_MS = 1000;

/** Polls answered 304 well before their wait ended, in a row, after which the feed is taken not to hold them. */
const EARLY_ANSWERS_TOLERATED = 3;

export type LiveState =
  | { kind: 'connecting' }
  | { kind: 'watching' }
  | { kind: 'failing'; reason: string; message: string };

/** Whether a subscription keeps a long poll open. Pure. */
export function wantsLive(sub: BlocklistSubscription): boolean {
  return (sub.spec.feed.live?.enabled ?? LIVE_DEFAULTS.enabled) && !sub.spec.suspend && !sub.metadata.deletionTimestamp;
}

/** The Live condition of a subscription in a state; undefined when it has none (not live). Pure. */
export function liveCondition(sub: BlocklistSubscription, state: LiveState | undefined): { status: 'True' | 'False' | 'Unknown'; reason: string; message: string } | undefined {
  if (!(sub.spec.feed.live?.enabled ?? LIVE_DEFAULTS.enabled)) return undefined;
  if (sub.spec.suspend) return { status: 'False', reason: 'Suspended', message: 'spec.suspend is true: no long poll on the feed' };
  const feed = new URL(sub.spec.feed.url).origin;
  if (!state || state.kind === 'connecting') return { status: 'Unknown', reason: 'Connecting', message: `opening a long poll on ${feed}` };
  if (state.kind === 'watching') return { status: 'True', reason: 'Watching', message: `a long poll is open on ${feed}: new data is pulled as soon as it is written` };
  return { status: 'False', reason: state.reason, message: `${state.message}; syncs follow the schedule until the long poll is back` };
}

/** What restarts a watch when it changes: where and how it polls. */
function watchIdentity(sub: BlocklistSubscription): string {
  const { url, endpoint, filters, credentials, timeoutSeconds, live } = sub.spec.feed;
  return JSON.stringify([url, endpoint, filters ?? {}, credentials ?? null, timeoutSeconds ?? null, live?.minIntervalSeconds ?? LIVE_DEFAULTS.minIntervalSeconds]);
}

interface LiveWatchOptions {
  log: Logger;
  metrics: ControllerMetrics;
  /** The API key of a subscription's feed (its Secret): read when a watch starts and after each failure. */
  apiKey(sub: BlocklistSubscription): Promise<string | undefined>;
  /** The feed has new data: sync the subscription. */
  changed(key: string): void;
  /** A watch's state changed: its Live condition is to be written. */
  stateChanged(key: string): void;
  /** Watches held at once at most; beyond, a subscription's Live condition says so. */
  maxWatches: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  waitSeconds?: number;
}

interface Watch {
  identity: string;
  /** The subscription as last seen (its spec and status). */
  sub: BlocklistSubscription;
  stop: AbortController;
  state: LiveState;
}

export class LiveWatches {
  readonly #o: Required<LiveWatchOptions>;
  readonly #watches = new Map<string, Watch>();
  /** Live subscriptions beyond maxWatches: no watch, a state that says why. */
  readonly #refused = new Map<string, LiveState>();
  #stopped = false;

  constructor(options: LiveWatchOptions) {
    this.#o = { backoffBaseMs: 1000, backoffMaxMs: 300_000, waitSeconds: LIVE_WAIT_SECONDS, ...options };
  }

  /** Starts, restarts or stops the watch of a subscription as its spec says (the informer saw it). */
  update(key: string, sub: BlocklistSubscription): void {
    if (this.#stopped) return;
    const watch = this.#watches.get(key);
    if (!wantsLive(sub)) {
      if (watch || this.#refused.has(key)) this.forget(key, sub);
      return;
    }
    const identity = watchIdentity(sub);
    if (watch && watch.identity === identity) {
      watch.sub = sub;
      return;
    }
    if (watch) this.#end(key, watch);
    if (this.#watches.size >= this.#o.maxWatches) {
      this.#refuse(key, sub);
      return;
    }
    this.#refused.delete(key);
    const started: Watch = { identity, sub, stop: new AbortController(), state: { kind: 'connecting' } };
    this.#watches.set(key, started);
    void this.#run(key, started);
  }

  /**
   * Stops the watch of a subscription (suspended, no longer live, being deleted) and drops its gauge; `deleted`
   * (the subscription is gone): its counters too.
   */
  forget(key: string, sub: Pick<BlocklistSubscription, 'metadata'>, { deleted = false } = {}): void {
    const watch = this.#watches.get(key);
    if (watch) this.#end(key, watch);
    const refused = this.#refused.delete(key);
    const { metrics } = this.#o;
    const series = { namespace: sub.metadata.namespace, name: sub.metadata.name };
    metrics.liveConnected.remove(series);
    if (deleted) {
      metrics.liveWakeups.remove(series);
      for (const reason of POLL_ERROR_REASONS) metrics.livePollErrors.remove({ ...series, reason });
      return;
    }
    if (watch || refused) this.#o.stateChanged(key);
  }

  /** The state of a subscription's watch; undefined when it has none. */
  state(key: string): LiveState | undefined {
    return this.#watches.get(key)?.state ?? this.#refused.get(key);
  }

  /** Watches open now. */
  get size(): number {
    return this.#watches.size;
  }

  /** Stops every watch; none starts again (the controller stops, or lost its leadership). */
  stop(): void {
    this.#stopped = true;
    for (const [key, watch] of this.#watches) this.#end(key, watch);
    this.#refused.clear();
  }

  #end(key: string, watch: Watch): void {
    watch.stop.abort();
    this.#watches.delete(key);
  }

  #refuse(key: string, sub: BlocklistSubscription): void {
    const state: LiveState = {
      kind: 'failing',
      reason: 'TooManyLiveWatches',
      message: `this controller holds ${this.#o.maxWatches} long polls, the most it may (--max-live-watches)`,
    };
    this.#refused.set(key, state);
    this.#o.metrics.liveConnected.set({ namespace: sub.metadata.namespace, name: sub.metadata.name }, 0);
    this.#o.stateChanged(key);
  }

  #setState(key: string, watch: Watch, state: LiveState): void {
    const series = { namespace: watch.sub.metadata.namespace, name: watch.sub.metadata.name };
    this.#o.metrics.liveConnected.set(series, state.kind === 'watching' ? 1 : 0);
    const before = watch.state;
    watch.state = state;
    if (before.kind !== state.kind || (before.kind === 'failing' && state.kind === 'failing' && (before.reason !== state.reason || before.message !== state.message))) {
      this.#o.stateChanged(key);
    }
  }

  #backoffMs(failures: number): number {
    const cap = Math.min(this.#o.backoffMaxMs, this.#o.backoffBaseMs * 2 ** Math.min(failures - 1, 30));
    return Math.round(cap / 2 + (Math.random() * cap) / 2);
  }

  /** One watch: poll, and again, until it is stopped. */
  async #run(key: string, watch: Watch): Promise<void> {
    const { log, metrics } = this.#o;
    const signal = watch.stop.signal;
    const labels = { namespace: watch.sub.metadata.namespace, name: watch.sub.metadata.name };
    metrics.liveConnected.set(labels, 0);
    // Every series from the start, at 0: rate() and alerts see the first wakeup or error, not a new series.
    metrics.liveWakeups.inc(labels, 0);
    for (const reason of POLL_ERROR_REASONS) metrics.livePollErrors.inc({ ...labels, reason }, 0);
    // The list applied last: the feed answers once its data is newer. Without one, the first answer only
    // tells the ETag to hold (the first sync is under way anyway).
    let etag = watch.sub.status?.feedETag;
    let apiKey: string | undefined;
    let keyRead = false;
    let failures = 0;
    let early = 0;
    let lastStart = 0;
    const intervalMs = (watch.sub.spec.feed.live?.minIntervalSeconds ?? LIVE_DEFAULTS.minIntervalSeconds) * 1000;
    try {
      while (!signal.aborted) {
        const gap = lastStart + intervalMs - Date.now();
        if (gap > 0) await sleep(gap, undefined, { signal });
        lastStart = Date.now();
        let delayMs = 0;
        try {
          if (!keyRead) {
            apiKey = await this.#o.apiKey(watch.sub);
            keyRead = true;
          }
          const held = setTimeout(() => this.#setState(key, watch, { kind: 'watching' }), HELD_AFTER_MS);
          const answer = await waitForChange({ feed: watch.sub.spec.feed, apiKey, etag, waitSeconds: this.#o.waitSeconds, signal }).finally(() => clearTimeout(held));
          if (signal.aborted) break;
          failures = 0;
          const before = etag;
          etag = answer.etag ?? etag;
          if (answer.changed) {
            early = 0;
            this.#setState(key, watch, { kind: 'watching' });
            if (before !== undefined) {
              metrics.liveWakeups.inc(labels);
              log.debug({ subscription: key, etag }, 'live: the feed has new data');
              this.#o.changed(key);
            }
          } else if (Date.now() - lastStart < (this.#o.waitSeconds * 1000) / 2) {
            // A 304 long before the wait ended: a server closing, or a feed that does not hold long polls.
            early++;
            if (early >= EARLY_ANSWERS_TOLERATED) {
              this.#setState(key, watch, { kind: 'failing', reason: 'LiveNotSupported', message: `the feed answers long polls (wait=) at once, ${early} times in a row: it does not hold them` });
              delayMs = this.#backoffMs(early - EARLY_ANSWERS_TOLERATED + 1);
            }
          } else {
            early = 0;
            this.#setState(key, watch, { kind: 'watching' });
          }
        } catch (err) {
          if (signal.aborted) break;
          failures++;
          keyRead = false; // a rotated key is read again
          const reason = err instanceof FeedError ? FEED_FAILURE_REASONS[err.reason] : 'LiveWatchFailed';
          metrics.livePollErrors.inc({ ...labels, reason });
          this.#setState(key, watch, { kind: 'failing', reason, message: `the long poll failed: ${(err as Error).message}` });
          const retryAfterMs = err instanceof FeedError && err.retryAfterSeconds ? err.retryAfterSeconds * 1000 : 0;
          delayMs = Math.max(retryAfterMs, this.#backoffMs(failures));
          log.debug({ subscription: key, reason, retryInMs: delayMs, err: { message: (err as Error).message } }, 'live: the long poll failed');
        }
        if (delayMs > 0) await sleep(delayMs, undefined, { signal });
      }
    } catch (err) {
      if (!signal.aborted) log.error({ err, subscription: key }, 'live: the watch stopped');
    }
  }
}

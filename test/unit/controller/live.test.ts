// Live blocking, the controller's side: which subscriptions keep a long poll open, the Live condition of each
// state, Flux's requestedAt read as Flux reads it, and the long poll itself (waitForChange, LiveWatches) against
// a feed on a loopback socket that holds requests as a blockfeed api-server does.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BlocklistSubscription } from '../../../api/v1alpha1/blocklist-subscription.ts';
import { createLogger } from '../../../common/logging.ts';
import { FeedError, waitForChange } from '../../../controller/feed.ts';
import { LiveWatches, liveCondition, wantsLive, type LiveState } from '../../../controller/live.ts';
import { createControllerMetrics } from '../../../controller/metrics.ts';
import { pendingRequest, sameLiveCondition } from '../../../controller/reconcile.ts';

function subscription(feed: Partial<BlocklistSubscription['spec']['feed']> = {}, extra: Partial<BlocklistSubscription['spec']> = {}, status?: BlocklistSubscription['status']): BlocklistSubscription {
  return {
    apiVersion: 'blockfeed.dev/v1alpha1',
    kind: 'BlocklistSubscription',
    metadata: { name: 'live', namespace: 'team-a', uid: 'u-1', generation: 1 },
    spec: {
      feed: { url: 'http://feed.example:8080', endpoint: 'dedup', live: { enabled: true, minIntervalSeconds: 1 }, ...feed },
      safety: { maxEntries: 100, minPrefixV4: 16, minPrefixV6: 32, maxShrinkPercent: 50 },
      targets: [{ configMap: { name: 'x', formats: ['txt'] } }],
      ...extra,
    },
    status,
  };
}

describe('which subscriptions are live', () => {
  it('those with feed.live.enabled, neither suspended nor being deleted', () => {
    expect(wantsLive(subscription())).toBe(true);
    expect(wantsLive(subscription({ live: undefined }))).toBe(false);
    expect(wantsLive(subscription({ live: { enabled: false, minIntervalSeconds: 5 } }))).toBe(false);
    expect(wantsLive(subscription({}, { suspend: true }))).toBe(false);
    expect(wantsLive({ ...subscription(), metadata: { ...subscription().metadata, deletionTimestamp: new Date() } })).toBe(false);
  });

  it('carry a Live condition that says what their long poll does', () => {
    expect(liveCondition(subscription({ live: undefined }), undefined)).toBeUndefined();
    expect(liveCondition(subscription({}, { suspend: true }), undefined)).toMatchObject({ status: 'False', reason: 'Suspended' });
    expect(liveCondition(subscription(), undefined)).toMatchObject({ status: 'Unknown', reason: 'Connecting' });
    expect(liveCondition(subscription(), { kind: 'watching' })).toMatchObject({ status: 'True', reason: 'Watching', message: expect.stringContaining('http://feed.example:8080') as string });
    const failing: LiveState = { kind: 'failing', reason: 'FeedHttpError', message: 'the long poll failed: feed answered HTTP 429' };
    expect(liveCondition(subscription(), failing)).toMatchObject({ status: 'False', reason: 'FeedHttpError', message: expect.stringContaining('HTTP 429') as string });
  });

  it('compare Live conditions by status, reason and message', () => {
    const held = { type: 'Live', status: 'True' as const, reason: 'Watching', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z' };
    expect(sameLiveCondition(held, { status: 'True', reason: 'Watching', message: 'm' })).toBe(true);
    expect(sameLiveCondition(held, { status: 'False', reason: 'Watching', message: 'm' })).toBe(false);
    expect(sameLiveCondition(held, undefined)).toBe(false);
    expect(sameLiveCondition(undefined, undefined)).toBe(true);
  });
});

describe('reconcile.fluxcd.io/requestedAt', () => {
  const asked = (value: string | undefined, handled?: string) => {
    const sub = subscription({}, {}, handled === undefined ? undefined : { lastHandledReconcileAt: handled });
    const annotations: Record<string, string> = value === undefined ? {} : { 'reconcile.fluxcd.io/requestedAt': value };
    return { ...sub, metadata: { ...sub.metadata, annotations } };
  };
  it('asks for a sync with any value not handled yet, and the handled value no more', () => {
    expect(pendingRequest(asked('1767225600'))).toBe('1767225600');
    expect(pendingRequest(asked('1767225600', '1767225000'))).toBe('1767225600');
    expect(pendingRequest(asked('1767225600', '1767225600'))).toBeUndefined();
    expect(pendingRequest(asked(undefined, '1767225600'))).toBeUndefined();
  });
});

/** A feed that holds long polls as the api-server does: until `publish()` or the wait's end. */
class HoldingFeed {
  version = 1;
  /** How it answers: hold (a blockfeed api-server), at once (a feed without long polls), or fail. */
  mode: 'hold' | 'at-once' | 'fail' = 'hold';
  requests: IncomingMessage[] = [];
  #held: { res: ServerResponse; timer: NodeJS.Timeout }[] = [];
  #server!: Server;
  url = '';

  etag(): string {
    return `"${this.version}.v"`;
  }

  async start(): Promise<void> {
    this.#server = createServer((req, res) => this.#handle(req, res));
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((r) => this.#server.close(r));
  }

  /** New data: every held request is answered. */
  publish(): void {
    this.version++;
    for (const { res, timer } of this.#held.splice(0)) {
      clearTimeout(timer);
      res.writeHead(200, { etag: this.etag(), 'content-type': 'text/plain' }).end();
    }
  }

  get holding(): number {
    return this.#held.length;
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    this.requests.push(req);
    if (this.mode === 'fail') {
      res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/problem+json' }).end('{}');
      return;
    }
    const wait = Number(new URL(req.url ?? '/', this.url).searchParams.get('wait') ?? 0);
    if (req.headers['if-none-match'] !== this.etag()) {
      res.writeHead(200, { etag: this.etag(), 'content-type': 'text/plain' }).end();
      return;
    }
    if (this.mode === 'at-once') {
      res.writeHead(304, { etag: this.etag() }).end();
      return;
    }
    const timer = setTimeout(() => {
      this.#held = this.#held.filter((h) => h.res !== res);
      res.writeHead(304, { etag: this.etag() }).end();
    }, wait * 1000);
    this.#held.push({ res, timer });
    // A client that goes away is no longer held.
    res.once('close', () => {
      clearTimeout(timer);
      this.#held = this.#held.filter((h) => h.res !== res);
    });
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 10))) if (check()) return;
  throw new Error(`timed out waiting for ${what}`);
}

describe('the long poll', { timeout: 30_000 }, () => {
  const feed = new HoldingFeed();
  beforeAll(() => feed.start());
  afterAll(() => feed.stop());
  beforeEach(() => {
    feed.mode = 'hold';
    feed.requests.length = 0;
  });

  it('is a HEAD with wait=, the key and the ETag held, answered with the new ETag when the data changes', async () => {
    const stop = new AbortController();
    const poll = waitForChange({ feed: { url: feed.url, endpoint: 'dedup' }, apiKey: 'k-1', etag: feed.etag(), waitSeconds: 30, signal: stop.signal });
    await until(() => feed.holding === 1, 'the poll held');
    const req = feed.requests[0]!;
    expect(req.method).toBe('HEAD');
    expect(req.url).toBe('/api/dedup?format=txt&wait=30');
    expect(req.headers['x-api-key']).toBe('k-1');
    expect(req.headers['if-none-match']).toBe(feed.etag());
    feed.publish();
    expect(await poll).toEqual({ changed: true, etag: feed.etag() });
  });

  it('answers unchanged at the end of the wait, and fails with the feed reason and its Retry-After', async () => {
    const signal = new AbortController().signal;
    expect(await waitForChange({ feed: { url: feed.url, endpoint: 'dedup' }, etag: feed.etag(), waitSeconds: 1, signal })).toEqual({ changed: false, etag: feed.etag() });
    feed.mode = 'fail';
    const failed = await waitForChange({ feed: { url: feed.url, endpoint: 'dedup' }, etag: feed.etag(), waitSeconds: 1, signal }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(FeedError);
    expect(failed).toMatchObject({ reason: 'HttpError', status: 429, retryAfterSeconds: 1 });
  });

  describe('LiveWatches', () => {
    const log = createLogger({ level: 'silent' });
    function watches(maxWatches = 10) {
      const changed: string[] = [];
      const states: string[] = [];
      const metrics = createControllerMetrics();
      const live = new LiveWatches({
        log,
        metrics,
        maxWatches,
        apiKey: () => Promise.resolve('k-1'),
        changed: (key) => changed.push(key),
        stateChanged: (key) => states.push(key),
        backoffBaseMs: 50,
        backoffMaxMs: 200,
        waitSeconds: 30,
      });
      return { live, changed, states, metrics };
    }
    const live = (etag?: string) => subscription({ url: feed.url }, {}, etag ? { feedETag: etag } : undefined);

    it('ask for a sync each time the feed has new data, and are Watching', async () => {
      const w = watches();
      w.live.update('team-a/live', live(feed.etag()));
      await until(() => feed.holding === 1, 'the first poll held');
      expect(w.changed).toEqual([]);
      feed.publish();
      await until(() => w.changed.length === 1, 'a sync asked for');
      await until(() => feed.holding === 1, 'the next poll held');
      expect(feed.requests.at(-1)?.headers['if-none-match']).toBe(feed.etag());
      expect(w.live.state('team-a/live')).toEqual({ kind: 'watching' });
      expect(await w.metrics.registry.getSingleMetricAsString('blockfeed_live_wakeups_total')).toContain('} 1');
      // Suspended: the poll stops and is not started again.
      w.live.update('team-a/live', subscription({ url: feed.url }, { suspend: true }));
      await until(() => feed.holding === 0, 'the held poll dropped');
      expect(w.live.state('team-a/live')).toBeUndefined();
      w.live.stop();
    });

    it('without an applied list, learn the ETag first and ask for nothing', async () => {
      const w = watches();
      w.live.update('team-a/live', live());
      await until(() => feed.holding === 1, 'the second poll held');
      expect(w.changed).toEqual([]);
      w.live.stop();
      await until(() => feed.holding === 0, 'stopped');
    });

    it('say why the feed fails, and that a feed which answers at once does not hold long polls', async () => {
      const w = watches();
      feed.mode = 'fail';
      w.live.update('team-a/live', live(feed.etag()));
      await until(() => w.live.state('team-a/live')?.kind === 'failing', 'failing');
      expect(w.live.state('team-a/live')).toMatchObject({ reason: 'FeedHttpError' });
      expect(await w.metrics.registry.getSingleMetricAsString('blockfeed_live_poll_errors_total')).toContain('reason="FeedHttpError"');
      feed.mode = 'at-once';
      await until(() => (w.live.state('team-a/live') as { reason?: string }).reason === 'LiveNotSupported', 'LiveNotSupported', 20_000);
      w.live.stop();
    });

    it('hold at most maxWatches, and say so on the others', async () => {
      const w = watches(1);
      w.live.update('team-a/live', live(feed.etag()));
      w.live.update('team-a/other', { ...live(feed.etag()), metadata: { ...live().metadata, name: 'other' } });
      expect(w.live.size).toBe(1);
      expect(w.live.state('team-a/other')).toMatchObject({ kind: 'failing', reason: 'TooManyLiveWatches' });
      w.live.stop();
    });
  });
});

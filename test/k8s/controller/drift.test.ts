// Drift and restarts against a real kube-apiserver: a managed NetworkPolicy deleted
// or emptied by hand, and a ConfigMap shard deleted, are put back within seconds without pulling the feed; a
// controller started again (a new instance: nothing in memory, as after kill -9; leader.test.ts kills a real
// process) checks every target against the list it recorded, repairs what changed while it was away, again
// without a pull, and exposes the subscription's metrics at once. An object deleted while pulls keep failing
// (the feed down) is put back all the same. An unchanged scheduled resync writes no status. Repair times are
// printed, not asserted.
import type { V1NetworkPolicy } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '../../../controller/runtime/k8s.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import { FeedServer, applySubscription, condition, events, getSubscription, startController, syncNow, type Harness } from '../../support/controller-harness.ts';

const feed = new FeedServer();
let h: Harness;
let home: string;
let guarded: string;

const LIST = ['203.0.113.7', '198.51.100.0/24', '2001:db8:5::/48', '45.33.32.156'];
const V4 = ['45.33.32.156/32', '198.51.100.0/24', '203.0.113.7/32'];

async function policy(): Promise<V1NetworkPolicy | undefined> {
  return (await h.net.listNamespacedNetworkPolicy({ namespace: guarded, labelSelector: 'app.kubernetes.io/managed-by=blockfeed-controller' })).items[0];
}

const except = (p: V1NetworkPolicy | undefined) => p?.spec?.ingress?.[0]?._from?.[0]?.ipBlock?.except;

/** Waits until `check` holds and prints how long the repair took. */
async function repaired<T>(what: string, started: number, check: () => Promise<T | undefined>): Promise<T> {
  const result = await eventually(check, 30_000, what);
  console.log(`[drift] ${what}: repaired in ${Date.now() - started} ms`);
  return result;
}

beforeAll(async () => {
  await feed.start();
  feed.lines = LIST;
  home = await freshNamespace('bls-drift');
  guarded = await freshNamespace('bls-drift-guarded');
  h = await startController(home);
  await h.core.patchNamespace({ name: guarded, body: { metadata: { labels: { 'blockfeed.dev/protect': home } } } }, mergePatch);
  await applySubscription(h, home, 'watched', {
    feed: { url: feed.url, endpoint: 'export' },
    interval: '5m',
    targets: [
      { networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': home } }, direction: 'Ingress' } },
      { configMap: { name: 'watched', formats: ['txt'] } },
    ],
  });
  await eventually(async () => (condition(await getSubscription(h, home, 'watched'), 'Ready')?.status === 'True' ? true : undefined), 60_000, 'Ready');
});

afterAll(async () => {
  await h?.stop();
  await feed.stop();
});

describe('drift', () => {
  it('puts back a deleted NetworkPolicy within seconds, without a pull, and the status stays true', async () => {
    const pulls = feed.requests.length;
    const before = await policy();
    expect(except(before)).toEqual(V4);
    const started = Date.now();
    await h.net.deleteNamespacedNetworkPolicy({ name: before!.metadata!.name!, namespace: guarded });
    const after = await repaired('deleted NetworkPolicy', started, async () => {
      const p = await policy();
      return p && p.metadata!.uid !== before!.metadata!.uid ? p : undefined;
    });
    expect(except(after)).toEqual(V4);
    expect(feed.requests.length).toBe(pulls);
    const sub = await getSubscription(h, home, 'watched');
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'False' });
    expect(sub.status!.targets!.find((t) => t.target === 'networkPolicy')).toMatchObject({ state: 'Applied', cidrs: 4 });
    expect((await events(h, home, 'watched')).some((e) => e.reason === 'DriftRepaired' && /NetworkPolicy .* deleted/.test(e.message ?? ''))).toBe(true);
    const repairs = (await h.metrics.driftRepairs.get()).values.find((v) => v.labels.name === 'watched' && v.labels.kind === 'NetworkPolicy');
    expect(repairs?.value).toBeGreaterThanOrEqual(1);
  });

  it('puts back an except list emptied by hand', async () => {
    const pulls = feed.requests.length;
    const current = (await policy())!;
    const started = Date.now();
    await h.net.replaceNamespacedNetworkPolicy({
      name: current.metadata!.name!,
      namespace: guarded,
      body: { ...current, spec: { ...current.spec, ingress: [{ _from: [{ ipBlock: { cidr: '0.0.0.0/0' } }, { ipBlock: { cidr: '::/0' } }] }] } },
    });
    const after = await repaired('emptied except list', started, async () => {
      const p = await policy();
      return except(p)?.length ? p : undefined;
    });
    expect(except(after)).toEqual(V4);
    expect(feed.requests.length).toBe(pulls);
  });

  it('takes back a policy whose labels were removed by hand', async () => {
    const current = (await policy())!;
    const started = Date.now();
    await h.net.patchNamespacedNetworkPolicy(
      { name: current.metadata!.name!, namespace: guarded, body: { metadata: { labels: { 'app.kubernetes.io/managed-by': null, 'blockfeed.dev/subscription': null } } } },
      mergePatch,
    );
    await repaired('labels removed', started, async () => ((await policy())?.metadata?.labels?.['blockfeed.dev/subscription'] ? true : undefined));
    expect(except(await policy())).toEqual(V4);
  });

  it('leaves alone an object of the same name that another subscription owns: Degraded, no write war', async () => {
    await applySubscription(h, home, 'rival', {
      feed: { url: feed.url, endpoint: 'export' },
      interval: '5m',
      targets: [{ configMap: { name: 'watched', formats: ['txt'] } }],
    });
    const rival = await eventually(async () => {
      const s = await getSubscription(h, home, 'rival');
      return s.status?.lastSyncTime ? s : undefined;
    }, 30_000, 'the rival to sync');
    expect(condition(rival, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetConflict' });
    expect(condition(rival, 'Degraded')!.message).toMatch(new RegExp(`ConfigMap ${home}/watched exists and belongs to BlocklistSubscription ${home}/watched`));
    const before = (await h.core.readNamespacedConfigMap({ name: 'watched', namespace: home })).metadata!.resourceVersion;
    await h.controller.idle();
    await new Promise((r) => setTimeout(r, 2000));
    expect((await h.core.readNamespacedConfigMap({ name: 'watched', namespace: home })).metadata!.resourceVersion).toBe(before);
    await h.custom.deleteNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: home, plural: 'blocklistsubscriptions', name: 'rival' });
  });

  it('puts back a deleted ConfigMap', async () => {
    const pulls = feed.requests.length;
    const started = Date.now();
    await h.core.deleteNamespacedConfigMap({ name: 'watched', namespace: home });
    const cm = await repaired('deleted ConfigMap', started, async () => (await h.core.readNamespacedConfigMap({ name: 'watched', namespace: home }).catch(() => undefined)) ?? undefined);
    expect(cm.data!['list.txt']).toBe([...V4, '2001:db8:5::/48'].map((c) => `${c}\n`).join(''));
    expect(feed.requests.length).toBe(pulls);
  });

  it('writes no status on an unchanged scheduled resync', async () => {
    const before = await getSubscription(h, home, 'watched');
    const unchanged = async () => (await h.metrics.pullTotal.get()).values.find((v) => v.labels.name === 'watched' && v.labels.result === 'unchanged')?.value ?? 0;
    const pulledBefore = await unchanged();
    const statusWrites = h.apis.writes.byKind.get('BlocklistSubscriptionStatus') ?? 0;
    const syncs = h.controller.syncs;
    h.controller.resyncAll();
    await eventually(async () => (h.controller.syncs > syncs ? true : undefined), 30_000, 'the resync');
    await h.controller.idle();
    expect(await unchanged()).toBe(pulledBefore + 1); // it did pull (a 304)
    expect(h.apis.writes.byKind.get('BlocklistSubscriptionStatus') ?? 0).toBe(statusWrites);
    expect((await getSubscription(h, home, 'watched')).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('after a restart, repairs what changed while it was away without a pull, and exposes metrics at once', async () => {
    await h.stop();
    const pulls = feed.requests.length;
    // While no controller runs: the policy is deleted and the list file emptied.
    const gone = (await policy())!;
    await h.net.deleteNamespacedNetworkPolicy({ name: gone.metadata!.name!, namespace: guarded });
    await h.core.patchNamespacedConfigMap({ name: 'watched', namespace: home, body: { data: { 'list.txt': '' } } }, mergePatch);
    const started = Date.now();
    h = await startController(home);
    await repaired('policy deleted while stopped', started, async () => (except(await policy())?.length ? true : undefined));
    await repaired('list file emptied while stopped', started, async () => {
      const cm = await h.core.readNamespacedConfigMap({ name: 'watched', namespace: home });
      return cm.data!['list.txt'] !== '' ? true : undefined;
    });
    expect(feed.requests.length).toBe(pulls);
    const entries = (await h.metrics.listEntries.get()).values.find((v) => v.labels.name === 'watched');
    expect(entries?.value).toBe(LIST.length);
    const lastSuccess = (await h.metrics.lastSuccess.get()).values.find((v) => v.labels.name === 'watched');
    expect(lastSuccess?.value).toBeGreaterThan(0);
    expect((await h.metrics.degraded.get()).values.find((v) => v.labels.name === 'watched')?.value).toBe(0);
    expect(h.controller.syncs).toBe(0);
  });

  it('after a restart with no record of the list, pulls once', async () => {
    await h.stop();
    const pulls = feed.requests.length;
    await h.core.deleteCollectionNamespacedConfigMap({ namespace: home, labelSelector: 'blockfeed.dev/target=appliedList' });
    h = await startController(home);
    await eventually(async () => (feed.requests.length > pulls ? true : undefined), 30_000, 'a pull');
    await h.controller.idle();
    expect(feed.requests.length).toBe(pulls + 1);
    // and the record is back
    await eventually(async () => ((await h.core.listNamespacedConfigMap({ namespace: home, labelSelector: 'blockfeed.dev/target=appliedList' })).items.length ? true : undefined), 30_000, 'the record');
  });

  it('puts back a deleted NetworkPolicy while pulls keep failing, and the status still names the feed', async () => {
    feed.mode = 'error500';
    try {
      const failed = await syncNow(h, home, 'watched');
      expect(condition(failed, 'Degraded')).toMatchObject({ status: 'True', reason: 'FeedHttpError' });
      const answered = feed.answers.length;
      const repairEvents = async () => (await events(h, home, 'watched')).filter((e) => e.reason === 'DriftRepaired' && /NetworkPolicy .* deleted/.test(e.message ?? '')).length;
      const eventsBefore = await repairEvents();
      const before = (await policy())!;
      const started = Date.now();
      await h.net.deleteNamespacedNetworkPolicy({ name: before.metadata!.name!, namespace: guarded });
      const after = await repaired('deleted NetworkPolicy, feed down', started, async () => {
        const p = await policy();
        return p && p.metadata!.uid !== before.metadata!.uid ? p : undefined;
      });
      expect(except(after)).toEqual(V4);
      // The feed stayed down throughout: every pull since failed, and a repair does not clear the feed's failure.
      await eventually(async () => (feed.answers.length > answered ? true : undefined), 30_000, 'a pull retried');
      expect(feed.answers.slice(answered).every((status) => status === 500)).toBe(true);
      expect(condition(await getSubscription(h, home, 'watched'), 'Degraded')).toMatchObject({ status: 'True', reason: 'FeedHttpError' });
      expect(await repairEvents()).toBe(eventsBefore + 1);
    } finally {
      feed.mode = 'ok';
    }
    // and recovers once the feed is healthy again
    const ok = await syncNow(h, home, 'watched');
    expect(condition(ok, 'Degraded')?.status).toBe('False');
  });
});

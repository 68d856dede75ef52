// A subscription end to end against a real kube-apiserver and a real feed over HTTP: NetworkPolicies in every
// selected namespace, Ingress annotations merged with the owner's, ConfigMaps in every format; status and
// Events; a spec edit resyncs; 304 and unchanged resyncs write nothing; deletion removes everything.
import type { V1Ingress } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '../../../controller/runtime/k8s.ts';
import { DENYLIST_ANNOTATION } from '../../../controller/targets/ingress-nginx.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import {
  FeedServer,
  applySubscription,
  condition,
  events,
  getSubscription,
  patchSubscription,
  startController,
  syncNow,
  type Harness,
} from '../../support/controller-harness.ts';

const feed = new FeedServer();
let h: Harness;
let home: string;
let protectedA: string;
let protectedB: string;
let unprotected: string;
let label: string;

const LIST = ['203.0.113.7', '203.0.113.6', '198.51.100.0/25', '198.51.100.128/25', '2001:db8:1::1', '2001:db8:1::/64', '45.33.32.156'];
const CIDRS = ['45.33.32.156/32', '198.51.100.0/24', '203.0.113.6/31', '2001:db8:1::/64'];

async function ingress(namespace: string, name: string, annotations: Record<string, string>, labels: Record<string, string>): Promise<V1Ingress> {
  return h.net.createNamespacedIngress({
    namespace,
    body: {
      metadata: { name, namespace, annotations, labels },
      spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } } },
    },
  });
}

async function versions(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const ns of [protectedA, protectedB]) {
    for (const p of (await h.net.listNamespacedNetworkPolicy({ namespace: ns })).items) out[`np/${ns}/${p.metadata!.name}`] = p.metadata!.resourceVersion!;
  }
  for (const cm of (await h.core.listNamespacedConfigMap({ namespace: home, labelSelector: 'app.kubernetes.io/managed-by=blockfeed-controller' })).items) {
    out[`cm/${cm.metadata!.name}`] = cm.metadata!.resourceVersion!;
  }
  const ing = await h.net.readNamespacedIngress({ name: 'shop', namespace: protectedA });
  out['ing/shop'] = ing.metadata!.resourceVersion!;
  return out;
}

beforeAll(async () => {
  await feed.start();
  feed.lines = ['# attackers', ...LIST];
  home = await freshNamespace('bls-home');
  label = home; // unique per test run
  protectedA = await freshNamespace('bls-a');
  protectedB = await freshNamespace('bls-b');
  unprotected = await freshNamespace('bls-c');
  h = await startController(home);
  for (const ns of [protectedA, protectedB]) {
    await h.core.patchNamespace({ name: ns, body: { metadata: { labels: { 'blockfeed.dev/protect': label } } } }, mergePatch);
  }
  await ingress(protectedA, 'shop', { [DENYLIST_ANNOTATION]: '192.0.2.1/32' }, { 'blockfeed.dev/waf': label });
  await ingress(unprotected, 'other', {}, {});
  await h.core.createNamespacedSecret({ namespace: home, body: { metadata: { name: 'feed-key' }, stringData: { apiKey: 'k8s-test-key' } } });
  await applySubscription(h, home, 'attackers', {
    feed: { url: feed.url, endpoint: 'export', filters: { type: 'attacker', hours: 168 }, credentials: { secretRef: { name: 'feed-key', key: 'apiKey' } } },
    interval: '6h',
    targets: [
      { networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': label } }, direction: 'Ingress' } },
      { ingressNginx: { ingressSelector: { matchLabels: { 'blockfeed.dev/waf': label } } } },
      { configMap: { name: 'attackers', formats: ['txt', 'nginx', 'ipset', 'nftables'] } },
    ],
  });
});

afterAll(async () => {
  await h?.stop();
  await feed.stop();
});

describe('BlocklistSubscription', () => {
  it('is applied to NetworkPolicies, Ingress annotations and ConfigMaps, with both address families', async () => {
    const sub = await eventually(async () => {
      const s = await getSubscription(h, home, 'attackers');
      return condition(s, 'Ready')?.status === 'True' ? s : undefined;
    }, 60_000, 'Ready');

    // NetworkPolicy: one per selected namespace, everything allowed except the list, in-cluster peers kept.
    for (const ns of [protectedA, protectedB]) {
      const policies = (await h.net.listNamespacedNetworkPolicy({ namespace: ns })).items;
      expect(policies).toHaveLength(1);
      const from = policies[0]!.spec!.ingress![0]!._from!;
      expect(from).toEqual([
        { ipBlock: { cidr: '0.0.0.0/0', except: CIDRS.slice(0, 3) } },
        { ipBlock: { cidr: '::/0', except: CIDRS.slice(3) } },
        { namespaceSelector: {} },
      ]);
      expect(policies[0]!.spec!.policyTypes).toEqual(['Ingress']);
    }
    expect((await h.net.listNamespacedNetworkPolicy({ namespace: unprotected })).items).toHaveLength(0);
    // the policy in the subscription's own namespace would carry an owner reference; others rely on the finalizer
    expect(sub.metadata.finalizers).toContain('blockfeed.dev/cleanup');

    // Ingress: the owner's entry kept, ours after it; the unselected Ingress untouched.
    const shop = await h.net.readNamespacedIngress({ name: 'shop', namespace: protectedA });
    expect(shop.metadata!.annotations![DENYLIST_ANNOTATION]).toBe(['192.0.2.1/32', ...CIDRS].join(','));
    const other = await h.net.readNamespacedIngress({ name: 'other', namespace: unprotected });
    expect(other.metadata?.annotations?.[DENYLIST_ANNOTATION]).toBeUndefined();

    // ConfigMap: every format, owner reference, labels.
    const cm = await h.core.readNamespacedConfigMap({ name: 'attackers', namespace: home });
    expect(cm.data!['list.txt']).toBe(CIDRS.map((c) => `${c}\n`).join(''));
    expect(cm.data!['deny.conf']).toBe(CIDRS.map((c) => `deny ${c};\n`).join(''));
    expect(cm.data!['ipset.restore']).toContain('add blockfeed-v6 2001:db8:1::/64 -exist\n');
    expect(cm.data!['nftables.conf']).toContain('  45.33.32.156/32,\n  198.51.100.0/24,\n  203.0.113.6/31\n');
    expect(cm.metadata!.ownerReferences![0]).toMatchObject({ kind: 'BlocklistSubscription', name: 'attackers', uid: sub.metadata.uid });
    expect(cm.metadata!.labels!['app.kubernetes.io/managed-by']).toBe('blockfeed-controller');

    // Status per the API conventions.
    expect(sub.status).toMatchObject({ observedGeneration: sub.metadata.generation, entries: LIST.length, cidrs: CIDRS.length, feedETag: feed.etag() });
    expect(condition(sub, 'Synced')).toMatchObject({ status: 'True', reason: 'Synced', observedGeneration: sub.metadata.generation });
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'False' });
    expect(sub.status!.lastSuccessfulSyncTime).toBeTruthy();
    expect(new Date(sub.status!.nextSyncTime!).getTime() - new Date(sub.status!.lastSyncTime!).getTime()).toBe(6 * 3600 * 1000);
    const objects = sub.status!.targets!.flatMap((t) => t.objects.map((o) => `${t.target} ${o.kind}/${o.namespace}/${o.name}`));
    const policyName = sub.status!.targets!.find((t) => t.target === 'networkPolicy')!.objects[0]!.name;
    expect(objects.sort()).toEqual(
      [...[protectedA, protectedB].map((ns) => `networkPolicy NetworkPolicy/${ns}/${policyName}`), `ingressNginx Ingress/${protectedA}/shop`, `configMap ConfigMap/${home}/attackers`].sort(),
    );
    expect(sub.status!.targets!.map((t) => [t.target, t.state, t.cidrs])).toEqual([
      ['networkPolicy', 'Applied', CIDRS.length],
      ['ingressNginx', 'Applied', CIDRS.length],
      ['configMap', 'Applied', CIDRS.length],
    ]);

    // The key went as X-API-Key, never in the URL.
    const req = feed.requests[0]!;
    expect(req.headers['x-api-key']).toBe('k8s-test-key');
    expect(req.url).toBe('/api/export?format=txt&hours=168&type=attacker');

    const evs = await events(h, home, 'attackers');
    expect(evs.some((e) => e.type === 'Normal' && e.reason === 'Synced')).toBe(true);
  });

  it('writes nothing on a 304 or an unchanged resync', async () => {
    const before = await versions();
    const writes = h.apis.writes.byKind.get('NetworkPolicy') ?? 0;
    const sub = await syncNow(h, home, 'attackers');
    expect(feed.answers.at(-1)).toBe(304);
    expect(condition(sub, 'Synced')).toMatchObject({ status: 'True', reason: 'Synced' });
    expect(await versions()).toEqual(before);

    // Same list, new body (a comment changed): a full 200, and still no write.
    feed.lines = ['# attackers, regenerated', ...LIST];
    await syncNow(h, home, 'attackers');
    expect(feed.answers.at(-1)).toBe(200);
    expect(await versions()).toEqual(before);
    expect(h.apis.writes.byKind.get('NetworkPolicy') ?? 0).toBe(writes);
    expect((await events(h, home, 'attackers')).some((e) => e.reason === 'Unchanged')).toBe(true);
  });

  it('resyncs when the spec changes', async () => {
    await patchSubscription(h, home, 'attackers', { spec: { allowlist: ['203.0.113.7'] } });
    const sub = await eventually(async () => {
      const s = await getSubscription(h, home, 'attackers');
      return s.status?.observedGeneration === s.metadata.generation && s.metadata.generation! > 1 ? s : undefined;
    }, 30_000, 'the edit to be observed');
    expect(sub.status!.cidrs).toBe(4);
    const cm = await h.core.readNamespacedConfigMap({ name: 'attackers', namespace: home });
    expect(cm.data!['list.txt']).toBe(['45.33.32.156/32', '198.51.100.0/24', '203.0.113.6/32', '2001:db8:1::/64'].map((c) => `${c}\n`).join(''));
  });

  it('follows namespaces into and out of the selector', async () => {
    await h.core.patchNamespace({ name: protectedB, body: { metadata: { labels: { 'blockfeed.dev/protect': null } } } }, mergePatch);
    await syncNow(h, home, 'attackers');
    expect((await h.net.listNamespacedNetworkPolicy({ namespace: protectedB })).items).toHaveLength(0);
    expect((await h.net.listNamespacedNetworkPolicy({ namespace: protectedA })).items).toHaveLength(1);
  });

  it('removes everything it wrote, across namespaces, when deleted', async () => {
    await h.custom.deleteNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: home, plural: 'blocklistsubscriptions', name: 'attackers' });
    await eventually(async () => {
      const list: unknown = await h.custom.listNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: home, plural: 'blocklistsubscriptions' });
      return (list as { items: unknown[] }).items.length === 0 ? true : undefined;
    }, 30_000, 'the subscription to go');
    for (const ns of [protectedA, protectedB]) expect((await h.net.listNamespacedNetworkPolicy({ namespace: ns })).items).toHaveLength(0);
    const shop = await h.net.readNamespacedIngress({ name: 'shop', namespace: protectedA });
    expect(shop.metadata!.annotations![DENYLIST_ANNOTATION]).toBe('192.0.2.1/32');
    expect(Object.keys(shop.metadata!.annotations!).filter((k) => k.startsWith('blockfeed.dev/'))).toEqual([]);
    expect((await h.core.listNamespacedConfigMap({ namespace: home, labelSelector: 'app.kubernetes.io/managed-by=blockfeed-controller' })).items).toHaveLength(0);
  });
});

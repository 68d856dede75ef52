// The Envoy Gateway, Istio, Cilium and Calico targets against a real kube-apiserver that serves each project's
// own published CRDs (make k8s-crds), so every object written is validated by the real schema. For each target:
// a known list of both address families, with an allowlist hole, gives exactly the expected objects; a 304, an
// unchanged resync and a restart write nothing (resourceVersions: the stored objects read back equal to what
// was sent, no field pruned or defaulted by the schemas); an object deleted by hand is put back (drift); an edit
// resyncs; deleting the subscription removes everything, in every namespace and cluster-wide.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, PLURAL, VERSION, type BlocklistSubscription } from '../../../api/v1alpha1/blocklist-subscription.ts';
import { apiRequest, subscriptionKey } from '../../../controller/runtime/k8s.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import { FeedServer, applySubscription, condition, ensureHostEndpoint, getSubscription, patchSubscription, startController, syncNow, type Harness } from '../../support/controller-harness.ts';

const LIST = ['203.0.113.7', '203.0.113.6', '198.51.100.0/24', '2001:db8:1::1', '2001:db8:1::/64', '45.33.32.156', '2001:db8:2::/48'];
const ALLOW = ['198.51.100.128/25'];
const CIDRS = ['45.33.32.156/32', '198.51.100.0/25', '203.0.113.6/31', '2001:db8:1::/64', '2001:db8:2::/48'];

interface ApiObject {
  kind: string;
  /** the collection it was listed from (all namespaces) */
  path: string;
  metadata: { name: string; namespace?: string; resourceVersion: string; labels?: Record<string, string>; ownerReferences?: unknown[] };
  spec: Record<string, unknown>;
}

interface Case {
  field: string;
  /** collection paths (all namespaces) of what the target writes */
  paths: string[];
  target: (home: string, other: string) => Record<string, unknown>;
  /** the CIDRs the objects block, in object order */
  cidrs: (objects: ApiObject[]) => string[];
  /** what else the objects must be */
  check: (objects: ApiObject[], home: string, other: string, sub: BlocklistSubscription) => void;
}

type Spec = Record<string, unknown>;
const arr = (v: unknown) => v as Spec[];

const CASES: Case[] = [
  {
    field: 'envoySecurityPolicy',
    paths: ['/apis/gateway.envoyproxy.io/v1alpha1/securitypolicies'],
    target: (_home, other) => ({
      targetRefs: [
        { kind: 'Gateway', name: 'edge', sectionName: 'https' },
        { kind: 'HTTPRoute', name: 'shop', namespace: other },
      ],
    }),
    cidrs: (objects) => [...new Set(objects.flatMap((o) => arr((o.spec.authorization as Spec).rules).flatMap((r) => (r.principal as { clientCIDRs: string[] }).clientCIDRs)))],
    check: (objects, home, other, sub) => {
      expect(objects.map((o) => o.metadata.namespace).sort()).toEqual([home, other].sort());
      const byNs = new Map(objects.map((o) => [o.metadata.namespace, o]));
      expect(byNs.get(home)!.spec.targetRefs).toEqual([{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge', sectionName: 'https' }]);
      expect(byNs.get(other)!.spec.targetRefs).toEqual([{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop' }]);
      for (const o of objects) {
        expect(o.spec.authorization).toMatchObject({ defaultAction: 'Allow', rules: [{ action: 'Deny', principal: { clientCIDRs: CIDRS } }] });
      }
      // Owned (garbage-collected) in the subscription's namespace only; the finalizer covers the other.
      expect(byNs.get(home)!.metadata.ownerReferences).toEqual([expect.objectContaining({ uid: sub.metadata.uid })]);
      expect(byNs.get(other)!.metadata.ownerReferences).toBeUndefined();
    },
  },
  {
    field: 'istioAuthorizationPolicy',
    paths: ['/apis/security.istio.io/v1/authorizationpolicies'],
    target: (_home, other) => ({ namespace: other, selector: { matchLabels: { istio: 'ingressgateway' } }, clientAddress: 'RemoteIp' }),
    cidrs: (objects) => objects.flatMap((o) => arr(o.spec.rules).flatMap((r) => arr(r.from).flatMap((f) => (f.source as { remoteIpBlocks: string[] }).remoteIpBlocks))),
    check: (objects, _home, other) => {
      expect(objects).toHaveLength(1);
      expect(objects[0]!.metadata.namespace).toBe(other);
      expect(objects[0]!.spec).toMatchObject({ action: 'DENY', selector: { matchLabels: { istio: 'ingressgateway' } } });
    },
  },
  {
    field: 'ciliumCIDRGroup',
    paths: ['/apis/cilium.io/v2/ciliumcidrgroups', '/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies'],
    target: () => ({ policy: { endpointSelector: { matchLabels: { app: 'web' } } } }),
    cidrs: (objects) => objects.filter((o) => o.kind === 'CiliumCIDRGroup').flatMap((o) => o.spec.externalCIDRs as string[]),
    check: (objects, _home, _other, sub) => {
      const groups = objects.filter((o) => o.kind === 'CiliumCIDRGroup');
      const [policy, ...more] = objects.filter((o) => o.kind === 'CiliumClusterwideNetworkPolicy');
      expect(more).toEqual([]);
      // the policy selects the subscription's groups by their labels
      const labels = { 'blockfeed.dev/subscription': subscriptionKey(sub), 'blockfeed.dev/target': 'ciliumCIDRGroup' };
      for (const g of groups) expect(g.metadata.labels).toMatchObject(labels);
      expect(policy!.spec).toMatchObject({
        endpointSelector: { matchLabels: { app: 'web' } },
        enableDefaultDeny: { ingress: false, egress: false },
        ingressDeny: [{ fromCIDRSet: [{ cidrGroupSelector: { matchLabels: labels } }] }],
      });
    },
  },
  {
    field: 'calicoGlobalNetworkSet',
    paths: ['/apis/crd.projectcalico.org/v1/globalnetworksets', '/apis/crd.projectcalico.org/v1/globalnetworkpolicies'],
    target: () => ({ policy: { order: 20, selector: "has(kubernetes.io/hostname)" } }),
    cidrs: (objects) => objects.filter((o) => o.kind === 'GlobalNetworkSet').flatMap((o) => o.spec.nets as string[]),
    check: (objects, _home, _other, sub) => {
      const sets = objects.filter((o) => o.kind === 'GlobalNetworkSet');
      const [policy, ...more] = objects.filter((o) => o.kind === 'GlobalNetworkPolicy');
      expect(more).toEqual([]);
      expect(policy!.metadata.name.startsWith('default.')).toBe(true);
      const selector = `blockfeed.dev/subscription == '${subscriptionKey(sub)}' && blockfeed.dev/target == 'calicoGlobalNetworkSet'`;
      expect(policy!.spec).toEqual({
        order: 20,
        selector: 'has(kubernetes.io/hostname)',
        preDNAT: true,
        applyOnForward: true,
        types: ['Ingress'],
        ingress: [{ action: 'Deny', source: { selector } }],
      });
      // the policy's selector picks exactly the sets: their labels
      for (const s of sets) expect(s.metadata.labels).toMatchObject({ 'blockfeed.dev/subscription': subscriptionKey(sub), 'blockfeed.dev/target': 'calicoGlobalNetworkSet' });
    },
  },
];

describe.each(CASES)('the $field target', (c) => {
  const feed = new FeedServer();
  let h: Harness;
  let home: string;
  let other: string;
  const name = 'attackers';

  /** Every object the target wrote for the subscription, in every namespace and cluster-wide. */
  async function objects(): Promise<ApiObject[]> {
    const selector = encodeURIComponent(`blockfeed.dev/subscription=${subscriptionKey({ metadata: { namespace: home, name } })},blockfeed.dev/target=${c.field}`);
    const all: ApiObject[] = [];
    for (const path of c.paths) {
      const list = JSON.parse(await apiRequest(h.apis, 'GET', `${path}?labelSelector=${selector}`)) as { kind: string; items: ApiObject[] };
      all.push(...list.items.map((o) => ({ ...o, path, kind: list.kind.replace(/List$/, '') })));
    }
    return all.sort((a, b) => (a.kind + a.metadata.name).localeCompare(b.kind + b.metadata.name));
  }

  const versions = async () => Object.fromEntries((await objects()).map((o) => [`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, o.metadata.resourceVersion]));

  beforeAll(async () => {
    await feed.start();
    feed.lines = ['# attackers', ...LIST];
    home = await freshNamespace('bls-ep');
    other = await freshNamespace('bls-ep-other');
    h = await startController(home);
    // Calico's policy applies to host endpoints: a node's, as automatic host endpoints make (the other targets ignore it).
    await ensureHostEndpoint(h);
    await applySubscription(h, home, name, { feed: { url: feed.url, endpoint: 'export' }, interval: '6h', allowlist: ALLOW, targets: [{ [c.field]: c.target(home, other) }] });
    const sub = await eventually(async () => {
      const s = await getSubscription(h, home, name);
      return s.status?.lastSyncTime ? s : undefined;
    }, 60_000, 'a sync');
    expect(condition(sub, 'Degraded'), JSON.stringify(sub.status)).toMatchObject({ status: 'False' });
  });

  afterAll(async () => {
    await h?.stop();
    await feed.stop();
  });

  it('holds exactly the list, both address families, the allowlist hole punched', async () => {
    const sub = await getSubscription(h, home, name);
    const written = await objects();
    expect(c.cidrs(written)).toEqual(CIDRS);
    c.check(written, home, other, sub);
    const status = sub.status!.targets!.find((t) => t.target === c.field)!;
    expect(status).toMatchObject({ state: 'Applied', cidrs: CIDRS.length });
    expect(status.objects.map((o) => o.name).sort()).toEqual(written.map((o) => o.metadata.name).sort());
    const metric = (await h.metrics.targetCidrs.get()).values.find((v) => v.labels.name === name);
    expect(metric?.value).toBe(CIDRS.length);
  });

  it('writes nothing on a 304 or an unchanged resync', async () => {
    const before = await versions();
    await syncNow(h, home, name);
    expect(feed.answers.at(-1)).toBe(304);
    feed.lines = ['# attackers, regenerated', ...LIST];
    const sub = await syncNow(h, home, name);
    expect(feed.answers.at(-1)).toBe(200);
    expect(await versions()).toEqual(before);
    // A scheduled resync, which no one is waiting to see: not even the status is written.
    const syncs = h.controller.syncs;
    h.controller.resyncAll();
    await eventually(async () => (h.controller.syncs > syncs ? true : undefined), 30_000, 'the resync');
    await h.controller.idle();
    expect(await versions()).toEqual(before);
    expect((await getSubscription(h, home, name)).metadata.resourceVersion).toBe(sub.metadata.resourceVersion);
  });

  it('a restarted controller reads its objects back as it wrote them: nothing rewritten', async () => {
    const before = await versions();
    await h.stop();
    h = await startController(home);
    await eventually(async () => (h.controller.repairs > 0 ? true : undefined), 30_000, 'the start-up check');
    await h.controller.idle();
    expect(h.apis.ledger.size).toBeGreaterThan(0); // every object was read and compared
    expect(await versions()).toEqual(before);
  });

  it('puts back an object deleted by hand, without a pull', async () => {
    const pulls = feed.requests.length;
    const [first] = await objects();
    const { namespace, name: object } = first!.metadata;
    const started = Date.now();
    await apiRequest(h.apis, 'DELETE', `${first!.path.replace(/\/([a-z]+)$/, namespace ? `/namespaces/${namespace}/$1` : '/$1')}/${object}`);
    await eventually(async () => {
      const back = (await objects()).find((o) => o.kind === first!.kind && o.metadata.namespace === namespace && o.metadata.name === object);
      return back && back.metadata.resourceVersion !== first!.metadata.resourceVersion ? back : undefined;
    }, 30_000, `${first!.kind} ${first!.metadata.name} to be back`);
    console.log(`[drift] ${c.field}: deleted ${first!.kind} repaired in ${Date.now() - started} ms`);
    expect(c.cidrs(await objects())).toEqual(CIDRS);
    expect(feed.requests.length).toBe(pulls);
  });

  it('resyncs when the spec changes', async () => {
    await patchSubscription(h, home, name, { spec: { allowlist: [...ALLOW, '45.33.32.156'] } });
    await eventually(async () => {
      const cidrs = c.cidrs(await objects());
      return cidrs.length === CIDRS.length - 1 ? cidrs : undefined;
    }, 30_000, 'the edit to reach the objects');
    expect(c.cidrs(await objects())).toEqual(CIDRS.slice(1));
  });

  it('removes everything it wrote when the subscription is deleted', async () => {
    expect((await objects()).length).toBeGreaterThan(0);
    await h.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: home, plural: PLURAL, name });
    await eventually(async () => ((await objects()).length === 0 ? true : undefined), 30_000, 'every object to go');
  });
});

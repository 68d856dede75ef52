// A long list in every target that cuts it into several objects (ConfigMap, Istio, Cilium, Calico), and then one
// address added near its front and one removed from its middle: each target writes at most two objects for each
// change, counted on the apiserver (objects created, deleted, or at a new resourceVersion), while the others stay
// exactly as they were.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequest, subscriptionKey } from '../../../controller/runtime/k8s.ts';
import { freshNamespace } from '../../support/k8s.ts';
import { FeedServer, applySubscription, ensureHostEndpoint, startController, syncNow, type Harness } from '../../support/controller-harness.ts';

/** 200,000 addresses that do not aggregate (even ones only), spread over 45.0.0.0/8: about 3.5 MB of JSON. */
const ADDRESSES = 200_000;
const feed = new FeedServer();
let h: Harness;
let ns: string;

const ipv4 = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

function addresses(): number[] {
  const picked = new Set<number>();
  let x = 42;
  while (picked.size < ADDRESSES) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    picked.add(((45 << 24) | (x & 0xfffffe)) >>> 0);
  }
  return [...picked].sort((a, b) => a - b);
}

const TARGETS = [
  { field: 'configMap', collections: ['/api/v1/namespaces/NS/configmaps'] },
  { field: 'istioAuthorizationPolicy', collections: ['/apis/security.istio.io/v1/namespaces/NS/authorizationpolicies'] },
  { field: 'ciliumCIDRGroup', collections: ['/apis/cilium.io/v2/ciliumcidrgroups', '/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies'] },
  { field: 'calicoGlobalNetworkSet', collections: ['/apis/crd.projectcalico.org/v1/globalnetworksets', '/apis/crd.projectcalico.org/v1/globalnetworkpolicies'] },
];

/** Every object of each target, by kind and name, with its uid and resourceVersion. */
async function snapshot(): Promise<Map<string, Map<string, string>>> {
  const out = new Map<string, Map<string, string>>();
  for (const { field, collections } of TARGETS) {
    const objects = new Map<string, string>();
    const selector = encodeURIComponent(`blockfeed.dev/subscription=${subscriptionKey({ metadata: { namespace: ns, name: 'long' } })},blockfeed.dev/target=${field}`);
    for (const collection of collections) {
      const text = await apiRequest(h.apis, 'GET', `${collection.replace('NS', ns)}?labelSelector=${selector}`, { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' });
      for (const { metadata } of (JSON.parse(text) as { items: { metadata: { name: string; uid: string; resourceVersion: string } }[] }).items) {
        objects.set(`${collection} ${metadata.name}`, `${metadata.uid}/${metadata.resourceVersion}`);
      }
    }
    out.set(field, objects);
  }
  return out;
}

/** Per target: the objects created, deleted or written again between two snapshots. */
function writes(before: Map<string, Map<string, string>>, after: Map<string, Map<string, string>>): Record<string, number> {
  return Object.fromEntries(
    TARGETS.map(({ field }) => {
      const [was, now] = [before.get(field)!, after.get(field)!];
      return [field, [...new Set([...was.keys(), ...now.keys()])].filter((k) => was.get(k) !== now.get(k)).length];
    }),
  );
}

beforeAll(async () => {
  await feed.start();
  ns = await freshNamespace('shard-writes');
  h = await startController(ns);
  await ensureHostEndpoint(h);
});

afterAll(async () => {
  await h?.stop();
  await feed.stop();
});

describe('a one-address change to a long list', () => {
  it('writes at most two objects of each target that cuts the list', async () => {
    const list = addresses();
    feed.lines = list.map(ipv4);
    await applySubscription(h, ns, 'long', {
      feed: { url: feed.url, endpoint: 'export', maxBodyBytes: 64 * 1024 * 1024 },
      safety: { maxEntries: 1_000_000, minPrefixV4: 16, minPrefixV6: 32, maxShrinkPercent: 50 },
      targets: [
        { configMap: { name: 'long', formats: ['txt', 'nginx'] } },
        { istioAuthorizationPolicy: { selector: { matchLabels: { istio: 'ingressgateway' } }, clientAddress: 'RemoteIp', maxCIDRs: 1_000_000 } },
        { ciliumCIDRGroup: { policy: { enabled: true }, maxCIDRs: 1_000_000 } },
        { calicoGlobalNetworkSet: { policy: { enabled: true, order: 10, selector: 'all()' }, maxCIDRs: 1_048_576 } },
      ],
    });
    const first = await syncNow(h, ns, 'long');
    expect(first.status!.cidrs, first.status!.message).toBe(ADDRESSES);
    const initial = await snapshot();
    // several objects each (the policies besides), so that shifted cuts would show
    for (const { field } of TARGETS) expect(initial.get(field)!.size, field).toBeGreaterThan(3);

    // one address near the front (even, so that it aggregates with none): the old byte-budget cut moved every
    // later boundary
    const present = new Set(list);
    let added = list[10]! + 2;
    while (present.has(added)) added += 2;
    const grown = [...list, added].sort((a, b) => a - b);
    feed.lines = grown.map(ipv4);
    expect((await syncNow(h, ns, 'long')).status!.cidrs).toBe(ADDRESSES + 1);
    const afterAdd = await snapshot();
    const addWrites = writes(initial, afterAdd);
    console.log(`[shard-writes] one address added near the front: objects written per target ${JSON.stringify(addWrites)}`);

    // one address out of the middle
    feed.lines = grown.filter((_, i) => i !== ADDRESSES / 2).map(ipv4);
    expect((await syncNow(h, ns, 'long')).status!.cidrs).toBe(ADDRESSES);
    const removeWrites = writes(afterAdd, await snapshot());
    console.log(`[shard-writes] one address removed from the middle: objects written per target ${JSON.stringify(removeWrites)}`);

    for (const counts of [addWrites, removeWrites]) {
      for (const { field } of TARGETS) {
        expect(counts[field], field).toBeGreaterThanOrEqual(1);
        expect(counts[field], field).toBeLessThanOrEqual(2);
      }
    }
  });
});

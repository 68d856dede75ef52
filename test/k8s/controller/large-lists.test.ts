// A million addresses that do not aggregate (every other address of 45.0.0.0/10: a million /32s) into the Cilium
// and Calico targets, against their real CRDs: beyond the Cilium target's default limit the target is Degraded
// (never cut), within its limit the list is cut into objects the real schemas accept, and together they hold the
// whole list. The object count and total size are printed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequest, subscriptionKey } from '../../../controller/runtime/k8s.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import { FeedServer, applySubscription, condition, ensureHostEndpoint, getSubscription, patchSubscription, startController, type Harness } from '../../support/controller-harness.ts';

const ADDRESSES = 1_000_000;
const feed = new FeedServer();
let h: Harness;
let ns: string;

function addresses(): string[] {
  const out = new Array<string>(ADDRESSES);
  for (let i = 0; i < ADDRESSES; i++) {
    const n = (45 << 24) + 2 * i;
    out[i] = `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
  }
  return out;
}

/** The objects of one target, with the CIDRs they hold and their size as JSON. */
async function stored(paths: string[], field: string, cidrsOf: (spec: Record<string, unknown>) => string[] | undefined) {
  const selector = encodeURIComponent(`blockfeed.dev/subscription=${subscriptionKey({ metadata: { namespace: ns, name: 'million' } })},blockfeed.dev/target=${field}`);
  let bytes = 0;
  let objects = 0;
  let cidrs = 0;
  for (const path of paths) {
    const text = await apiRequest(h.apis, 'GET', `${path}?labelSelector=${selector}`);
    const list = JSON.parse(text) as { items: { spec: Record<string, unknown> }[] };
    for (const item of list.items) {
      bytes += Buffer.byteLength(JSON.stringify(item));
      objects++;
      cidrs += cidrsOf(item.spec)?.length ?? 0;
    }
  }
  return { bytes, objects, cidrs };
}

beforeAll(async () => {
  await feed.start();
  feed.lines = addresses();
  ns = await freshNamespace('bls-large');
  h = await startController(ns);
  await ensureHostEndpoint(h);
});

afterAll(async () => {
  await h?.stop();
  await feed.stop();
});

describe('a million-address list', () => {
  it('leaves the Cilium target Degraded beyond its default limit, and fills the Calico one', async () => {
    const started = Date.now();
    await applySubscription(h, ns, 'million', {
      feed: { url: feed.url, endpoint: 'export', maxBodyBytes: 64 * 1024 * 1024 },
      safety: { maxEntries: 2_000_000, minPrefixV4: 16, minPrefixV6: 32, maxShrinkPercent: 50 },
      targets: [
        { ciliumCIDRGroup: { policy: { enabled: true }, maxCIDRs: 200_000 } },
        { calicoGlobalNetworkSet: { policy: { enabled: true, order: 10, selector: 'all()' }, maxCIDRs: 1_048_576 } },
      ],
    });
    const sub = await eventually(async () => {
      const s = await getSubscription(h, ns, 'million');
      return s.status?.lastSyncTime ? s : undefined;
    }, 120_000, 'a sync');
    expect(sub.status!.cidrs, sub.status!.message).toBe(ADDRESSES);
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetTooLarge' });
    expect(condition(sub, 'Degraded')!.message).toMatch(/ciliumCIDRGroup: the list has 1000000 CIDRs, more than maxCIDRs 200000/);
    const calico = await stored(['/apis/crd.projectcalico.org/v1/globalnetworksets', '/apis/crd.projectcalico.org/v1/globalnetworkpolicies'], 'calicoGlobalNetworkSet', (s) => s.nets as string[]);
    console.log(`[large] Calico: ${ADDRESSES} CIDRs in ${calico.objects} objects (sets + policy), ${(calico.bytes / 1e6).toFixed(1)} MB of JSON; synced in ${Date.now() - started} ms`);
    expect(calico.cidrs).toBe(ADDRESSES);
    expect(calico.objects).toBeGreaterThan(10);
    expect((await stored(['/apis/cilium.io/v2/ciliumcidrgroups'], 'ciliumCIDRGroup', (s) => s.externalCIDRs as string[])).objects).toBe(0);
  });

  it('fills the Cilium target once its limit allows it', async () => {
    const started = Date.now();
    await patchSubscription(h, ns, 'million', { spec: { targets: [{ ciliumCIDRGroup: { maxCIDRs: 1_000_000 } }, { calicoGlobalNetworkSet: { maxCIDRs: 1_048_576 } }] } });
    const sub = await eventually(async () => {
      const s = await getSubscription(h, ns, 'million');
      return s.status?.observedGeneration === s.metadata.generation && condition(s, 'Degraded')?.status === 'False' ? s : undefined;
    }, 120_000, 'the Cilium target to hold the list');
    expect(sub.status!.targets!.map((t) => [t.target, t.state, t.cidrs])).toEqual([
      ['ciliumCIDRGroup', 'Applied', ADDRESSES],
      ['calicoGlobalNetworkSet', 'Applied', ADDRESSES],
    ]);
    const cilium = await stored(['/apis/cilium.io/v2/ciliumcidrgroups', '/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies'], 'ciliumCIDRGroup', (s) => s.externalCIDRs as string[]);
    console.log(`[large] Cilium: ${ADDRESSES} CIDRs in ${cilium.objects} objects (groups + policy), ${(cilium.bytes / 1e6).toFixed(1)} MB of JSON; synced in ${Date.now() - started} ms`);
    expect(cilium.cidrs).toBe(ADDRESSES);
  });
});

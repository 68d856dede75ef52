// An enforcement point that is not installed: on a control plane of its own that serves none of the Envoy
// Gateway, Istio or Cilium CRDs nor Calico's policy kinds, a subscription targeting all four (and a ConfigMap) is Degraded with a
// reason that says so for each, the ConfigMap still gets the list, and nothing is pulled again (one pull, no
// crash, one warning). The targets are checked again with back-off, and the controller watches for their CRDs,
// so once the CRDs are installed the list reaches all of them without another pull or any edit: at once, even
// for a controller whose next check is ten minutes away.
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforcementPointCrds, installCrds, startControlPlane, type ControlPlane } from '../../support/control-plane.ts';
import { eventually } from '../../support/k8s.ts';
import { FeedServer, applySubscription, condition, ensureHostEndpoint, events, getSubscription, startController, untilDegraded, type Harness, type SubscriptionSpec } from '../../support/controller-harness.ts';

const feed = new FeedServer();
let plane: ControlPlane;
let kc: KubeConfig;
let h: Harness;
const ns = 'missing';
// A second controller whose targets, once found waiting, are checked again only after ten minutes: what applies
// its list within the test's minute is the CRD watch.
const slowFeed = new FeedServer();
let slow: Harness;
const slowNs = 'missing-slow-checks';
const TEN_MINUTES = 600_000;

beforeAll(async () => {
  await feed.start();
  await slowFeed.start();
  feed.lines = slowFeed.lines = ['45.33.32.156', '2001:db8:9::/48'];
  plane = await startControlPlane({ enforcementPoints: false, controllerManager: false });
  kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  for (const name of [ns, slowNs]) await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  h = await startController(ns, { kc });
  slow = await startController(slowNs, { kc, backoffBaseMs: TEN_MINUTES, backoffMaxMs: TEN_MINUTES });
  // Calico's host endpoints are there already (a node's automatic one), its policy kinds are not: once those are
  // installed, the Calico target has nothing left to wait for.
  const hostEndpointCrd = await mkdtemp(path.join(tmpdir(), 'blockfeed-hep-'));
  await copyFile(path.join(enforcementPointCrds(), 'hostendpoints.crd.projectcalico.org.yaml'), path.join(hostEndpointCrd, 'hostendpoints.yaml'));
  await installCrds(kc, hostEndpointCrd);
  await rm(hostEndpointCrd, { recursive: true });
  await ensureHostEndpoint(h);
}, 180_000);

afterAll(async () => {
  await h?.stop();
  await slow?.stop();
  await feed.stop();
  await slowFeed.stop();
  await plane?.stop();
});

/** A subscription to every kind of target whose CRDs are missing, and a ConfigMap. */
const everywhere = (feedUrl: string): Partial<SubscriptionSpec> => ({
  feed: { url: feedUrl, endpoint: 'export' },
  // The CRD fills in the defaults.
  targets: [
    { envoySecurityPolicy: { targetRefs: [{ kind: 'Gateway', name: 'edge' }] } },
    { istioAuthorizationPolicy: {} },
    { ciliumCIDRGroup: {} },
    { calicoGlobalNetworkSet: {} },
    { configMap: { name: 'everywhere', formats: ['txt'] } },
  ] as unknown as SubscriptionSpec['targets'],
});

describe('enforcement points whose CRDs are not installed', () => {
  it('are Degraded with a reason that says so, the other targets get the list, nothing is pulled again', async () => {
    await applySubscription(h, ns, 'everywhere', everywhere(feed.url));
    await applySubscription(slow, slowNs, 'everywhere', everywhere(slowFeed.url));
    const sub = await eventually(async () => {
      const s = await getSubscription(h, ns, 'everywhere');
      return s.status?.lastSyncTime ? s : undefined;
    }, 60_000, 'a sync');
    expect(condition(sub, 'Ready')?.status).toBe('True');
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetNotInstalled' });
    // Each target names the first of its kinds of object found missing (Cilium and Calico write two, side by side).
    for (const [target, kinds] of [
      ['envoySecurityPolicy', 'SecurityPolicy'],
      ['istioAuthorizationPolicy', 'AuthorizationPolicy'],
      ['ciliumCIDRGroup', 'CiliumCIDRGroup|CiliumClusterwideNetworkPolicy'],
      ['calicoGlobalNetworkSet', 'GlobalNetworkSet|GlobalNetworkPolicy'],
    ]) {
      expect(condition(sub, 'Degraded')!.message).toMatch(new RegExp(`${target}: the (${kinds}) API \\([a-z.]+/v[0-9a-z]+\\) is not served by this cluster: its CRD is not installed`));
    }
    expect(sub.status!.targets!.map((t) => [t.target, t.state, t.reason ?? ''])).toEqual([
      ['envoySecurityPolicy', 'Degraded', 'TargetNotInstalled'],
      ['istioAuthorizationPolicy', 'Degraded', 'TargetNotInstalled'],
      ['ciliumCIDRGroup', 'Degraded', 'TargetNotInstalled'],
      ['calicoGlobalNetworkSet', 'Degraded', 'TargetNotInstalled'],
      ['configMap', 'Applied', ''],
    ]);
    const cm = await h.core.readNamespacedConfigMap({ name: 'everywhere', namespace: ns });
    expect(cm.data!['list.txt']).toBe('45.33.32.156/32\n2001:db8:9::/48\n');
    expect((await events(h, ns, 'everywhere')).some((e) => e.type === 'Warning' && e.reason === 'TargetNotInstalled')).toBe(true);

    // Not a failure to retry: one pull. The targets are checked again (repairs, with back-off), which says
    // nothing new: no second warning.
    const repairs = h.controller.repairs;
    await new Promise((r) => setTimeout(r, 3000));
    expect(h.controller.repairs).toBeGreaterThan(repairs);
    expect(h.controller.syncs).toBe(1);
    expect(feed.requests).toHaveLength(1);
    expect((await events(h, ns, 'everywhere')).filter((e) => e.reason === 'TargetNotInstalled')).toHaveLength(1);

    // The slow controller found the same, and checks again only in five to ten minutes.
    const waiting = await untilDegraded(slow, slowNs, 'everywhere', 'True');
    expect(waiting.reason).toBe('TargetNotInstalled');
    expect(slowFeed.requests).toHaveLength(1);
  });

  it('applies to them once their CRDs are installed, without another pull or an edit', async () => {
    await installCrds(kc, enforcementPointCrds());
    // A new CRD's storage may still be initialising (HTTP 429): that is a failure, retried after a back-off.
    const sub = await eventually(async () => {
      const s = await getSubscription(h, ns, 'everywhere');
      return condition(s, 'Degraded')?.status === 'False' ? s : undefined;
    }, 60_000, 'Degraded False');
    expect(sub.status!.targets!.every((t) => t.state === 'Applied' && t.cidrs === 2)).toBe(true);
    expect(h.controller.syncs).toBe(1);
    expect(feed.requests).toHaveLength(1);
    expect((await events(h, ns, 'everywhere')).some((e) => e.reason === 'TargetsApplied' && /waiting for the cluster/.test(e.message ?? ''))).toBe(true);

    // Without waiting for its next check: the CRDs appearing is what makes it apply.
    const applied = await untilDegraded(slow, slowNs, 'everywhere', 'False', 60_000);
    expect(applied.reason).toBe('AsExpected');
    const slowSub = await getSubscription(slow, slowNs, 'everywhere');
    expect(slowSub.status!.targets!.every((t) => t.state === 'Applied' && t.cidrs === 2)).toBe(true);
    expect(slow.controller.syncs).toBe(1);
    expect(slowFeed.requests).toHaveLength(1);
  });
});

// Calico enforces a pre-DNAT policy on host endpoints only: in a cluster that has none (automatic host endpoints
// are off by default), the calicoGlobalNetworkSet target's policy blocks nothing. The target still writes the
// sets and the policy, so that they take effect once host endpoints appear, but says it is not in force
// (TargetNotFound) and waits for them.
//
// HostEndpoints are cluster-wide, so their absence would hold back the Calico targets of every test beside this
// one: this file runs in the k8s-serial project (a control plane of its own, one file at a time).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequest } from '../../controller/runtime/k8s.ts';
import { freshNamespace } from '../support/k8s.ts';
import {
  FeedServer, applySubscription, condition, ensureHostEndpoint, getSubscription, ownedObjects, patchSubscription, startController, syncNow, untilDegraded, type Harness,
} from '../support/controller-harness.ts';

const CALICO = '/apis/crd.projectcalico.org/v1';

describe('the calicoGlobalNetworkSet target in a cluster without host endpoints', () => {
  const feed = new FeedServer();
  const name = 'attackers';
  let h: Harness;
  let home: string;

  const owned = (plural: string) => ownedObjects(h, `${CALICO}/${plural}`, home, name);

  beforeAll(async () => {
    await feed.start();
    feed.lines = ['203.0.113.7', '2001:db8:1::/64'];
    home = await freshNamespace('bls-calico-hep');
    h = await startController(home);
    const hostEndpoints = JSON.parse(await apiRequest(h.apis, 'GET', `${CALICO}/hostendpoints`)) as { items: unknown[] };
    expect(hostEndpoints.items, 'this control plane must start without host endpoints').toEqual([]);
    await applySubscription(h, home, name, { feed: { url: feed.url, endpoint: 'export' }, interval: '6h', targets: [{ calicoGlobalNetworkSet: { policy: { enabled: true, order: 10, selector: 'all()' }, maxCIDRs: 500_000 } }] });
  });

  afterAll(async () => {
    await apiRequest(h.apis, 'DELETE', `${CALICO}/hostendpoints/node-1-auto-hep`).catch(() => undefined);
    await h?.stop();
    await feed.stop();
  });

  it('writes the sets and the policy, and says nothing is blocked yet', async () => {
    const reported = await untilDegraded(h, home, name, 'True');
    expect(reported.reason).toBe('TargetNotFound');
    expect(reported.message).toContain('the GlobalNetworkPolicy applies to host endpoints only, and the cluster has none, so nothing is blocked');
    expect(reported.message).toContain('autoCreate: Enabled');
    expect(await owned('globalnetworksets')).toHaveLength(1);
    expect(await owned('globalnetworkpolicies')).toHaveLength(1);
    const target = (await getSubscription(h, home, name)).status?.targets?.[0];
    expect(target).toMatchObject({ target: 'calicoGlobalNetworkSet', state: 'Degraded', reason: 'TargetNotFound' });
  });

  it('does not ask for host endpoints when it writes no policy', async () => {
    await patchSubscription(h, home, name, { spec: { targets: [{ calicoGlobalNetworkSet: { policy: { enabled: false } } }] } });
    await untilDegraded(h, home, name, 'False', 30_000);
    expect(await owned('globalnetworkpolicies')).toHaveLength(0);
  });

  it('is in force once the cluster has a host endpoint, without a change to the subscription', async () => {
    await patchSubscription(h, home, name, { spec: { targets: [{ calicoGlobalNetworkSet: { policy: { enabled: true } } }] } });
    const sub = await syncNow(h, home, name);
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetNotFound' });
    await ensureHostEndpoint(h);
    // the repair that a TargetNotFound target waits for (back-off from 300 ms in these tests)
    await untilDegraded(h, home, name, 'False', 30_000);
    expect(await owned('globalnetworkpolicies')).toHaveLength(1);
  });
});

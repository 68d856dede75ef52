// Cilium agents started with enable-non-default-deny-policies=false ignore a policy's enableDefaultDeny: the
// ciliumCIDRGroup target's deny-only policy would then put every endpoint it selects into default deny. The
// controller reads the agents' configuration (every ConfigMap named cilium-config) and, while that setting is
// off, writes the groups but not the policy, removes a policy written before, and says why (TargetUnsafe).
//
// That ConfigMap is read cluster-wide, so one with the setting off would hold back the Cilium targets of every
// test beside it: this file runs in the k8s-serial project (a control plane of its own, one file at a time).
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshNamespace, kubeConfig } from '../support/k8s.ts';
import { FeedServer, applySubscription, condition, getSubscription, ownedObjects, startController, syncNow, untilDegraded, type Harness } from '../support/controller-harness.ts';

const CILIUM = '/apis/cilium.io/v2';
const core = kubeConfig().makeApiClient(CoreV1Api);

describe('the ciliumCIDRGroup target and Cilium agents that ignore enableDefaultDeny', () => {
  const feed = new FeedServer();
  const name = 'attackers';
  let h: Harness;
  let home: string;
  let ciliumNamespace: string;

  /** Cilium's agent configuration, as its Helm chart writes it, with enable-non-default-deny-policies set. */
  const agentConfig = async (value: string) => {
    const body = { metadata: { name: 'cilium-config', namespace: ciliumNamespace }, data: { 'enable-policy': 'default', 'enable-non-default-deny-policies': value } };
    try {
      await core.replaceNamespacedConfigMap({ name: 'cilium-config', namespace: ciliumNamespace, body });
    } catch {
      await core.createNamespacedConfigMap({ namespace: ciliumNamespace, body });
    }
  };
  const owned = (plural: string) => ownedObjects(h, `${CILIUM}/${plural}`, home, name);

  beforeAll(async () => {
    await feed.start();
    feed.lines = ['203.0.113.7', '2001:db8:1::/64'];
    home = await freshNamespace('bls-cilium-dd');
    // Where Cilium runs varies (kube-system by default): any namespace counts.
    ciliumNamespace = await freshNamespace('cilium');
    await agentConfig('false');
    h = await startController(home);
    await applySubscription(h, home, name, { feed: { url: feed.url, endpoint: 'export' }, interval: '6h', targets: [{ ciliumCIDRGroup: { policy: { enabled: true }, maxCIDRs: 200_000 } }] });
  });

  afterAll(async () => {
    await core.deleteNamespacedConfigMap({ name: 'cilium-config', namespace: ciliumNamespace }).catch(() => undefined);
    await h?.stop();
    await feed.stop();
  });

  it('writes the groups but not the policy, and says why', async () => {
    const reported = await untilDegraded(h, home, name, 'True');
    expect(reported.reason).toBe('TargetUnsafe');
    expect(reported.message).toContain(`enable-non-default-deny-policies=false (ConfigMap ${ciliumNamespace}/cilium-config)`);
    expect(await owned('ciliumcidrgroups')).toHaveLength(1);
    expect(await owned('ciliumclusterwidenetworkpolicies')).toHaveLength(0);
    const target = (await getSubscription(h, home, name)).status?.targets?.[0];
    expect(target).toMatchObject({ target: 'ciliumCIDRGroup', state: 'Degraded', reason: 'TargetUnsafe' });
  });

  it('writes the policy once the setting is back on, without a change to the subscription', async () => {
    await agentConfig('true');
    // the repair that a TargetUnsafe target waits for (back-off from 300 ms in these tests)
    await untilDegraded(h, home, name, 'False', 30_000);
    expect(await owned('ciliumclusterwidenetworkpolicies')).toHaveLength(1);
  });

  it('removes the policy it wrote when the setting goes off again', async () => {
    await agentConfig('False');
    const sub = await syncNow(h, home, name);
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetUnsafe' });
    expect(await owned('ciliumclusterwidenetworkpolicies')).toHaveLength(0);
    expect(await owned('ciliumcidrgroups')).toHaveLength(1);
  });
});

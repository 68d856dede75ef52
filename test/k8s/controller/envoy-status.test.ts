// Envoy Gateway reports in each SecurityPolicy's status whether it enforces it: a policy it did not accept (a
// conflict with another SecurityPolicy on the same Gateway) or one overridden on some routes leaves those
// clients unblocked, and the subscription must say so. Envoy Gateway's controller does not run here (it needs its
// Envoy proxies), so this test writes the status it writes, through the status subresource of its own
// published CRD (make k8s-crds), whose schema validates it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequest, subscriptionKey } from '../../../controller/k8s.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import { FeedServer, applySubscription, condition, events, getSubscription, startController, syncNow, type Harness } from './support.ts';

const POLICIES = '/apis/gateway.envoyproxy.io/v1alpha1';
const CONTROLLER_NAME = 'gateway.envoyproxy.io/gatewayclass-controller';
/** The target's field; typed as a plain string so the spec need not spell out what the CRD defaults. */
const FIELD: string = 'envoySecurityPolicy';
const CONFLICT = 'Unable to target Gateway edge, another SecurityPolicy has already attached to it';

interface SecurityPolicy {
  metadata: { name: string; namespace: string; generation: number; resourceVersion: string };
  status?: unknown;
}

describe("the envoySecurityPolicy target and Envoy Gateway's status", () => {
  const feed = new FeedServer();
  let h: Harness;
  let home: string;
  const name = 'attackers';

  async function policy(): Promise<SecurityPolicy> {
    const selector = encodeURIComponent(`blockfeed.dev/subscription=${subscriptionKey({ metadata: { namespace: home, name } })}`);
    const list = JSON.parse(await apiRequest(h.apis, 'GET', `${POLICIES}/namespaces/${home}/securitypolicies?labelSelector=${selector}`)) as { items: SecurityPolicy[] };
    expect(list.items).toHaveLength(1);
    return list.items[0]!;
  }

  /** Writes the policy's status as Envoy Gateway does: one ancestor, the Gateway, with these conditions. */
  async function reportStatus(conditions: { type: string; status: 'True' | 'False'; reason: string; message: string }[]): Promise<void> {
    const current = await policy();
    const { generation } = current.metadata;
    const lastTransitionTime = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const body = {
      ...current,
      status: {
        ancestors: [
          {
            ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: home, name: 'edge' },
            controllerName: CONTROLLER_NAME,
            conditions: conditions.map((c) => ({ ...c, observedGeneration: generation, lastTransitionTime })),
          },
        ],
      },
    };
    await apiRequest(h.apis, 'PUT', `${POLICIES}/namespaces/${home}/securitypolicies/${current.metadata.name}/status`, { json: JSON.stringify(body) });
  }

  const degraded = async () => condition(await getSubscription(h, home, name), 'Degraded');

  beforeAll(async () => {
    await feed.start();
    feed.lines = ['203.0.113.7', '2001:db8:1::/64'];
    home = await freshNamespace('bls-envoy-status');
    h = await startController(home);
    await applySubscription(h, home, name, { feed: { url: feed.url, endpoint: 'export' }, interval: '6h', targets: [{ [FIELD]: { targetRefs: [{ kind: 'Gateway', name: 'edge' }] } }] });
    await eventually(async () => ((await degraded())?.status === 'False' ? true : undefined), 60_000, 'the first sync');
  });

  afterAll(async () => {
    await h?.stop();
    await feed.stop();
  });

  it('is Degraded while Envoy Gateway does not accept the policy, and says why', async () => {
    await reportStatus([{ type: 'Accepted', status: 'False', reason: 'Conflicted', message: CONFLICT }]);
    const reported = await eventually(async () => {
      const d = await degraded();
      return d?.status === 'True' ? d : undefined;
    }, 30_000, 'Degraded after the conflict');
    const policyName = (await policy()).metadata.name;
    expect(reported).toMatchObject({ reason: 'TargetNotEnforced' });
    expect(reported.message).toBe(`envoySecurityPolicy: SecurityPolicy ${home}/${policyName} is not enforced: Gateway ${home}/edge: Accepted False (Conflicted): ${CONFLICT}`);
    const sub = await getSubscription(h, home, name);
    expect(sub.status?.targets).toEqual([expect.objectContaining({ target: 'envoySecurityPolicy', state: 'Degraded', reason: 'TargetNotEnforced' })]);
    expect(await events(h, home, name)).toContainEqual(expect.objectContaining({ type: 'Warning', reason: 'TargetNotEnforced' }));
  });

  it('stays Degraded through a sync that reads nothing new, and writes nothing', async () => {
    const before = (await policy()).metadata.resourceVersion;
    const sub = await syncNow(h, home, name);
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetNotEnforced' });
    expect((await policy()).metadata.resourceVersion).toBe(before);
  });

  it('is Degraded after a restart too: the new process reads the status back', async () => {
    await h.stop();
    h = await startController(home);
    await eventually(async () => (h.controller.repairs > 0 ? true : undefined), 30_000, 'the start-up check');
    await h.controller.idle();
    expect(await degraded()).toMatchObject({ status: 'True', reason: 'TargetNotEnforced' });
  });

  it('clears once Envoy Gateway accepts the policy', async () => {
    await reportStatus([{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Policy has been accepted.' }]);
    await eventually(async () => ((await degraded())?.status === 'False' ? true : undefined), 30_000, 'Degraded to clear');
    expect((await getSubscription(h, home, name)).status?.targets).toEqual([expect.objectContaining({ state: 'Applied' })]);
  });

  it('is Degraded while other SecurityPolicies override it on some routes', async () => {
    const routes = `This policy is being overridden by other securityPolicies for these routes: [${home}/shop]`;
    await reportStatus([
      { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Policy has been accepted.' },
      { type: 'Overridden', status: 'True', reason: 'Overridden', message: routes },
    ]);
    const reported = await eventually(async () => {
      const d = await degraded();
      return d?.status === 'True' ? d : undefined;
    }, 30_000, 'Degraded after the override');
    expect(reported.message).toContain(`Gateway ${home}/edge: Overridden True (Overridden): ${routes}`);
  });
});

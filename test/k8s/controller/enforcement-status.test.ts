// Envoy Gateway, istiod and the Cilium operator report in each policy's status whether it is enforced as
// written: a SecurityPolicy Envoy Gateway did not accept (a conflict with another on the same Gateway) or that
// others override on some routes, an AuthorizationPolicy ztunnel enforces without its remoteIpBlocks, a
// CiliumClusterwideNetworkPolicy the agents would refuse; and the other side of an Envoy conflict, someone else's
// SecurityPolicy refused because ours holds the Gateway. The subscription must say so. None of these
// controllers runs here (each needs its proxies or agents), so these tests write the status they write,
// through the status subresource of each project's own published CRD (make k8s-crds), whose schema validates it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequest } from '../../../controller/runtime/k8s.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import { FeedServer, applySubscription, condition, events, getSubscription, ownedObjects, startController, syncNow, untilDegraded, type Harness } from '../../support/controller-harness.ts';

const POLICIES = '/apis/gateway.envoyproxy.io/v1alpha1';
const CONTROLLER_NAME = 'gateway.envoyproxy.io/gatewayclass-controller';
const CONFLICT = 'Unable to target Gateway edge, another SecurityPolicy has already attached to it';

interface Policy {
  metadata: { name: string; namespace?: string; generation: number; resourceVersion: string };
  status?: unknown;
}

/** A subscription with one target, its controller, and the one policy object the target writes. */
function scenario(field: string, target: Record<string, unknown>, collection: string) {
  const feed = new FeedServer();
  const name = 'attackers';
  // Set in beforeAll; the tests read it after.
  const s = {} as { h: Harness; home: string };

  const policy = async (): Promise<Policy> => {
    const items = (await ownedObjects(s.h, collection, s.home, name)) as Policy[];
    expect(items).toHaveLength(1);
    return items[0]!;
  };
  /** Writes the policy's status, as the enforcement point's controller does. */
  const reportStatus = async (status: (p: Policy) => unknown): Promise<void> => {
    const current = await policy();
    const { namespace } = current.metadata;
    const path = `${namespace ? collection.replace(/\/([a-z]+)$/, `/namespaces/${namespace}/$1`) : collection}/${current.metadata.name}/status`;
    await apiRequest(s.h.apis, 'PUT', path, { json: JSON.stringify({ ...current, status: status(current) }) });
  };
  const degraded = async () => condition(await getSubscription(s.h, s.home, name), 'Degraded');
  const degradedNow = () => untilDegraded(s.h, s.home, name, 'True', 30_000);
  const cleared = () => untilDegraded(s.h, s.home, name, 'False', 30_000);

  beforeAll(async () => {
    await feed.start();
    feed.lines = ['203.0.113.7', '2001:db8:1::/64'];
    s.home = await freshNamespace('bls-ep-status');
    s.h = await startController(s.home);
    await applySubscription(s.h, s.home, name, { feed: { url: feed.url, endpoint: 'export' }, interval: '6h', targets: [{ [field]: target }] });
    await untilDegraded(s.h, s.home, name, 'False');
  });

  afterAll(async () => {
    await s.h?.stop();
    await feed.stop();
  });

  return { s, feed, name, policy, reportStatus, degraded, degradedNow, cleared };
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

describe("the envoySecurityPolicy target and Envoy Gateway's status", () => {
  const { s: t, feed, name, policy, reportStatus, degraded, degradedNow, cleared } = scenario('envoySecurityPolicy', { targetRefs: [{ kind: 'Gateway', name: 'edge' }] }, `${POLICIES}/securitypolicies`);

  /** Envoy Gateway's status: one ancestor, the Gateway, with these conditions about the current generation. */
  const envoyStatus = (conditions: { type: string; status: 'True' | 'False'; reason: string; message: string }[]) => (p: Policy) => ({
    ancestors: [
      {
        ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: t.home, name: 'edge' },
        controllerName: CONTROLLER_NAME,
        conditions: conditions.map((c) => ({ ...c, observedGeneration: p.metadata.generation, lastTransitionTime: now() })),
      },
    ],
  });

  it('is Degraded while Envoy Gateway does not accept the policy, and says why', async () => {
    await reportStatus(envoyStatus([{ type: 'Accepted', status: 'False', reason: 'Conflicted', message: CONFLICT }]));
    const reported = await degradedNow();
    const policyName = (await policy()).metadata.name;
    expect(reported).toMatchObject({ reason: 'TargetNotEnforced' });
    expect(reported.message).toBe(`envoySecurityPolicy: SecurityPolicy ${t.home}/${policyName} is not enforced: Gateway ${t.home}/edge: Accepted False (Conflicted): ${CONFLICT}`);
    const sub = await getSubscription(t.h, t.home, name);
    expect(sub.status?.targets).toEqual([expect.objectContaining({ target: 'envoySecurityPolicy', state: 'Degraded', reason: 'TargetNotEnforced' })]);
    expect(await events(t.h, t.home, name)).toContainEqual(expect.objectContaining({ type: 'Warning', reason: 'TargetNotEnforced' }));
  });

  it('stays Degraded through a sync that reads nothing new, and writes nothing', async () => {
    const before = (await policy()).metadata.resourceVersion;
    const sub = await syncNow(t.h, t.home, name);
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetNotEnforced' });
    expect((await policy()).metadata.resourceVersion).toBe(before);
  });

  it('is Degraded after a restart too: the new process reads the status back', async () => {
    await t.h.stop();
    t.h = await startController(t.home);
    await eventually(async () => (t.h.controller.repairs > 0 ? true : undefined), 30_000, 'the start-up check');
    await t.h.controller.idle();
    expect(await degraded()).toMatchObject({ status: 'True', reason: 'TargetNotEnforced' });
  });

  it('stays Degraded through a new list, until Envoy Gateway reports on the new generation', async () => {
    const before = (await policy()).metadata.generation;
    feed.lines = [...feed.lines, '198.51.100.7'];
    const sub = await syncNow(t.h, t.home, name);
    expect((await policy()).metadata.generation).toBe(before + 1);
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetNotEnforced' });
    // still in conflict at the new generation
    await reportStatus(envoyStatus([{ type: 'Accepted', status: 'False', reason: 'Conflicted', message: CONFLICT }]));
    await t.h.controller.idle();
    expect(await degraded()).toMatchObject({ status: 'True', reason: 'TargetNotEnforced' });
  });

  it('clears once Envoy Gateway accepts the policy', async () => {
    await reportStatus(envoyStatus([{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Policy has been accepted.' }]));
    await cleared();
    expect((await getSubscription(t.h, t.home, name)).status?.targets).toEqual([expect.objectContaining({ state: 'Applied' })]);
  });

  it("is Degraded while someone else's SecurityPolicy on the same Gateway is refused as Conflicted, and names it", async () => {
    // Created after ours, it is the one Envoy Gateway refuses: one SecurityPolicy per target, the oldest.
    const theirs = `${POLICIES}/namespaces/${t.home}/securitypolicies`;
    const body = { apiVersion: 'gateway.envoyproxy.io/v1alpha1', kind: 'SecurityPolicy', metadata: { name: 'jwt-auth', namespace: t.home } };
    const spec = { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' }], authorization: { defaultAction: 'Deny' } };
    const created = JSON.parse(await apiRequest(t.h.apis, 'POST', theirs, { json: JSON.stringify({ ...body, spec }) })) as Policy;
    const conflict = 'Unable to target Gateway edge, another SecurityPolicy has already attached to it';
    await apiRequest(t.h.apis, 'PUT', `${theirs}/jwt-auth/status`, {
      json: JSON.stringify({ ...created, status: envoyStatus([{ type: 'Accepted', status: 'False', reason: 'Conflicted', message: conflict }])(created) }),
    });
    const reported = await degradedNow();
    expect(reported.reason).toBe('TargetContested');
    expect(reported.message).toBe(
      `envoySecurityPolicy: SecurityPolicy ${t.home}/jwt-auth attaches to Gateway edge too, and Envoy Gateway does not enforce it: Gateway ${t.home}/edge: Accepted False (Conflicted): ${conflict}`,
    );
    // Ours is enforced: the target holds the list.
    const sub = await getSubscription(t.h, t.home, name);
    expect(sub.status?.targets).toEqual([expect.objectContaining({ state: 'Degraded', reason: 'TargetContested', cidrs: sub.status!.cidrs })]);
    expect(await events(t.h, t.home, name)).toContainEqual(expect.objectContaining({ type: 'Warning', reason: 'TargetContested' }));

    // Theirs gone, the conflict is over.
    await apiRequest(t.h.apis, 'DELETE', `${theirs}/jwt-auth`);
    await cleared();
  });

  it('is Degraded while other SecurityPolicies override it on some routes', async () => {
    const routes = `This policy is being overridden by other securityPolicies for these routes: [${t.home}/shop]`;
    await reportStatus(
      envoyStatus([
        { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Policy has been accepted.' },
        { type: 'Overridden', status: 'True', reason: 'Overridden', message: routes },
      ]),
    );
    expect((await degradedNow()).message).toContain(`Gateway ${t.home}/edge: Overridden True (Overridden): ${routes}`);
  });
});

describe('a status written before the drift watch lists its kind', () => {
  const feed = new FeedServer();
  let h: Harness;
  afterAll(async () => {
    await h?.stop();
    await feed.stop();
  });

  // Envoy Gateway answers a new SecurityPolicy within milliseconds; the watch on SecurityPolicies starts with the
  // first one this process writes, so its first list can already show Envoy Gateway's status write. Here the
  // watch is held back until the status is written.
  it('is read all the same', async () => {
    await feed.start();
    feed.lines = ['203.0.113.7'];
    const home = await freshNamespace('bls-ep-early');
    h = await startController(home);
    const watchKind = h.apis.ledger.onNewResource!;
    const held: (() => void)[] = [];
    h.apis.ledger.onNewResource = (resource) => held.push(() => watchKind(resource));
    await applySubscription(h, home, 'early', { feed: { url: feed.url, endpoint: 'export' }, interval: '6h', targets: [{ envoySecurityPolicy: { targetRefs: [{ kind: 'Gateway', name: 'edge' }] } }] } as never);
    await untilDegraded(h, home, 'early', 'False');
    const [policy] = (await ownedObjects(h, `${POLICIES}/securitypolicies`, home, 'early')) as Policy[];
    const ancestors = [
      {
        ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: home, name: 'edge' },
        controllerName: CONTROLLER_NAME,
        conditions: [{ type: 'Accepted', status: 'False', reason: 'Conflicted', message: CONFLICT, observedGeneration: policy!.metadata.generation, lastTransitionTime: now() }],
      },
    ];
    await apiRequest(h.apis, 'PUT', `${POLICIES}/namespaces/${home}/securitypolicies/${policy!.metadata.name}/status`, { json: JSON.stringify({ ...policy, status: { ancestors } }) });
    for (const start of held) start();
    expect((await untilDegraded(h, home, 'early', 'True', 30_000)).reason).toBe('TargetNotEnforced');
  });
});

describe("the istioAuthorizationPolicy target and istiod's status", () => {
  const target = { selector: { matchLabels: { app: 'web' } }, clientAddress: 'RemoteIp' };
  const { s: t, policy, reportStatus, degradedNow, cleared } = scenario('istioAuthorizationPolicy', target, '/apis/security.istio.io/v1/authorizationpolicies');
  const UNSUPPORTED =
    'ztunnel does not support HTTP attributes (found: remoteIpBlocks). In ambient mode you must use a waypoint proxy to enforce HTTP rules. ' +
    'DENY policy with HTTP attributes is enforced without the HTTP rules. This will be more restrictive than requested.';
  /** istiod's status: one condition about the current generation (an int-or-string in Istio's schema). */
  const istioStatus = (reason: string, message: string) => (p: Policy) => ({
    conditions: [{ type: 'ZtunnelAccepted', status: 'True', reason, message, observedGeneration: String(p.metadata.generation), lastTransitionTime: now() }],
  });

  it('is Degraded while ztunnel enforces the policy without its remoteIpBlocks, and says why', async () => {
    await reportStatus(istioStatus('UnsupportedValue', UNSUPPORTED));
    const reported = await degradedNow();
    expect(reported).toMatchObject({ reason: 'TargetNotEnforced' });
    expect(reported.message).toBe(
      `istioAuthorizationPolicy: AuthorizationPolicy ${t.home}/${(await policy()).metadata.name} is not enforced: ZtunnelAccepted True (UnsupportedValue): ${UNSUPPORTED}`,
    );
  });

  it('clears once istiod says ztunnel enforces it', async () => {
    await reportStatus(istioStatus('Accepted', 'attached to ztunnel'));
    await cleared();
  });
});

describe("the ciliumCIDRGroup target and the Cilium operator's status", () => {
  const target = { policy: { endpointSelector: { matchLabels: { exposure: 'public' } } } };
  const { policy, reportStatus, degradedNow, cleared } = scenario('ciliumCIDRGroup', target, '/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies');
  const INVALID = 'FromNodes/ToNodes rules can only be applied when the "enable-node-selector-labels" flag is set';
  /** The operator's status: its one condition, with no reason and no generation, as Cilium writes it. */
  const ciliumStatus = (status: 'True' | 'False', message: string) => () => ({ conditions: [{ type: 'Valid', status, message, lastTransitionTime: now() }] });

  it('is Degraded while the operator finds the policy invalid, and says why', async () => {
    await reportStatus(ciliumStatus('False', INVALID));
    const reported = await degradedNow();
    expect(reported).toMatchObject({ reason: 'TargetNotEnforced' });
    expect(reported.message).toBe(`ciliumCIDRGroup: CiliumClusterwideNetworkPolicy ${(await policy()).metadata.name} is not enforced: Valid False: ${INVALID}`);
  });

  it('clears once the operator finds it valid', async () => {
    await reportStatus(ciliumStatus('True', 'Policy validation succeeded'));
    await cleared();
  });
});

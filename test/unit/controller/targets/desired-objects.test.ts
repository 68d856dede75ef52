import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { desiredRecord, listHash } from '../../../../controller/runtime/applied-record.ts';
import { subscriptionKey } from '../../../../controller/runtime/k8s.ts';
import { desiredCalicoObjects, networkSetSelector } from '../../../../controller/targets/calico-global-network-set.ts';
import { ciliumRefusal, desiredCiliumObjects, forcedDefaultDeny } from '../../../../controller/targets/cilium-cidr-group.ts';
import { desiredConfigMaps } from '../../../../controller/targets/configmap.ts';
import { contestedPolicies, desiredSecurityPolicies, envoyRefusal } from '../../../../controller/targets/envoy-security-policy.ts';
import { mergeDenylist, unmergeDenylist } from '../../../../controller/targets/ingress-nginx.ts';
import { desiredAuthorizationPolicies, istioRefusal } from '../../../../controller/targets/istio-authorization-policy.ts';
import { desiredPolicies, policySpec } from '../../../../controller/targets/networkpolicy.ts';
import type { Shard } from '../../../../controller/targets/shards.ts';
import { splitFamilies } from '../../../../controller/targets/types.ts';

describe('ingress-nginx deny-list merge', () => {
  it("keeps the owner's entries first and remembers only what it added", () => {
    expect(mergeDenylist('192.0.2.1/32, 203.0.113.0/24', undefined, ['203.0.113.0/24', '45.33.32.156/32'])).toEqual({
      value: '192.0.2.1/32,203.0.113.0/24,45.33.32.156/32',
      ours: '45.33.32.156/32',
    });
  });

  it('replaces its previous entries, never the owner ones', () => {
    const first = mergeDenylist('192.0.2.1/32', undefined, ['45.33.32.156/32', '45.33.32.157/32']);
    const second = mergeDenylist(first.value, first.ours, ['45.33.32.158/32']);
    expect(second).toEqual({ value: '192.0.2.1/32,45.33.32.158/32', ours: '45.33.32.158/32' });
    expect(unmergeDenylist(second.value, second.ours)).toBe('192.0.2.1/32');
    expect(unmergeDenylist('45.33.32.158/32', '45.33.32.158/32')).toBeUndefined();
  });
});

describe('NetworkPolicy spec', () => {
  it('allows everything except the list, per family, in one rule, plus in-cluster peers', () => {
    const list = splitFamilies(['45.33.32.156/32', '198.51.100.0/24', '2001:db8::/32']);
    expect(policySpec({ namespaceSelector: {}, direction: 'Ingress' }, list)).toEqual({
      podSelector: {},
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [
            { ipBlock: { cidr: '0.0.0.0/0', except: ['45.33.32.156/32', '198.51.100.0/24'] } },
            { ipBlock: { cidr: '::/0', except: ['2001:db8::/32'] } },
            { namespaceSelector: {} },
          ],
        },
      ],
    });
    const egress = policySpec({ namespaceSelector: {}, direction: 'Egress', podSelector: { matchLabels: { app: 'web' } } }, splitFamilies([]));
    expect(egress).toEqual({
      podSelector: { matchLabels: { app: 'web' } },
      policyTypes: ['Egress'],
      egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }, { ipBlock: { cidr: '::/0' } }, { namespaceSelector: {} }] }],
    });
  });
});

const sub = {
  apiVersion: 'blockfeed.dev/v1alpha1' as const,
  kind: 'BlocklistSubscription' as const,
  metadata: { name: 'attackers', namespace: 'team-a', uid: 'u-1' },
  spec: { feed: { url: 'http://feed', endpoint: 'export' as const }, safety: { maxEntries: 10, minPrefixV4: 16, minPrefixV6: 32, maxShrinkPercent: 50 }, targets: [] },
};

describe('desired objects', () => {
  const list = splitFamilies(['45.33.32.156/32', '2001:db8::/32']);

  it('one NetworkPolicy per namespace, sharing one spec, owned by the subscription only in its own namespace', () => {
    const policies = desiredPolicies({ sub, list }, { namespaceSelector: {}, direction: 'Ingress' }, ['web', 'team-a']);
    expect(policies.map((p) => p.namespace)).toEqual(['team-a', 'web']);
    expect(new Set(policies.map((p) => p.name)).size).toBe(1);
    expect(policies[0]!.content).toBe(policies[1]!.content);
    expect(policies[0]!.ownerReferences).toEqual([expect.objectContaining({ kind: 'BlocklistSubscription', uid: 'u-1' })]);
    expect(policies[1]!.ownerReferences).toBeUndefined();
    expect(policies[0]!.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'blockfeed-controller', 'blockfeed.dev/target': 'networkPolicy' });
  });

  it('ConfigMap shards named <name>, <name>-<key>, ... with the CIDR count of each; one CIDR more rewrites one', () => {
    const cidrs = Array.from({ length: 70_000 }, (_, i) => `45.${Math.floor(i / 32768)}.${Math.floor(i / 128) % 256}.${(2 * i) % 256}/32`);
    const shards = desiredConfigMaps({ sub, list: splitFamilies(cidrs) }, { name: 'lists', formats: ['txt', 'nginx'] });
    expect(shards.length).toBeGreaterThan(2);
    expect(shards[0]!.name).toBe('lists');
    for (const s of shards.slice(1)) expect(s.name).toMatch(/^lists-[0-9a-z]{8}$/);
    expect(shards.map((s) => s.labels['blockfeed.dev/shard'])).toEqual(['0', ...shards.slice(1).map((s) => s.name.slice('lists-'.length))]);
    expect(shards.reduce((n, s) => n + Number(s.annotations['blockfeed.dev/cidrs']), 0)).toBe(70_000);
    // An address added at the front: the first shard changes, the others are the same objects.
    const grown = desiredConfigMaps({ sub, list: splitFamilies(['45.0.0.0/32', '45.0.0.1/32', ...cidrs.slice(1)]) }, { name: 'lists', formats: ['txt', 'nginx'] });
    expect(grown.map((s) => s.name)).toEqual(shards.map((s) => s.name));
    expect(grown.filter((s, i) => JSON.stringify(s) !== JSON.stringify(shards[i])).map((s) => s.name)).toEqual(['lists']);
  });

  it('the record of the applied list is deterministic and holds the list exactly', async () => {
    const record = { inputsHash: 'h', lines: list.all, entries: 2 };
    const [a, b] = [await desiredRecord(sub, record), await desiredRecord(sub, record)];
    expect(a).toEqual(b);
    expect(a).toHaveLength(1);
    const packed = Buffer.from((a[0]!.content.binaryData as Record<string, string>)['list.gz']!, 'base64');
    expect(gunzipSync(packed).toString()).toBe(list.all.join('\n'));
    expect(a[0]!.annotations['blockfeed.dev/list-hash']).toBe(listHash(list.all));
  });
});

/** A part of a cut list (targets/shards.ts) with a given key. */
const part = (key: string, ...cidrs: string[]): Shard => ({ key, cidrs });

describe('enforcement point objects', () => {
  const list = splitFamilies(['45.33.32.156/32', '198.51.100.0/25', '2001:db8::/32']);

  it('Envoy: one SecurityPolicy per namespace of the targetRefs, the list denied in one rule; none for an empty list', () => {
    const target = {
      maxCIDRs: 10_000,
      targetRefs: [
        { group: 'gateway.networking.k8s.io', kind: 'Gateway' as const, name: 'edge' },
        { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' as const, name: 'shop', namespace: 'web', sectionName: 'checkout' },
        { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' as const, name: 'api', namespace: 'web' },
        // given twice: attached once
        { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' as const, name: 'api', namespace: 'web' },
        { group: 'gateway.networking.k8s.io', kind: 'Gateway' as const, name: 'edge', namespace: 'team-a' },
      ],
    };
    const policies = desiredSecurityPolicies({ sub, list }, target);
    expect(policies.map((p) => p.namespace)).toEqual(['team-a', 'web']);
    expect((policies[0]!.content.spec as { targetRefs: unknown[] }).targetRefs).toEqual([{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' }]);
    expect(policies[1]!.content).toEqual({
      spec: {
        targetRefs: [
          { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop', sectionName: 'checkout' },
          { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'api' },
        ],
        authorization: { defaultAction: 'Allow', rules: [{ name: 'blockfeed-deny-list', action: 'Deny', principal: { clientCIDRs: list.all } }] },
      },
    });
    expect(desiredSecurityPolicies({ sub, list: splitFamilies([]) }, target)).toEqual([]);
  });

  it("Envoy: a targetRef as the apiserver stores it, with '' for the defaults, is the subscription's namespace and the whole object", () => {
    const stored = { group: 'gateway.networking.k8s.io', kind: 'Gateway' as const, name: 'edge', sectionName: '', namespace: '' };
    const policies = desiredSecurityPolicies({ sub, list }, { maxCIDRs: 10_000, targetRefs: [stored, { ...stored, namespace: sub.metadata.namespace }] });
    expect(policies.map((p) => p.namespace)).toEqual([sub.metadata.namespace]);
    expect((policies[0]!.content.spec as { targetRefs: unknown[] }).targetRefs).toEqual([{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' }]);
  });

  it("reads istiod's ambient verdicts on an AuthorizationPolicy from its status, for its current generation only", () => {
    const policy = (...conditions: Record<string, string | number>[]) => ({ metadata: { generation: 2 }, status: { conditions } });
    expect(istioRefusal({ metadata: { generation: 2 } })).toBeUndefined();
    expect(istioRefusal(policy({ type: 'ZtunnelAccepted', status: 'True', reason: 'Accepted', message: 'attached to ztunnel', observedGeneration: '2' }))).toBeUndefined();
    // accepted without what ztunnel cannot enforce: not the policy as written
    expect(istioRefusal(policy({ type: 'ZtunnelAccepted', status: 'True', reason: 'UnsupportedValue', message: 'ztunnel does not support HTTP attributes', observedGeneration: 2 }))).toBe(
      'ZtunnelAccepted True (UnsupportedValue): ztunnel does not support HTTP attributes',
    );
    expect(istioRefusal(policy({ type: 'WaypointAccepted', status: 'False', reason: 'Invalid', message: 'no waypoint', observedGeneration: '2' }))).toBe('WaypointAccepted False (Invalid): no waypoint');
    // an older generation's verdict, and conditions about other things, say nothing
    expect(istioRefusal(policy({ type: 'ZtunnelAccepted', status: 'False', reason: 'Invalid', message: 'old', observedGeneration: '1' }))).toBeUndefined();
    expect(istioRefusal(policy({ type: 'Reconciled', status: 'False', reason: 'Pending', message: '', observedGeneration: 2 }))).toBeUndefined();
  });

  it("reads the Cilium operator's verdict on a policy from its status", () => {
    const policy = (...conditions: Record<string, string>[]) => ({ metadata: { generation: 4 }, status: { conditions } });
    expect(ciliumRefusal({ metadata: { generation: 1 } })).toBeUndefined();
    expect(ciliumRefusal(policy({ type: 'Valid', status: 'True', message: 'Policy validation succeeded' }))).toBeUndefined();
    // the operator sets no reason: the message is the agents' validation error
    expect(ciliumRefusal(policy({ type: 'Valid', status: 'False', message: 'rule cannot have both EndpointSelector and NodeSelector' }))).toBe(
      'Valid False: rule cannot have both EndpointSelector and NodeSelector',
    );
    expect(ciliumRefusal(policy({ type: 'Ready', status: 'False', message: 'something else' }))).toBeUndefined();
  });

  it("finds Cilium agents that would ignore the policy's enableDefaultDeny in their configuration", () => {
    const config = (namespace: string, data?: Record<string, string>) => ({ metadata: { namespace }, data });
    // none found, or one that does not say: Cilium's default (on)
    expect(forcedDefaultDeny([])).toBeUndefined();
    expect(forcedDefaultDeny([config('kube-system', { 'enable-policy': 'default' })])).toBeUndefined();
    expect(forcedDefaultDeny([config('kube-system', { 'enable-non-default-deny-policies': 'true' })])).toBeUndefined();
    // false as the agents read it (Go's ParseBool), in whichever namespace Cilium runs
    for (const off of ['false', 'False', 'FALSE', '0', 'f']) {
      expect(forcedDefaultDeny([config('kube-system'), config('cilium', { 'enable-non-default-deny-policies': off })])).toBe(
        "Cilium's agents run with enable-non-default-deny-policies=false (ConfigMap cilium/cilium-config), so they ignore enableDefaultDeny and the policy would put every endpoint it selects into default deny",
      );
    }
  });

  it("reads Envoy Gateway's refusals of a SecurityPolicy from its status, for its current generation only", () => {
    const gateway = { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'web', name: 'edge' };
    const condition = (type: string, status: string, reason: string, message: string, observedGeneration = 3) => ({ type, status, reason, message, observedGeneration });
    const policy = (...ancestors: { ancestorRef: Record<string, string>; conditions: ReturnType<typeof condition>[] }[]) => ({
      metadata: { generation: 3 },
      status: { ancestors: ancestors.map((a) => ({ ...a, controllerName: 'gateway.envoyproxy.io/gatewayclass-controller' })) },
    });
    expect(envoyRefusal({ metadata: { generation: 1 } })).toBeUndefined();
    expect(envoyRefusal(policy({ ancestorRef: gateway, conditions: [condition('Accepted', 'True', 'Accepted', 'Policy has been accepted.')] }))).toBeUndefined();
    const conflicted = condition('Accepted', 'False', 'Conflicted', 'Unable to target Gateway web/edge, another SecurityPolicy has already attached to it');
    expect(envoyRefusal(policy({ ancestorRef: gateway, conditions: [conflicted] }))).toBe(
      'Gateway web/edge: Accepted False (Conflicted): Unable to target Gateway web/edge, another SecurityPolicy has already attached to it',
    );
    // accepted for the Gateway, but other policies take its place on some routes
    const overridden = condition('Overridden', 'True', 'Overridden', 'This policy is being overridden by other securityPolicies for these routes: [web/shop]');
    const listener = { ...gateway, sectionName: 'https' };
    expect(envoyRefusal(policy({ ancestorRef: listener, conditions: [condition('Accepted', 'True', 'Accepted', 'ok'), overridden] }))).toBe(
      'Gateway web/edge/https: Overridden True (Overridden): This policy is being overridden by other securityPolicies for these routes: [web/shop]',
    );
    // a status about an older generation says nothing about this one
    expect(envoyRefusal(policy({ ancestorRef: gateway, conditions: [{ ...conflicted, observedGeneration: 2 }] }))).toBeUndefined();
    // every refusing ancestor is named
    const route = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'web', name: 'shop' };
    expect(envoyRefusal(policy({ ancestorRef: gateway, conditions: [conflicted] }, { ancestorRef: route, conditions: [condition('Accepted', 'False', 'Invalid', 'no such route')] }))).toMatch(
      /^Gateway web\/edge: .*; HTTPRoute web\/shop: Accepted False \(Invalid\): no such route$/,
    );
  });

  it("names others' SecurityPolicies on a target ours attaches to that Envoy Gateway refuses as Conflicted", () => {
    const [ours] = desiredSecurityPolicies(
      { sub, list: splitFamilies(['45.33.32.156/32']) },
      { maxCIDRs: 10, targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' }, { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop', sectionName: 'cart' }] },
    );
    const gateway = { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'team-a', name: 'edge' };
    const conflicted = { type: 'Accepted', status: 'False', reason: 'Conflicted', message: 'Unable to target Gateway edge, another SecurityPolicy has already attached to it', observedGeneration: 2 };
    const theirs = (name: string, spec: Record<string, unknown>, conditions: Record<string, unknown>[], namespace = 'team-a') => ({
      metadata: { namespace, name, generation: 2 },
      spec,
      status: { ancestors: [{ ancestorRef: gateway, conditions }] },
    });
    const edge = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' };
    expect(contestedPolicies([ours!], [theirs('jwt', { targetRefs: [edge] }, [conflicted])])).toEqual([
      'SecurityPolicy team-a/jwt attaches to Gateway edge too, and Envoy Gateway does not enforce it: Gateway team-a/edge: Accepted False (Conflicted): Unable to target Gateway edge, another SecurityPolicy has already attached to it',
    ]);
    // the older targetRef field, a route rule
    expect(contestedPolicies([ours!], [theirs('cors', { targetRef: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop', sectionName: 'cart' } }, [conflicted])])[0]).toMatch(
      /^SecurityPolicy team-a\/cors attaches to HTTPRoute shop\/cart too/,
    );
    // not contested: accepted, refused for another reason, about an older generation, other targets, another namespace
    expect(
      contestedPolicies(
        [ours!],
        [
          theirs('ok', { targetRefs: [edge] }, [{ ...conflicted, status: 'True', reason: 'Accepted' }]),
          theirs('invalid', { targetRefs: [edge] }, [{ ...conflicted, reason: 'Invalid' }]),
          theirs('stale', { targetRefs: [edge] }, [{ ...conflicted, observedGeneration: 1 }]),
          theirs('listener', { targetRefs: [{ ...edge, sectionName: 'https' }] }, [conflicted]),
          theirs('elsewhere', { targetRefs: [edge] }, [conflicted], 'team-b'),
        ],
      ),
    ).toEqual([]);
  });

  it('Istio: one DENY policy per part, remoteIpBlocks or ipBlocks, attached by selector or targetRefs', () => {
    const remote = desiredAuthorizationPolicies({ sub }, { maxCIDRs: 10, clientAddress: 'RemoteIp', selector: { matchLabels: { istio: 'ingressgateway' } } }, [part('0', '45.33.32.156/32'), part('k6', '2001:db8::/32')]);
    expect(remote.map((p) => p.name)).toEqual([expect.stringMatching(/^blockfeed-attackers-[0-9a-f]{8}-0$/), expect.stringMatching(/-k6$/)]);
    expect(remote[1]!.content).toEqual({ spec: { action: 'DENY', selector: { matchLabels: { istio: 'ingressgateway' } }, rules: [{ from: [{ source: { remoteIpBlocks: ['2001:db8::/32'] } }] }] } });
    const peer = desiredAuthorizationPolicies({ sub }, { maxCIDRs: 10, clientAddress: 'PeerIp', namespace: 'istio-system', targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' }] }, [part('0', '45.33.32.156/32')]);
    expect(peer[0]).toMatchObject({ namespace: 'istio-system', ownerReferences: undefined });
    expect(peer[0]!.content).toEqual({ spec: { action: 'DENY', targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' }], rules: [{ from: [{ source: { ipBlocks: ['45.33.32.156/32'] } }] }] } });
  });

  it('Cilium: groups, and a deny-only policy selecting them by label that leaves default deny off', () => {
    const { groups, policy } = desiredCiliumObjects({ sub }, { maxCIDRs: 10, policy: { enabled: true } }, [part('0', '45.33.32.156/32'), part('k6', '2001:db8::/32')]);
    expect(groups.map((g) => g.content)).toEqual([{ spec: { externalCIDRs: ['45.33.32.156/32'] } }, { spec: { externalCIDRs: ['2001:db8::/32'] } }]);
    expect(groups.map((g) => g.name)).toEqual([expect.stringMatching(/-0$/), expect.stringMatching(/-k6$/)]);
    const groupLabels = { 'blockfeed.dev/subscription': subscriptionKey(sub), 'blockfeed.dev/target': 'ciliumCIDRGroup' };
    for (const g of groups) expect(g.labels).toMatchObject(groupLabels);
    expect(policy[0]!.content.spec).toMatchObject({
      endpointSelector: {},
      enableDefaultDeny: { ingress: false, egress: false },
      ingressDeny: [{ fromCIDRSet: [{ cidrGroupSelector: { matchLabels: groupLabels } }] }],
    });
    // The policy does not depend on how the list is cut.
    expect(desiredCiliumObjects({ sub }, { maxCIDRs: 10, policy: { enabled: true } }, [part('0', '45.33.32.156/32')]).policy).toEqual(policy);
    expect(desiredCiliumObjects({ sub }, { maxCIDRs: 10, policy: { enabled: true, nodeSelector: { matchLabels: { edge: 'true' } } } }, [part('0', '45.33.32.156/32')]).policy[0]!.content.spec).toMatchObject({
      nodeSelector: { matchLabels: { edge: 'true' } },
    });
    expect(desiredCiliumObjects({ sub }, { maxCIDRs: 10, policy: { enabled: false } }, [part('0', '45.33.32.156/32')]).policy).toEqual([]);
    expect(desiredCiliumObjects({ sub }, { maxCIDRs: 10, policy: { enabled: true } }, [])).toEqual({ groups: [], policy: [] });
  });

  it('Calico: sets, and a pre-DNAT policy of the default tier denying what selects them', () => {
    const { sets, policy } = desiredCalicoObjects({ sub }, { maxCIDRs: 10, policy: { enabled: true, order: 5, selector: 'all()' } }, [part('0', '45.33.32.156/32', '2001:db8::/32')]);
    expect(sets[0]!.content).toEqual({ spec: { nets: ['45.33.32.156/32', '2001:db8::/32'] } });
    expect(sets[0]!.name).toMatch(/^blockfeed-attackers-[0-9a-f]{8}-0$/);
    expect(policy[0]!.name).toMatch(/^default\.blockfeed-attackers-/);
    expect(policy[0]!.content.spec).toEqual({
      order: 5,
      selector: 'all()',
      preDNAT: true,
      applyOnForward: true,
      types: ['Ingress'],
      ingress: [{ action: 'Deny', source: { selector: networkSetSelector(sub) } }],
    });
    expect(networkSetSelector(sub)).toMatch(/^blockfeed\.dev\/subscription == '[0-9a-f]{16}' && blockfeed\.dev\/target == 'calicoGlobalNetworkSet'$/);
  });
});

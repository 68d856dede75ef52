// Safety and fail-static against a real apiserver and a real feed: the allowlist wins, over-broad and reserved
// entries never reach a policy, a 90% shrink is refused, and every feed failure leaves the last list in force
// with Degraded saying why. Also: the CRD's CEL rules refuse what the api-server would refuse.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '../../../controller/runtime/k8s.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import { FeedServer, applySubscription, condition, events, getSubscription, patchSubscription, startController, syncNow, type Harness } from '../../support/controller-harness.ts';

const feed = new FeedServer();
let h: Harness;
let ns: string;

const many = Array.from({ length: 100 }, (_, i) => `45.76.${Math.floor(i / 50)}.${(i % 50) * 2 + 1}`);

async function listTxt(): Promise<string[]> {
  const cm = await h.core.readNamespacedConfigMap({ name: 'list', namespace: ns });
  return cm.data!['list.txt']!.split('\n').filter(Boolean);
}

async function policyExcept(): Promise<string[]> {
  const [p] = (await h.net.listNamespacedNetworkPolicy({ namespace: ns })).items;
  return p!.spec!.ingress![0]!._from!.flatMap((peer) => peer.ipBlock?.except ?? []);
}

async function degradedGauge(): Promise<number | undefined> {
  const metric = await h.metrics.degraded.get();
  return metric.values.find((v) => v.labels.namespace === ns && v.labels.name === 'guarded')?.value;
}

beforeAll(async () => {
  await feed.start();
  ns = await freshNamespace('bls-safety');
  h = await startController(ns, { clusterCidrs: ['45.77.0.0/16'] });
  await h.core.patchNamespace(
    { name: ns, body: { metadata: { labels: { 'blockfeed.dev/protect': ns } } } },
    mergePatch,
  );
});

afterAll(async () => {
  await h?.stop();
  await feed.stop();
});

describe('safety', () => {
  it('lets the allowlist win and never applies 0.0.0.0/0, a /8, reserved or cluster ranges', async () => {
    feed.lines = [...many, '0.0.0.0/0', '45.0.0.0/8', '10.1.2.3', '127.0.0.1', '169.254.1.1', '100.64.0.1', '224.0.0.5', '::1', 'fe80::1', '45.77.1.1', '198.51.100.0/24'];
    await applySubscription(h, ns, 'guarded', {
      feed: { url: feed.url, endpoint: 'dedup', filters: { hours: 24 }, timeoutSeconds: 1, maxBodyBytes: 100_000 },
      allowlist: ['198.51.100.128/25', '45.76.0.1'],
      targets: [
        { configMap: { name: 'list', formats: ['txt'] } },
        { networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': ns } }, direction: 'Ingress' } },
      ],
    });
    const sub = await eventually(async () => {
      const s = await getSubscription(h, ns, 'guarded');
      return condition(s, 'Ready')?.status === 'True' ? s : undefined;
    }, 60_000, 'Ready');
    const txt = await listTxt();
    expect(txt).toContain('198.51.100.0/25'); // the hole punched in a wider entry
    expect(txt.some((c) => c.startsWith('198.51.100.128'))).toBe(false);
    expect(txt).not.toContain('45.76.0.1/32');
    for (const bad of ['0.0.0.0/0', '45.0.0.0/8', '10.1.2.3/32', '127.0.0.1/32', '169.254.1.1/32', '100.64.0.1/32', '224.0.0.5/32', '::1/128', 'fe80::1/128', '45.77.1.1/32']) {
      expect(txt).not.toContain(bad);
    }
    expect(txt).toHaveLength(100); // 99 addresses + 198.51.100.0/25
    expect(await policyExcept()).toEqual(txt);
    expect(sub.status!.message).toMatch(/dropped: .*never_block 7.*cluster 1.*allowlist 1.*too_broad 2/);
  });

  it('refuses a feed that shrank by 90% and keeps the last list', async () => {
    const before = await listTxt();
    feed.lines = many.slice(0, 10);
    const sub = await syncNow(h, ns, 'guarded');
    expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'ShrankTooMuch' });
    expect(condition(sub, 'Synced')).toMatchObject({ status: 'False', reason: 'ShrankTooMuch' });
    expect(condition(sub, 'Ready')?.status).toBe('True');
    expect(await degradedGauge()).toBe(1); // what the chart's BlockfeedSubscriptionDegraded alert watches
    expect(await listTxt()).toEqual(before);
    expect((await events(h, ns, 'guarded')).some((e) => e.type === 'Warning' && e.reason === 'ShrankTooMuch')).toBe(true);
  });

  it.each([
    ['error500', 'FeedHttpError', /HTTP 500/],
    ['hang', 'FeedTimeout', /within 1s/],
    ['garbage', 'FeedUnparseable', /not a list/],
    ['oversized', 'FeedTooLarge', /100000-byte limit/],
  ] as const)('keeps the last list in force when the feed answers %s', async (mode, reason, message) => {
    feed.lines = [...many, '198.51.100.0/24'];
    const before = await listTxt();
    const policyBefore = (await h.net.listNamespacedNetworkPolicy({ namespace: ns })).items[0]!.metadata!.resourceVersion;
    feed.mode = mode;
    try {
      const sub = await syncNow(h, ns, 'guarded');
      expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason });
      expect(condition(sub, 'Degraded')!.message).toMatch(message);
      expect(condition(sub, 'Degraded')!.message).toMatch(/last applied list stays in force/);
      expect(await listTxt()).toEqual(before);
      expect((await h.net.listNamespacedNetworkPolicy({ namespace: ns })).items[0]!.metadata!.resourceVersion).toBe(policyBefore);
    } finally {
      feed.mode = 'ok';
    }
    // and recovers once the feed is healthy again
    const ok = await syncNow(h, ns, 'guarded');
    expect(condition(ok, 'Degraded')?.status).toBe('False');
    expect(await degradedGauge()).toBe(0);
  });
});

describe('a list too large for one NetworkPolicy', () => {
  it('is Degraded, never split: no policy is written, the other targets still get the list', async () => {
    const big = new FeedServer();
    await big.start();
    try {
      // every other address: nothing aggregates, 60,000 CIDRs (over the 1 MiB policy budget)
      big.lines = Array.from({ length: 60_000 }, (_, i) => `45.${80 + Math.floor(i / 32768)}.${Math.floor((i % 32768) / 128)}.${(i % 128) * 2}`);
      await applySubscription(h, ns, 'huge', {
        feed: { url: big.url, endpoint: 'export' },
        safety: { maxEntries: 100_000, minPrefixV4: 16, minPrefixV6: 32, maxShrinkPercent: 50 },
        targets: [
          { networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': ns } }, direction: 'Ingress' } },
          { configMap: { name: 'huge', formats: ['txt'] } },
        ],
      });
      const sub = await eventually(async () => {
        const s = await getSubscription(h, ns, 'huge');
        return s.status?.lastSyncTime ? s : undefined;
      }, 60_000, 'a sync');
      expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetTooLarge' });
      expect(condition(sub, 'Degraded')!.message).toMatch(/does not fit one NetworkPolicy/);
      expect(sub.status!.cidrs).toBe(60_000);
      const policies = (await h.net.listNamespacedNetworkPolicy({ namespace: ns })).items.filter((p) => p.metadata!.name!.includes('huge'));
      expect(policies).toEqual([]);
      // in <name> and the shards after it
      const shards = (await h.core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'blockfeed.dev/configmap=huge' })).items;
      expect(shards.map((cm) => cm.metadata!.name)).toContain('huge');
      expect(shards.flatMap((cm) => cm.data!['list.txt']!.split('\n').filter(Boolean))).toHaveLength(60_000);
      expect((await events(h, ns, 'huge')).some((e) => e.type === 'Warning' && e.reason === 'TargetTooLarge')).toBe(true);
    } finally {
      await big.stop();
    }
  });

  it('keeps the last list in force when a new one outgrows the policy, and the status and gauge say so', async () => {
    const growing = new FeedServer();
    await growing.start();
    try {
      growing.lines = ['45.81.0.1', '45.81.0.3', '45.81.0.5'];
      await applySubscription(h, ns, 'outgrown', {
        feed: { url: growing.url, endpoint: 'export' },
        safety: { maxEntries: 100_000, minPrefixV4: 16, minPrefixV6: 32, maxShrinkPercent: 50 },
        targets: [{ networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': ns } }, direction: 'Ingress' } }],
      });
      await eventually(async () => (condition(await getSubscription(h, ns, 'outgrown'), 'Ready')?.status === 'True' ? true : undefined), 60_000, 'Ready');
      growing.lines = Array.from({ length: 60_000 }, (_, i) => `45.${80 + Math.floor(i / 32768)}.${Math.floor((i % 32768) / 128)}.${(i % 128) * 2}`);
      const sub = await syncNow(h, ns, 'outgrown');
      expect(condition(sub, 'Degraded')).toMatchObject({ status: 'True', reason: 'TargetTooLarge' });
      expect(sub.status!.targets).toEqual([expect.objectContaining({ target: 'networkPolicy', state: 'Degraded', cidrs: 3 })]);
      const policy = (await h.net.listNamespacedNetworkPolicy({ namespace: ns })).items.find((p) => p.metadata!.name!.includes('outgrown'));
      expect(policy!.spec!.ingress![0]!._from!.flatMap((peer) => peer.ipBlock?.except ?? [])).toEqual(['45.81.0.1/32', '45.81.0.3/32', '45.81.0.5/32']);
      const held = async () => (await h.metrics.targetCidrs.get()).values.find((v) => v.labels.namespace === ns && v.labels.name === 'outgrown');
      expect((await held())?.value).toBe(3);

      // Deleted, it reports nothing: no stale series of what a gone subscription held.
      await h.custom.deleteNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: ns, plural: 'blocklistsubscriptions', name: 'outgrown' });
      await eventually(async () => ((await held()) === undefined ? true : undefined), 30_000, 'the per-target series removed');
    } finally {
      await growing.stop();
    }
  });
});

describe('CRD validation (CEL)', () => {
  const base = () => ({ feed: { url: feed.url, endpoint: 'export' }, targets: [{ configMap: { name: 'x', formats: ['txt'] } }] });
  const refuse = async (name: string, spec: unknown, pattern: RegExp) => {
    const err = await applySubscription(h, ns, name, spec as never).catch((e: unknown) => e);
    expect(String((err as { body?: unknown }).body ?? err)).toMatch(pattern);
  };

  it('refuses schedule with interval, a short interval, foreign filters, too many hours, two kinds in a target, conflicting targets', async () => {
    await refuse('both', { ...base(), schedule: '0 4 * * *', interval: '6h' }, /schedule or interval, not both/);
    await refuse('short', { ...base(), interval: '1m' }, /at least 5m/);
    await refuse('foreign', { ...base(), feed: { url: feed.url, endpoint: 'dedup', filters: { service: 'ssh' } } }, /endpoint dedup accepts only the filters: hours, includeResearch, includeScan/);
    await refuse('hours', { ...base(), feed: { url: feed.url, endpoint: 'dedup', filters: { hours: 200 } } }, /at most 168/);
    await refuse('level', { ...base(), feed: { url: feed.url, endpoint: 'export', filters: { level: 'extreme' } } }, /Unsupported value.{0,4}extreme/);
    await refuse('two', { ...base(), targets: [{ configMap: { name: 'x', formats: ['txt'] }, networkPolicy: { namespaceSelector: {} } }] }, /exactly one of networkPolicy, ingressNginx, configMap/);
    await refuse('allow', { ...base(), allowlist: ['not-a-cidr'] }, /IP address or a CIDR/);
    const cilium = { ciliumCIDRGroup: {} };
    await refuse('twice', { ...base(), targets: [cilium, cilium] }, /at most one ciliumCIDRGroup target per subscription/);
    await refuse('names', { ...base(), targets: [{ configMap: { name: 'x' } }, { configMap: { name: 'x', formats: ['nginx'] } }] }, /configMap targets need distinct names/);
    await refuse('istio', { ...base(), targets: [{ istioAuthorizationPolicy: { selector: { matchLabels: { a: 'b' } }, targetRefs: [{ group: '', kind: 'Service', name: 's' }] } }] }, /set selector or targetRefs, not both/);
    await refuse('selectors', { ...base(), targets: [{ ciliumCIDRGroup: { policy: { endpointSelector: {}, nodeSelector: {} } } }] }, /set endpointSelector or nodeSelector, not both/);
    await refuse('envoy', { ...base(), targets: [{ envoySecurityPolicy: { targetRefs: [{ kind: 'Service', name: 'web' }] } }] }, /Unsupported value.{0,4}Service/);
    await refuse('limit', { ...base(), targets: [{ envoySecurityPolicy: { targetRefs: [{ kind: 'Gateway', name: 'edge' }], maxCIDRs: 50_000 } }] }, /maxCIDRs.*less than or equal to 40000/);
  });

  it('refuses an Envoy Gateway targetRef given twice, naming the entry; keys left out are the defaults', async () => {
    const edge = { kind: 'Gateway', name: 'edge' };
    const envoy = (targetRefs: unknown[]) => ({ ...base(), targets: [{ configMap: { name: 'x' } }, { envoySecurityPolicy: { targetRefs } }] });
    // the same reference, once with its default group spelled out
    await refuse('envoy-twice', envoy([edge, { group: 'gateway.networking.k8s.io', ...edge }]), /spec\.targets\[1\]\.envoySecurityPolicy\.targetRefs\[1\]: Duplicate value/);
    await refuse('envoy-section', envoy([edge, { ...edge, sectionName: 'https' }, { ...edge, sectionName: 'https' }]), /targetRefs\[2\]: Duplicate value/);
    // distinct by any key: accepted, the keys left out filled in
    await applySubscription(h, ns, 'envoy-refs', { ...envoy([edge, { ...edge, sectionName: 'https' }, { ...edge, namespace: 'gateways' }]), suspend: true } as never);
    const group = 'gateway.networking.k8s.io';
    expect((await getSubscription(h, ns, 'envoy-refs')).spec.targets[1]!.envoySecurityPolicy!.targetRefs).toEqual([
      { group, kind: 'Gateway', name: 'edge', sectionName: '', namespace: '' },
      { group, kind: 'Gateway', name: 'edge', sectionName: 'https', namespace: '' },
      { group, kind: 'Gateway', name: 'edge', sectionName: '', namespace: 'gateways' },
    ]);
  });

  it('applies defaults', async () => {
    await applySubscription(h, ns, 'defaults', { ...base(), suspend: true } as never);
    const sub = await getSubscription(h, ns, 'defaults');
    expect(sub.spec.safety).toEqual({ maxEntries: 200000, minPrefixV4: 16, minPrefixV6: 32, maxShrinkPercent: 50 });
    await patchSubscription(h, ns, 'defaults', { spec: { suspend: true } });
  });
});

import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { desiredRecord, listHash } from '../../../controller/applied-record.ts';
import { desiredConfigMaps } from '../../../controller/targets/configmap.ts';
import { mergeDenylist, unmergeDenylist } from '../../../controller/targets/ingress-nginx.ts';
import { desiredPolicies, policySpec } from '../../../controller/targets/networkpolicy.ts';
import { splitFamilies } from '../../../controller/targets/types.ts';

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

  it('ConfigMap shards named <name>, <name>-1, ... with the CIDR count of each', () => {
    const many = splitFamilies(Array.from({ length: 70_000 }, (_, i) => `45.${Math.floor(i / 65536)}.${Math.floor(i / 256) % 256}.${i % 256}/32`));
    const shards = desiredConfigMaps({ sub, list: many }, { name: 'lists', formats: ['txt', 'nginx'] });
    expect(shards.map((s) => s.name)).toEqual(['lists', 'lists-1', 'lists-2']);
    expect(shards.reduce((n, s) => n + Number(s.annotations['blockfeed.dev/cidrs']), 0)).toBe(70_000);
  });

  it('the record of the applied list is deterministic and holds the list exactly', async () => {
    const state = { inputsHash: 'h', list, entries: 2 };
    const [a, b] = [await desiredRecord(sub, state), await desiredRecord(sub, state)];
    expect(a).toEqual(b);
    expect(a).toHaveLength(1);
    const packed = Buffer.from((a[0]!.content.binaryData as Record<string, string>)['list.gz']!, 'base64');
    expect(gunzipSync(packed).toString()).toBe(list.all.join('\n'));
    expect(a[0]!.annotations['blockfeed.dev/list-hash']).toBe(listHash(list));
  });
});

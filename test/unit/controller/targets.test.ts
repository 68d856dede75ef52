import { describe, expect, it } from 'vitest';
import { mergeDenylist, unmergeDenylist } from '../../../controller/targets/ingress-nginx.ts';
import { policySpec } from '../../../controller/targets/networkpolicy.ts';
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
          _from: [
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

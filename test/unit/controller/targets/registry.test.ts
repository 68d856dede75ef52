// The registry of target kinds is the one source for dispatch, clean-up, drift watches and RBAC: every kind of
// object a target writes is granted exactly what writing, finding and watching it takes.
import { describe, expect, it } from 'vitest';
import { TARGET_FIELDS } from '../../../../api/v1alpha1/blocklist-subscription.ts';
import { CONTROLLER_CLUSTER_RULES, mergeRules } from '../../../../controller/rbac.ts';
import { TARGET_APIS, TARGET_KINDS } from '../../../../controller/targets/index.ts';

const granted = (group: string, resource: string) =>
  new Set(CONTROLLER_CLUSTER_RULES.filter((r) => r.apiGroups?.includes(group) && r.resources?.includes(resource)).flatMap((r) => r.verbs));

describe('target kinds', () => {
  it('are the fields of spec.targets, in the same order', () => {
    expect(TARGET_KINDS.map((k) => k.field)).toEqual(TARGET_FIELDS);
  });

  it('may write, find, watch and delete every kind of object they own', () => {
    for (const kind of TARGET_KINDS) {
      for (const r of kind.resources) {
        expect([...granted(r.group, r.plural)].sort(), `${kind.field}: ${r.plural}.${r.group}`).toEqual(['create', 'delete', 'get', 'list', 'update', 'watch']);
      }
    }
  });

  it('grant every rule they declare, and no resource twice', () => {
    for (const rule of TARGET_KINDS.flatMap((k) => k.rules)) {
      for (const group of rule.apiGroups ?? []) for (const resource of rule.resources ?? []) for (const verb of rule.verbs) expect(granted(group, resource)).toContain(verb);
    }
    const keys = CONTROLLER_CLUSTER_RULES.map((r) => JSON.stringify([r.apiGroups, r.resources]));
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('may list and watch others\' objects that contest theirs, and CRDs, to hear of every API they call being installed', () => {
    for (const { resource } of TARGET_KINDS.flatMap((k) => k.contested ?? [])) expect([...granted(resource.group, resource.plural)]).toEqual(expect.arrayContaining(['list', 'watch']));
    expect([...granted('apiextensions.k8s.io', 'customresourcedefinitions')].sort()).toEqual(['list', 'watch']);
    // what each target reads or writes, owned or looked up, under the name its CRD has
    for (const crd of ['securitypolicies.gateway.envoyproxy.io', 'authorizationpolicies.security.istio.io', 'ciliumcidrgroups.cilium.io', 'ciliumclusterwidenetworkpolicies.cilium.io', 'globalnetworksets.crd.projectcalico.org', 'globalnetworkpolicies.crd.projectcalico.org', 'hostendpoints.crd.projectcalico.org']) {
      expect(TARGET_APIS).toContain(crd);
    }
  });
});

describe('mergeRules', () => {
  it('unites the verbs of rules on the same resources, in a fixed verb order', () => {
    expect(
      mergeRules([
        { apiGroups: [''], resources: ['configmaps'], verbs: ['update', 'get'] },
        { apiGroups: ['x'], resources: ['y'], verbs: ['list'] },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['watch', 'get', 'delete'] },
      ]),
    ).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'watch', 'update', 'delete'] },
      { apiGroups: ['x'], resources: ['y'], verbs: ['list'] },
    ]);
  });
});

// Smoke tests of the test control plane itself: the parts the controller and chart tests rely on.
import { fileURLToPath } from 'node:url';
import { AuthorizationV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { installCrds } from '../support/control-plane.ts';
import { eventually, freshNamespace, kubeConfig, userKubeConfig } from '../support/k8s.ts';

const fixtures = fileURLToPath(new URL('../fixtures/k8s/', import.meta.url));

function statusOf(err: unknown): number | undefined {
  return (err as { code?: number }).code;
}

describe('test control plane', () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  beforeAll(() => {
    kc = kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
  });

  it('deletes a namespace completely (the namespace controller runs)', async () => {
    const ns = await freshNamespace('smoke-ns');
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'content' }, data: { a: 'b' } } });
    await core.deleteNamespace({ name: ns });
    await eventually(async () => core.readNamespace({ name: ns }).then(() => undefined, (err: unknown) => (statusOf(err) === 404 ? true : undefined)), 60_000, `namespace ${ns} to disappear`);
  });

  it('accepts a custom resource and rejects one that violates the CRD schema', async () => {
    await installCrds(kc, fixtures);
    const ns = await freshNamespace('smoke-cr');
    const custom = kc.makeApiClient(CustomObjectsApi);
    const target = { group: 'smoke.blockfeed.dev', version: 'v1', namespace: ns, plural: 'widgets' };
    const ok = (await custom.createNamespacedCustomObject({ ...target, body: { apiVersion: 'smoke.blockfeed.dev/v1', kind: 'Widget', metadata: { name: 'ok' }, spec: { size: 3, color: 'red' } } })) as { metadata: { uid: string } };
    expect(ok.metadata.uid).toBeTruthy();
    for (const [name, spec, field] of [
      ['too-big', { size: 11 }, 'spec.size'],
      ['wrong-color', { size: 1, color: 'blue' }, 'spec.color'],
      ['no-size', { color: 'red' }, 'spec.size'],
    ] as const) {
      const bad = custom.createNamespacedCustomObject({ ...target, body: { apiVersion: 'smoke.blockfeed.dev/v1', kind: 'Widget', metadata: { name }, spec } });
      await expect(bad).rejects.toMatchObject({ code: 422 });
      const body = await bad.then(() => '', (err: { body?: string }) => err.body ?? '');
      expect(body).toContain(field);
    }
  });

  it('round-trips a NetworkPolicy with ipBlock exceptions', async () => {
    const ns = await freshNamespace('smoke-np');
    const net = kc.makeApiClient(NetworkingV1Api);
    const body = {
      metadata: { name: 'block' },
      spec: {
        podSelector: {},
        policyTypes: ['Ingress'],
        ingress: [{ _from: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['203.0.113.0/24', '198.51.100.7/32'] } }, { ipBlock: { cidr: '::/0', except: ['2001:db8::/32'] } }] }],
      },
    };
    await net.createNamespacedNetworkPolicy({ namespace: ns, body });
    const got = await net.readNamespacedNetworkPolicy({ namespace: ns, name: 'block' });
    // client-node models name the JSON field `from` as `_from`.
    expect(got.spec?.ingress?.[0]?._from?.map((p) => p.ipBlock)).toEqual(body.spec.ingress[0]?._from.map((p) => p.ipBlock));
  });

  it('garbage-collects an object whose owner was deleted', async () => {
    const ns = await freshNamespace('smoke-gc');
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'owner' } } });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'child', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '' }] } },
    });
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'owner' });
    await eventually(async () => core.readNamespacedConfigMap({ namespace: ns, name: 'child' }).then(() => undefined, (err: unknown) => (statusOf(err) === 404 ? true : undefined)), 60_000, 'child ConfigMap to be collected');
  });

  it('denies an unprivileged user (RBAC authorization)', async () => {
    const ns = await freshNamespace('smoke-rbac');
    const userKc = await userKubeConfig('mallory');
    const asUser = userKc.makeApiClient(CoreV1Api);
    await expect(asUser.listNamespacedSecret({ namespace: ns })).rejects.toMatchObject({ code: 403 });
    // The same question through SubjectAccessReview, as admin: RBAC says no.
    const review = await kc.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: { spec: { user: 'mallory', resourceAttributes: { namespace: ns, verb: 'list', resource: 'secrets' } } },
    });
    expect(review.status?.allowed).toBe(false);
  });
});

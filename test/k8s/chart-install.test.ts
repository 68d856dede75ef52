// charts/blockfeed installed with helm into the run's real kube-apiserver: every object accepted, generated
// secrets kept across upgrades, and the controller's ServiceAccount granted exactly controller/rbac.ts.
// There is no kubelet, so the pods never run; the RBAC proof with the running controller is in
// chart-rbac.test.ts.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { AuthorizationV1Api, CoreV1Api, KubernetesObjectApi, RbacAuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { CONTROLLER_CLUSTER_RULES, CONTROLLER_LEADER_ELECTION_RULES } from '../../controller/rbac.ts';
import { chartCrdFiles } from '../../hack/generate-chart-files.ts';
import { ALL_ON } from '../support/chart-values.ts';
import { installCrds } from '../support/control-plane.ts';
import { CHART, helm, helmWithValues, parseManifests, renderChart, REPO } from '../support/helm.ts';
import { eventually, freshNamespace, kubeConfig } from '../support/k8s.ts';
import { serviceAccountKubeConfig } from '../support/service-account.ts';

const STUB_CRDS = path.join(import.meta.dirname, '../fixtures/k8s/prometheus-operator');

async function install(release: string, namespace: string, values: object) {
  const r = await helmWithValues(['install', release, CHART, '--namespace', namespace, '--kubeconfig', inject('kubeconfigPath')], values);
  if (r.code !== 0) throw new Error(`helm install ${release} failed:\n${r.stderr}`);
  return r.stdout;
}

async function manifest(release: string, namespace: string) {
  const r = await helm(['get', 'manifest', release, '--namespace', namespace, '--kubeconfig', inject('kubeconfigPath')]);
  if (r.code !== 0) throw new Error(r.stderr);
  return parseManifests(r.stdout);
}

const idOf = (o: KubernetesObject) => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

describe('the chart installed into a real kube-apiserver', () => {
  beforeAll(async () => {
    await installCrds(kubeConfig(), STUB_CRDS);
  });

  it.each([
    ['default values', 'bf-default', {}],
    ['every optional part on', 'bf-all', ALL_ON],
  ])('accepts every object (%s)', async (_what, release, values) => {
    const namespace = await freshNamespace('chart');
    const stdout = await install(release, namespace, values);
    expect(stdout).toContain('STATUS: deployed');

    const installed = await manifest(release, namespace);
    const rendered = await renderChart(values, { release, namespace });
    expect(installed.map(idOf).sort()).toEqual(rendered.map(idOf).sort());

    const objects = KubernetesObjectApi.makeApiClient(kubeConfig());
    for (const o of installed) {
      const live = await objects.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name, namespace: o.metadata.namespace } });
      expect(live.metadata?.uid, idOf(o)).toBeTruthy();
      expect(live.metadata?.labels?.['app.kubernetes.io/instance'], idOf(o)).toBe(release);
    }
    // The chart's CRDs (crds/, copied from the repository's crds/) are installed (or were there already).
    for (const file of chartCrdFiles()) {
      const crd = parseManifests(await readFile(path.join(CHART, 'crds', file), 'utf8'))[0];
      if (!crd) throw new Error(`empty CRD file ${file}`);
      const live = await objects.read({ apiVersion: crd.apiVersion, kind: crd.kind, metadata: { name: crd.metadata.name } });
      expect(live.metadata?.name).toBe(crd.metadata.name);
    }
  });

  it("accepts the subscription make e2e-kind applies (the chart's CRD, server-side dry run)", async () => {
    const namespace = await freshNamespace('chart');
    const [sub] = parseManifests(await readFile(path.join(REPO, 'hack/kind/subscription.yaml'), 'utf8'));
    if (!sub) throw new Error('hack/kind/subscription.yaml is empty');
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig());
    const created = await objects.create({ ...sub, metadata: { ...sub.metadata, namespace } }, undefined, 'All');
    expect(created.metadata?.name).toBe('attackers');
  });

  it('prints the next steps (NOTES.txt) and keeps generated passwords across upgrades', async () => {
    const namespace = await freshNamespace('chart');
    const stdout = await install('bf-notes', namespace, { api: { ingest: { enabled: true } } });
    const notes = stdout.slice(stdout.indexOf('NOTES:'));
    expect(notes).toContain(`url: http://bf-notes-blockfeed-api.${namespace}.svc:8080`);
    expect(notes).toContain('blockfeed keys create --tier enterprise');
    expect(notes).toContain('kind: BlocklistSubscription');
    expect(notes).toContain('evaluation only');

    const core = kubeConfig().makeApiClient(CoreV1Api);
    const secrets = async () => ({
      db: (await core.readNamespacedSecret({ name: 'bf-notes-blockfeed-postgresql', namespace })).data,
      api: (await core.readNamespacedSecret({ name: 'bf-notes-blockfeed-api', namespace })).data,
    });
    const before = await secrets();
    expect(before.db?.password).toBeTruthy();
    expect(before.api?.['ingest-token']).toBeTruthy();
    const r = await helmWithValues(['upgrade', 'bf-notes', CHART, '--namespace', namespace, '--kubeconfig', inject('kubeconfigPath')], { api: { ingest: { enabled: true }, replicas: 3 } });
    expect(r.code, r.stderr).toBe(0);
    expect(await secrets()).toEqual(before);
  });

  it('prints where Cowrie listens and which namespace no subscription may select (sensors.cowrie)', async () => {
    const namespace = await freshNamespace('chart');
    const stdout = await install('bf-sensor', namespace, { api: { ingest: { enabled: true } }, sensors: { cowrie: { enabled: true } } });
    const notes = stdout.slice(stdout.indexOf('NOTES:'));
    expect(notes).toContain(`kubectl -n ${namespace} get service bf-sensor-blockfeed-cowrie`);
    expect(notes).toContain(`Never let a BlocklistSubscription select the namespace ${namespace}`);
  });

  describe("the controller's ServiceAccount", () => {
    let releaseNamespace: string;
    let otherNamespace: string;
    let can: (verb: string, resource: string, namespace: string, group?: string) => Promise<boolean>;

    beforeAll(async () => {
      releaseNamespace = await freshNamespace('chart');
      otherNamespace = await freshNamespace('chart');
      await install('bf-rbac', releaseNamespace, {});
      const user = `system:serviceaccount:${releaseNamespace}:bf-rbac-blockfeed-controller`;
      const groups = ['system:serviceaccounts', `system:serviceaccounts:${releaseNamespace}`, 'system:authenticated'];
      const authz = kubeConfig().makeApiClient(AuthorizationV1Api);
      can = async (verb, resource, namespace, group = '') => {
        const [res, subresource] = resource.split('/');
        const review = await authz.createSubjectAccessReview({
          body: { spec: { user, groups, resourceAttributes: { verb, group, resource: res, subresource, namespace } } },
        });
        return review.status?.allowed === true;
      };
    });

    it('may do everything controller/rbac.ts lists, in any namespace', async () => {
      const denied: string[] = [];
      for (const rule of CONTROLLER_CLUSTER_RULES) {
        for (const group of rule.apiGroups ?? []) {
          for (const resource of rule.resources ?? []) {
            for (const verb of rule.verbs) {
              if (!(await can(verb, resource, otherNamespace, group))) denied.push(`${verb} ${resource}.${group}`);
            }
          }
        }
      }
      expect(denied).toEqual([]);
    });

    it('may hold its leader-election Lease in its own namespace only', async () => {
      for (const rule of CONTROLLER_LEADER_ELECTION_RULES) {
        for (const verb of rule.verbs) {
          expect(await can(verb, 'leases', releaseNamespace, 'coordination.k8s.io'), verb).toBe(true);
          expect(await can(verb, 'leases', otherNamespace, 'coordination.k8s.io'), verb).toBe(false);
        }
      }
    });

    it.each([
      ['list', 'secrets', ''],
      ['watch', 'secrets', ''],
      ['create', 'secrets', ''],
      ['get', 'pods', ''],
      ['create', 'services', ''],
      ['delete', 'namespaces', ''],
      ['create', 'ingresses', 'networking.k8s.io'],
      ['delete', 'ingresses', 'networking.k8s.io'],
      ['create', 'blocklistsubscriptions', 'blockfeed.dev'],
      ['delete', 'blocklistsubscriptions', 'blockfeed.dev'],
      ['update', 'blocklistsubscriptions', 'blockfeed.dev'],
      ['list', 'deployments', 'apps'],
      ['create', 'customresourcedefinitions', 'apiextensions.k8s.io'],
      ['create', 'clusterroles', 'rbac.authorization.k8s.io'],
    ])('may not %s %s (least privilege)', async (verb, resource, group) => {
      expect(await can(verb, resource, otherNamespace, group)).toBe(false);
    });

    it('is what a token for it can do: reading a feed Secret works until its rule is removed, then it is Forbidden', async () => {
      const admin = kubeConfig().makeApiClient(CoreV1Api);
      await admin.createNamespacedSecret({ namespace: otherNamespace, body: { metadata: { name: 'feed-key' }, stringData: { apiKey: 'k' } } });
      const asController = (await serviceAccountKubeConfig(releaseNamespace, 'bf-rbac-blockfeed-controller')).makeApiClient(CoreV1Api);
      const secret = await asController.readNamespacedSecret({ name: 'feed-key', namespace: otherNamespace });
      expect(secret.data?.apiKey).toBe(Buffer.from('k').toString('base64'));
      await expect(asController.listNamespacedSecret({ namespace: otherNamespace })).rejects.toMatchObject({ code: 403 });

      const rbac = kubeConfig().makeApiClient(RbacAuthorizationV1Api);
      const role = await rbac.readClusterRole({ name: 'bf-rbac-blockfeed-controller' });
      role.rules = (role.rules ?? []).filter((r) => !r.resources?.includes('secrets'));
      await rbac.replaceClusterRole({ name: 'bf-rbac-blockfeed-controller', body: role });
      // The authorizer sees the change through its informer: wait for it rather than race it.
      const refused = await eventually(
        () => asController.readNamespacedSecret({ name: 'feed-key', namespace: otherNamespace }).then(() => undefined, (err: unknown) => err),
        30_000,
        'the read to be refused',
      );
      expect(refused).toMatchObject({ code: 403 });
    });
  });
});

// CloudNativePG in the cluster tier, installed as a platform team installs it: the install manifest its Go
// module publishes (releases/cnpg-<version>.yaml: its CRDs, RBAC, webhook configurations, the operator's
// Deployment in cnpg-system), which `make cluster-bin` copies into .cache/ next to the operator it builds. One
// change: the image, the one `make cluster-images` built, since nothing can be pulled; the operator learns it
// (OPERATOR_IMAGE_NAME) to copy its instance manager into every PostgreSQL pod. Nothing of the manifest is kept
// in the repository.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AppsV1Api, KubernetesObjectApi, type KubeConfig, type KubernetesObject, type V1Deployment } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { REPO_ROOT, builtPrograms, installCrds, readEnvFile } from './control-plane.ts';
import { parseManifests, type K8sObject } from './helm.ts';
import { eventually } from './k8s.ts';

export const CNPG_NAMESPACE = 'cnpg-system';
const OPERATOR_DEPLOYMENT = 'cnpg-controller-manager';

/** The operator's version and its install manifest, as `make cluster-bin` left them (.cache/k8s/cluster.env). */
export function cloudNativePgRelease(root = REPO_ROOT): { version: string; manifestPath: string } {
  const file = path.join(root, '.cache/k8s/cluster.env');
  const { CNPG_MANIFEST } = builtPrograms(file, 'make cluster-bin', ['CNPG_MANIFEST']);
  return { version: readEnvFile(file).CNPG_VERSION ?? '', manifestPath: CNPG_MANIFEST };
}

/** The manifest's objects with the operator's image (and the image it copies into PostgreSQL pods) set to `image`. */
export function withOperatorImage(objects: K8sObject[], image: string): K8sObject[] {
  const deployments = objects.filter((o) => o.kind === 'Deployment' && o.metadata.name === OPERATOR_DEPLOYMENT);
  if (deployments.length !== 1) throw new Error(`the manifest has ${deployments.length} Deployments named ${OPERATOR_DEPLOYMENT}, expected 1`);
  const deployment = deployments[0] as unknown as V1Deployment;
  const manager = deployment.spec?.template.spec?.containers.find((c) => c.name === 'manager');
  const imageVariable = manager?.env?.find((e) => e.name === 'OPERATOR_IMAGE_NAME');
  if (!manager || !imageVariable) throw new Error(`${OPERATOR_DEPLOYMENT} has no manager container with OPERATOR_IMAGE_NAME: has the manifest changed?`);
  manager.image = image;
  manager.imagePullPolicy = 'Never';
  imageVariable.value = image;
  return objects;
}

/**
 * Installs the operator with `image` and waits until its webhooks answer: the Deployment available (its
 * readiness probe is the webhook server) and a dry-run Cluster admitted (the operator has put its CA into the
 * webhook configurations). Returns how long that took.
 */
export async function installCloudNativePg(kc: KubeConfig, image: string): Promise<number> {
  const started = Date.now();
  const { manifestPath } = cloudNativePgRelease();
  const objects = withOperatorImage(parseManifests(await readFile(manifestPath, 'utf8')), image);
  // The CRDs through the harness's installer (server-side apply of the raw JSON: client-node's typed models
  // would drop `enum` from their schemas), which waits until they are served.
  const crdDir = await mkdtemp(path.join(tmpdir(), 'blockfeed-cnpg-crds-'));
  try {
    const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
    await writeFile(path.join(crdDir, 'crds.yaml'), crds.map((c) => stringify(c)).join('---\n'));
    await installCrds(kc, crdDir);
  } finally {
    await rm(crdDir, { recursive: true, force: true });
  }
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const o of objects.filter((x) => x.kind !== 'CustomResourceDefinition')) await api.create(o);

  const apps = kc.makeApiClient(AppsV1Api);
  await eventually(
    async () => ((await apps.readNamespacedDeployment({ name: OPERATOR_DEPLOYMENT, namespace: CNPG_NAMESPACE })).status?.availableReplicas ? true : undefined),
    300_000,
    `${CNPG_NAMESPACE}/${OPERATOR_DEPLOYMENT} available`,
  );
  await eventually(
    async () => {
      await api.create({ apiVersion: 'postgresql.cnpg.io/v1', kind: 'Cluster', metadata: { name: 'webhook-check', namespace: 'default' }, spec: { instances: 1, storage: { size: '1Gi' } } } as KubernetesObject, undefined, 'All');
      return true;
    },
    120_000,
    "CloudNativePG's admission webhooks answering",
  );
  return Date.now() - started;
}

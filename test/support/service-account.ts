// A client authenticated as a ServiceAccount, with a token from the TokenRequest API: exactly the identity
// (and so exactly the RBAC permissions) a pod running under that ServiceAccount would have.
import { writeFile } from 'node:fs/promises';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { kubeConfig } from './k8s.ts';

export async function serviceAccountKubeConfig(namespace: string, name: string): Promise<KubeConfig> {
  const admin = kubeConfig();
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('admin kubeconfig has no cluster');
  const review = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = review.status?.token;
  if (!token) throw new Error(`no token issued for ServiceAccount ${namespace}/${name}`);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: cluster.server, caFile: cluster.caFile, caData: cluster.caData, skipTLSVerify: false }],
    users: [{ name, token }],
    contexts: [{ name, cluster: 'test', user: name }],
    currentContext: name,
  });
  return kc;
}

/** The same identity as a kubeconfig file, for a child process (`blockfeed controller --kubeconfig`). */
export async function serviceAccountKubeconfigFile(namespace: string, name: string, file: string): Promise<string> {
  const kc = await serviceAccountKubeConfig(namespace, name);
  await writeFile(file, kc.exportConfig(), { mode: 0o600 });
  return file;
}

// Helpers for k8s-tier tests: clients for the run's control plane and throwaway namespaces.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { issueUserKubeconfig } from './control-plane.ts';

export function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject('kubeconfigPath'));
  return kc;
}

/** Creates a namespace with a unique name; tests never share one. */
export async function freshNamespace(prefix = 'test'): Promise<string> {
  const core = kubeConfig().makeApiClient(CoreV1Api);
  const ns = await core.createNamespace({ body: { metadata: { generateName: `${prefix}-`, labels: { 'blockfeed.dev/test': 'true' } } } });
  const name = ns.metadata?.name;
  if (!name) throw new Error('namespace without a name');
  return name;
}

/** Polls `check` until it returns a value other than undefined (or throws after `timeoutMs`). */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A client for `user` (in `groups`): authenticated by a client certificate, authorised only by RBAC. */
export async function userKubeConfig(user: string, groups: string[] = []): Promise<KubeConfig> {
  const server = kubeConfig().getCurrentCluster()?.server ?? '';
  const kc = new KubeConfig();
  kc.loadFromFile(await issueUserKubeconfig(inject('controlPlaneDir'), server, user, groups));
  return kc;
}

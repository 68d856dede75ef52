// Shared pieces of the controller's k8s-tier tests: a real feed over HTTP (a node:http server serving a list
// with an ETag, switchable to failure modes) and the controller running in-process against the test apiserver.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, CustomObjectsApi, NetworkingV1Api, type KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../../common/logging.ts';
import { GROUP, PLURAL, VERSION, type BlocklistSubscription } from '../../api/v1alpha1/blocklist-subscription.ts';
import { SubscriptionController } from '../../controller/controller.ts';
import { apiRequest, isConflict, makeApis, mergePatch, subscriptionKey, type Apis } from '../../controller/runtime/k8s.ts';
import { createControllerMetrics, type ControllerMetrics } from '../../controller/metrics.ts';
import { eventually, kubeConfig } from './k8s.ts';

export type FeedMode = 'ok' | 'error500' | 'hang' | 'garbage' | 'oversized';

export class FeedServer {
  lines: string[] = [];
  mode: FeedMode = 'ok';
  requests: IncomingMessage[] = [];
  answers: number[] = [];
  private server!: Server;
  url = '';

  etag(): string {
    return `"${createHash('sha256').update(this.lines.join('\n')).digest('hex').slice(0, 16)}"`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.requests.push(req);
    const answer = (status: number) => this.answers.push(status);
    switch (this.mode) {
      case 'error500':
        answer(500);
        res.writeHead(500, { 'content-type': 'application/problem+json' }).end('{"status":500}');
        return;
      case 'hang':
        answer(0);
        return; // never answers; the controller's timeout must fire
      case 'garbage':
        answer(200);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('%PDF-1.4\nlorem ipsum\nnot an address\n\u0000\u0001\nmore garbage\n');
        return;
      case 'oversized':
        answer(200);
        res.writeHead(200, { 'content-type': 'text/plain' }).end('203.0.113.9\n'.repeat(200_000));
        return;
      case 'ok': {
        const etag = this.etag();
        if (req.headers['if-none-match'] === etag) {
          answer(304);
          res.writeHead(304, { etag }).end();
          return;
        }
        answer(200);
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', etag }).end(this.lines.map((l) => `${l}\n`).join(''));
      }
    }
  }
}

export interface Harness {
  kc: KubeConfig;
  core: CoreV1Api;
  net: NetworkingV1Api;
  custom: CustomObjectsApi;
  apis: Apis;
  metrics: ControllerMetrics;
  controller: SubscriptionController;
  stop(): Promise<void>;
}

/**
 * The controller in this process, watching one namespace; `kc` names another control plane than the run's. Its
 * back-off is short (300 ms doubling to 2 s) unless given.
 */
export async function startController(
  namespace: string,
  options: { clusterCidrs?: string[]; kc?: KubeConfig; backoffBaseMs?: number; backoffMaxMs?: number } = {},
): Promise<Harness> {
  const { kc = kubeConfig(), ...controllerOptions } = options;
  const apis = makeApis(kc);
  const metrics = createControllerMetrics();
  const log = createLogger({ level: process.env.K8S_TEST_VERBOSE ? 'debug' : 'silent' });
  const controller = new SubscriptionController({ apis, log, metrics, namespace, backoffBaseMs: 300, backoffMaxMs: 2000, ...controllerOptions });
  await controller.start();
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    net: kc.makeApiClient(NetworkingV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    apis,
    metrics,
    controller,
    stop: () => controller.stop(),
  };
}

/**
 * A Calico HostEndpoint as automatic host endpoints make one per node (all interfaces of the node): a
 * calicoGlobalNetworkSet target's pre-DNAT policy applies to these, and without any the target waits
 * (TargetNotFound). Cluster-wide; made once, whichever test asks first.
 */
export async function ensureHostEndpoint(h: Harness, node = 'node-1'): Promise<void> {
  const json = JSON.stringify({
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'HostEndpoint',
    metadata: { name: `${node}-auto-hep`, labels: { 'projectcalico.org/created-by': 'calico-kube-controllers' } },
    spec: { node, interfaceName: '*', expectedIPs: ['10.0.0.1'] },
  });
  await apiRequest(h.apis, 'POST', '/apis/crd.projectcalico.org/v1/hostendpoints', { json }).catch((err: unknown) => {
    if (!isConflict(err)) throw err;
  });
}

/** The objects in a collection (an API path such as `/apis/cilium.io/v2/ciliumcidrgroups`) that a subscription's targets wrote. */
export async function ownedObjects(h: Harness, collection: string, namespace: string, name: string): Promise<unknown[]> {
  const selector = encodeURIComponent(`blockfeed.dev/subscription=${subscriptionKey({ metadata: { namespace, name } })}`);
  return (JSON.parse(await apiRequest(h.apis, 'GET', `${collection}?labelSelector=${selector}`)) as { items: unknown[] }).items;
}

/** The subscription's Degraded condition, once its status is `status`. */
export function untilDegraded(h: Harness, namespace: string, name: string, status: 'True' | 'False', timeoutMs = 60_000) {
  return eventually(async () => {
    const degraded = condition(await getSubscription(h, namespace, name), 'Degraded');
    return degraded?.status === status ? degraded : undefined;
  }, timeoutMs, `Degraded ${status}`);
}

export type SubscriptionSpec = BlocklistSubscription['spec'];

export async function applySubscription(h: Harness, namespace: string, name: string, spec: Partial<SubscriptionSpec>): Promise<BlocklistSubscription> {
  return (await h.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'BlocklistSubscription', metadata: { name, namespace }, spec },
  })) as BlocklistSubscription;
}

export async function getSubscription(h: Harness, namespace: string, name: string): Promise<BlocklistSubscription> {
  return (await h.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name })) as BlocklistSubscription;
}

export async function patchSubscription(h: Harness, namespace: string, name: string, body: unknown): Promise<void> {
  await h.custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body }, mergePatch);
}

/**
 * Sets reconcile.fluxcd.io/requestedAt and waits for a sync that started after it (a back-off retry already
 * running does not count).
 */
export async function syncNow(h: Harness, namespace: string, name: string): Promise<BlocklistSubscription> {
  const asked = Date.now();
  await patchSubscription(h, namespace, name, { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': String(asked) } } });
  return eventually(async () => {
    const sub = await getSubscription(h, namespace, name);
    return sub.status?.lastSyncTime && new Date(sub.status.lastSyncTime).getTime() >= asked ? sub : undefined;
  }, 30_000, `a new sync of ${namespace}/${name}`);
}

export function condition(sub: BlocklistSubscription, type: string) {
  return sub.status?.conditions?.find((c) => c.type === type);
}

export async function events(h: Harness, namespace: string, name: string): Promise<{ type?: string; reason?: string; message?: string; instance?: string }[]> {
  const list = await h.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name},involvedObject.kind=BlocklistSubscription` });
  return list.items.map((e) => ({ type: e.type, reason: e.reason, message: e.message, instance: e.reportingInstance }));
}

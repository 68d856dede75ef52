// The controller's Kubernetes client (controller/runtime/k8s.ts) against the real apiserver: every request of a
// process — raw JSON, client-node's typed APIs, an informer's watch — goes out on the same kept-alive connections
// (counted by a TCP relay in front of the apiserver); TLS is verified as the kubeconfig says; and credentials come
// from the kubeconfig the ways a cluster hands them out: a service-account token file the kubelet rotates, and
// an exec plugin.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, KubeConfig, makeInformer, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { apiRequest, closeConnections, makeApis, sendJson, type Apis } from '../../../controller/runtime/k8s.ts';
import { eventually, freshNamespace, kubeConfig } from '../../support/k8s.ts';

/** A TCP relay to the apiserver that counts the connections made through it (TLS passes through untouched). */
class CountingRelay {
  connections = 0;
  port = 0;
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  async start(target: URL): Promise<void> {
    this.server = createServer((client) => {
      this.connections++;
      const upstream = connect(Number(target.port), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => s.destroy());
        s.on('close', () => this.sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

const admin = kubeConfig();
const server = new URL(admin.getCurrentCluster()!.server);
let ns: string;
let dir: string;
const opened: Apis[] = [];

/** The admin's kubeconfig with its cluster changed (another address, CA or server name). */
function adminWith(cluster: Record<string, unknown>): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...admin.getCurrentCluster()!, ...cluster }],
    users: [admin.getCurrentUser()!],
    contexts: [{ name: 'test', cluster: admin.getCurrentCluster()!.name, user: admin.getCurrentUser()!.name }],
    currentContext: 'test',
  });
  return kc;
}

function apisFor(kc: KubeConfig): Apis {
  const apis = makeApis(kc);
  opened.push(apis);
  return apis;
}

/** Who the apiserver takes the client for. */
async function whoAmI(apis: Apis): Promise<string> {
  const review = await apiRequest(apis, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    json: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
  });
  return (JSON.parse(review) as { status: { userInfo: { username: string } } }).status.userInfo.username;
}

async function serviceAccountToken(name: string): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } }).catch(() => undefined);
  const review = await core.createNamespacedServiceAccountToken({ name, namespace: ns, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  const token = review.status?.token;
  if (!token) throw new Error(`no token issued for ${name}`);
  return token;
}

beforeAll(async () => {
  ns = await freshNamespace('client');
  dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-client-'));
});

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(opened.splice(0).map(closeConnections));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the Kubernetes client', () => {
  it('sends every request of a process, typed or raw, on one kept-alive connection, and its watches beside it', async () => {
    const relay = new CountingRelay();
    await relay.start(server);
    try {
      const apis = apisFor(adminWith({ server: `https://127.0.0.1:${relay.port}`, tlsServerName: undefined }));
      for (let i = 0; i < 20; i++) {
        await sendJson(apis, 'POST', `/api/v1/namespaces/${ns}/configmaps`, JSON.stringify({ metadata: { name: `cm-${i}` }, data: { i: String(i) } }));
        await apiRequest(apis, 'GET', `/api/v1/namespaces/${ns}/configmaps/cm-${i}`);
        await apis.core.readNamespacedConfigMap({ name: `cm-${i}`, namespace: ns });
        await apis.custom.listNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: ns, plural: 'blocklistsubscriptions' });
      }
      expect(relay.connections).toBe(1);

      // An informer (the controller's subscription informer, runtime/drift.ts's watches) lists and watches through it.
      const informer = makeInformer<V1ConfigMap>(apis.kubeConfig, `/api/v1/namespaces/${ns}/configmaps`, () => apis.core.listNamespacedConfigMap({ namespace: ns }));
      const seen = new Set<string>();
      informer.on('add', (cm) => seen.add(cm.metadata!.name!));
      await informer.start();
      await sendJson(apis, 'POST', `/api/v1/namespaces/${ns}/configmaps`, JSON.stringify({ metadata: { name: 'watched' } }));
      await eventually(async () => (seen.has('watched') ? true : undefined), 10_000, 'the watch event');
      await informer.stop();
      // the watch holds a connection of its own while it runs
      expect(relay.connections).toBeLessThanOrEqual(2);
    } finally {
      await relay.stop();
    }
  });

  it('verifies the apiserver as the kubeconfig says, unless it says not to', async () => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'other.key', '-out', 'other.crt', '-days', '1', '-subj', '/CN=another-ca'], {
      cwd: dir,
      stdio: 'ignore',
    });
    const otherCa = apisFor(adminWith({ caFile: path.join(dir, 'other.crt'), caData: undefined }));
    await expect(apiRequest(otherCa, 'GET', '/api/v1/namespaces')).rejects.toThrow(/certificate/i);
    await expect(otherCa.core.listNamespace()).rejects.toThrow(/certificate/i);
    const wrongName = apisFor(adminWith({ tlsServerName: 'not-the-apiserver.example' }));
    await expect(apiRequest(wrongName, 'GET', '/api/v1/namespaces')).rejects.toThrow(/not-the-apiserver\.example/);
    const skipped = apisFor(adminWith({ caFile: path.join(dir, 'other.crt'), caData: undefined, skipTLSVerify: true }));
    expect(await apiRequest(skipped, 'GET', `/api/v1/namespaces/${ns}`)).toContain(ns);
  });

  it("reads a pod's service-account token file again once the kubelet has rotated it", async () => {
    const [one, two] = [await serviceAccountToken('sa-one'), await serviceAccountToken('sa-two')];
    // The files a pod sees, under a prefix, and the environment a pod gets.
    const accountDir = path.join(dir, 'pod/var/run/secrets/kubernetes.io/serviceaccount');
    await mkdir(accountDir, { recursive: true });
    await writeFile(path.join(accountDir, 'token'), one);
    await writeFile(path.join(accountDir, 'namespace'), ns);
    execFileSync('cp', [admin.getCurrentCluster()!.caFile!, path.join(accountDir, 'ca.crt')]);
    vi.stubEnv('KUBERNETES_SERVICE_HOST', server.hostname);
    vi.stubEnv('KUBERNETES_SERVICE_PORT', server.port);
    try {
      const kc = new KubeConfig();
      kc.loadFromCluster(path.join(dir, 'pod'));
      const apis = apisFor(kc);
      expect(await whoAmI(apis)).toBe(`system:serviceaccount:${ns}:sa-one`);
      // The kubelet writes the new token; within two minutes (client-node's minute and the client's) it is used.
      await writeFile(path.join(accountDir, 'token'), two);
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 121_000 });
      expect(await whoAmI(apis)).toBe(`system:serviceaccount:${ns}:sa-two`);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("authenticates with an exec plugin's credential", async () => {
    const token = await serviceAccountToken('sa-exec');
    const plugin = path.join(dir, 'credential.mjs');
    const credential = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token } };
    await writeFile(plugin, `process.stdout.write(${JSON.stringify(JSON.stringify(credential))});\n`);
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [admin.getCurrentCluster()!],
      users: [{ name: 'exec', exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin], interactiveMode: 'Never' } }],
      contexts: [{ name: 'exec', cluster: admin.getCurrentCluster()!.name, user: 'exec' }],
      currentContext: 'exec',
    });
    expect(await whoAmI(apisFor(kc))).toBe(`system:serviceaccount:${ns}:sa-exec`);
  });
});

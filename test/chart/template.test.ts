// helm lint and helm template of charts/blockfeed: what appears, what does not, labels, hardened pods, the
// values schema and the chart's own checks refusing wrong values.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../api-server/config.ts';
import { completeReadUrl } from '../../api-server/store/database.ts';
import { CONTROLLER_CLUSTER_RULES, CONTROLLER_LEADER_ELECTION_RULES } from '../../controller/rbac.ts';
import { ALL_ON, CLOUDNATIVEPG } from '../support/chart-values.ts';
import { CHART, helmWithValues, renderChart, type K8sObject } from '../support/helm.ts';

const NAMESPACED_KINDS = new Set(['Deployment', 'StatefulSet', 'Service', 'Secret', 'ServiceAccount', 'Role', 'RoleBinding', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'ServiceMonitor', 'PrometheusRule', 'ConfigMap', 'Cluster', 'PodMonitor', 'NetworkPolicy']);

const kindsOf = (objs: K8sObject[]) => objs.map((o) => `${o.kind}/${o.metadata.name}`).sort();
const find = (objs: K8sObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} not rendered (have: ${kindsOf(objs).join(', ')})`);
  return o;
};

interface Container {
  name: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  livenessProbe?: { httpGet?: { path: string; port: string } };
  readinessProbe?: { httpGet?: { path: string; port: string } };
  ports?: { name: string; containerPort: number }[];
}
interface PodSpec {
  securityContext?: Record<string, unknown> & { seccompProfile?: { type: string } };
  containers: Container[];
  volumes?: { name: string; emptyDir?: object; secret?: object }[];
  serviceAccountName?: string;
}
const podTemplate = (o: K8sObject) => (o.spec as { template: { metadata: { labels: Record<string, string> }; spec: PodSpec } }).template;
const container = (o: K8sObject, name: string) => {
  const c = podTemplate(o).spec.containers.find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name} in ${o.metadata.name}`);
  return c;
};
const env = (c: Container) => new Map((c.env ?? []).map((e) => [e.name, e]));
const secretValue = (objs: K8sObject[], name: string, key: string) =>
  Buffer.from((find(objs, 'Secret', name) as K8sObject & { data: Record<string, string> }).data[key] ?? '', 'base64').toString();

describe('helm lint', () => {
  it.each([
    ['default values', {}],
    ['every optional part on', ALL_ON],
    ['the CloudNativePG database', CLOUDNATIVEPG],
  ])('is clean with %s', async (_what, values) => {
    const r = await helmWithValues(['lint', '--strict', CHART], values);
    expect(r.stdout + r.stderr).toContain('0 chart(s) failed');
    expect(r.stdout + r.stderr).not.toMatch(/\[(WARNING|ERROR)\]/);
    expect(r.code).toBe(0);
  });
});

describe('helm template with default values', () => {
  let objs: K8sObject[];
  beforeAll(async () => {
    objs = await renderChart();
  });

  it('renders the api-server, the bundled database and the controller with its RBAC, nothing optional', () => {
    expect(kindsOf(objs)).toEqual(
      [
        'ClusterRole/blockfeed-controller',
        'ClusterRoleBinding/blockfeed-controller',
        'Deployment/blockfeed-api',
        'Deployment/blockfeed-controller',
        'Role/blockfeed-controller-leader-election',
        'RoleBinding/blockfeed-controller-leader-election',
        'Secret/blockfeed-postgresql',
        'Service/blockfeed-api',
        'Service/blockfeed-controller-metrics',
        'Service/blockfeed-postgresql',
        'ServiceAccount/blockfeed-controller',
        'StatefulSet/blockfeed-postgresql',
      ].sort(),
    );
  });

  it('names the api Service as the README’s example feed URL does', () => {
    expect(find(objs, 'Service', 'blockfeed-api').metadata.namespace).toBe('blockfeed');
  });

  it('points the api-server at the bundled database through its Secret', () => {
    const api = container(find(objs, 'Deployment', 'blockfeed-api'), 'api-server');
    expect(env(api).get('DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({ name: 'blockfeed-postgresql', key: 'database-url' });
    const url = new URL(secretValue(objs, 'blockfeed-postgresql', 'database-url'));
    expect(url.hostname).toBe('blockfeed-postgresql.blockfeed.svc');
    expect(decodeURIComponent(url.password)).toBe(secretValue(objs, 'blockfeed-postgresql', 'password'));
    expect(url.password).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(env(api).has('BLOCKFEED_INGEST_TOKEN')).toBe(false);
  });

  it('runs the official postgres image as its postgres user with a volume claim', () => {
    const sts = find(objs, 'StatefulSet', 'blockfeed-postgresql');
    const pod = podTemplate(sts).spec;
    expect(container(sts, 'postgresql')).toMatchObject({ image: 'postgres:17' });
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 999, fsGroup: 999 });
    expect((sts.spec as { volumeClaimTemplates: { spec: unknown }[] }).volumeClaimTemplates[0]?.spec).toMatchObject({ resources: { requests: { storage: '8Gi' } } });
  });

  it('starts the controller with leader election, metrics :8080 and health :8081 probes', () => {
    const ctl = container(find(objs, 'Deployment', 'blockfeed-controller'), 'controller');
    expect(ctl.args).toEqual([
      'controller',
      '--leader-elect',
      '--lease-namespace=blockfeed',
      '--lease-name=blockfeed-controller',
      '--metrics-bind-address=:8080',
      '--health-probe-bind-address=:8081',
      '--concurrency=4',
    ]);
    expect(ctl.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(ctl.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'health' });
    expect(ctl.ports).toEqual([expect.objectContaining({ name: 'metrics', containerPort: 8080 }), expect.objectContaining({ name: 'health', containerPort: 8081 })]);
    expect(podTemplate(find(objs, 'Deployment', 'blockfeed-controller')).spec.serviceAccountName).toBe('blockfeed-controller');
  });

  it('probes the api-server on /healthz and /readyz', () => {
    const api = container(find(objs, 'Deployment', 'blockfeed-api'), 'api-server');
    expect(api.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(api.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect((find(objs, 'Deployment', 'blockfeed-api').spec as { replicas: number }).replicas).toBe(2);
  });

  it('grants the controller exactly the rules of controller/rbac.ts, bound to its ServiceAccount', () => {
    expect(find(objs, 'ClusterRole', 'blockfeed-controller').rules).toEqual(CONTROLLER_CLUSTER_RULES);
    expect(find(objs, 'Role', 'blockfeed-controller-leader-election').rules).toEqual(CONTROLLER_LEADER_ELECTION_RULES);
    const subject = { kind: 'ServiceAccount', name: 'blockfeed-controller', namespace: 'blockfeed' };
    expect(find(objs, 'ClusterRoleBinding', 'blockfeed-controller').subjects).toEqual([subject]);
    expect(find(objs, 'RoleBinding', 'blockfeed-controller-leader-election').subjects).toEqual([subject]);
  });
});

describe('helm template with every optional part on', () => {
  let objs: K8sObject[];
  beforeAll(async () => {
    objs = await renderChart(ALL_ON);
  });

  it('adds the HPA, the PDB, the ServiceMonitors, the PrometheusRule, the api Secret and Cowrie; drops the bundled database', () => {
    const names = kindsOf(objs);
    for (const want of ['HorizontalPodAutoscaler/blockfeed-api', 'PodDisruptionBudget/blockfeed-api', 'ServiceMonitor/blockfeed-api', 'ServiceMonitor/blockfeed-controller', 'PrometheusRule/blockfeed', 'Secret/blockfeed-api', 'StatefulSet/blockfeed-cowrie', 'PodMonitor/blockfeed-cowrie']) {
      expect(names).toContain(want);
    }
    expect(names.filter((n) => n.includes('postgresql'))).toEqual([]);
  });

  it('leaves replicas to the HPA', () => {
    expect((find(objs, 'Deployment', 'blockfeed-api').spec as { replicas?: number }).replicas).toBeUndefined();
    expect(find(objs, 'HorizontalPodAutoscaler', 'blockfeed-api').spec).toMatchObject({ minReplicas: 3, maxReplicas: 9, scaleTargetRef: { kind: 'Deployment', name: 'blockfeed-api' } });
  });

  it('selects the api pods with the PDB and the Service', () => {
    const labels = podTemplate(find(objs, 'Deployment', 'blockfeed-api')).metadata.labels;
    const pdbSel = (find(objs, 'PodDisruptionBudget', 'blockfeed-api').spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    const svcSel = (find(objs, 'Service', 'blockfeed-api').spec as { selector: Record<string, string> }).selector;
    expect(labels).toMatchObject(pdbSel);
    expect(labels).toMatchObject(svcSel);
    expect(svcSel['app.kubernetes.io/component']).toBe('api-server');
  });

  it('keeps the external URL and a generated ingest token in the api Secret', () => {
    expect(secretValue(objs, 'blockfeed-api', 'database-url')).toBe(ALL_ON.database.external.url);
    expect(secretValue(objs, 'blockfeed-api', 'ingest-token')).toMatch(/^[A-Za-z0-9]{40}$/);
    const api = container(find(objs, 'Deployment', 'blockfeed-api'), 'api-server');
    expect(env(api).get('DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({ name: 'blockfeed-api', key: 'database-url' });
    expect(env(api).get('BLOCKFEED_INGEST_TOKEN')?.valueFrom?.secretKeyRef).toEqual({ name: 'blockfeed-api', key: 'ingest-token' });
  });

  it('configures the api-server from values, in the variables the program reads', () => {
    const api = container(find(objs, 'Deployment', 'blockfeed-api'), 'api-server');
    const vars = env(api);
    expect(vars.get('BLOCKFEED_TIER_QUOTAS')?.value).toBe('basic=50,enterprise=unlimited,member=none,pro=20000');
    expect(vars.get('TRUSTED_PROXIES')?.value).toBe('10.0.0.0/8,fd00::/8');
    expect(vars.get('BLOCKFEED_ANONYMOUS_PER_MINUTE')?.value).toBe('10');
    expect(vars.get('BLOCKFEED_CACHE_MAX_BYTES')?.value).toBe('67108864');
    expect(vars.get('BLOCKFEED_CACHE_LIFETIMES')?.value).toBe('recent=30,variantA=300');
    expect(vars.get('EXTRA_SETTING')?.value).toBe('x');
    // The program's own configuration loader accepts what the chart sets (secrets resolved from the Secret).
    const resolved: NodeJS.ProcessEnv = {};
    for (const [name, e] of vars) {
      const ref = e.valueFrom?.secretKeyRef;
      resolved[name] = ref ? secretValue(objs, ref.name, ref.key) : e.value;
    }
    const config = loadConfig({ env: resolved });
    expect(config).toMatchObject({ port: 8080, host: '0.0.0.0', databaseUrl: ALL_ON.database.external.url, dataDir: '/tmp/blockfeed' });
  });

  it('passes the cluster CIDRs and extra flags to the controller', () => {
    const ctl = container(find(objs, 'Deployment', 'blockfeed-controller'), 'controller');
    expect(ctl.args).toEqual(
      expect.arrayContaining(['--cluster-cidrs=10.244.0.0/16,10.96.0.0/12,fd00:10:96::/112', '--concurrency=8', '--namespace=subscriptions', '--example']),
    );
  });

  it('keeps the subscription’s namespace label on controller series (honorLabels) and scrapes both programs', () => {
    const ctl = find(objs, 'ServiceMonitor', 'blockfeed-controller').spec as { endpoints: Record<string, unknown>[]; selector: { matchLabels: Record<string, string> } };
    expect(ctl.endpoints[0]).toMatchObject({ port: 'metrics', path: '/metrics', honorLabels: true });
    const svc = find(objs, 'Service', 'blockfeed-controller-metrics');
    expect(svc.metadata.labels).toMatchObject(ctl.selector.matchLabels);
    const api = find(objs, 'ServiceMonitor', 'blockfeed-api').spec as { endpoints: Record<string, unknown>[] };
    expect(api.endpoints[0]).toMatchObject({ port: 'http', path: '/metrics' });
    expect(find(objs, 'ServiceMonitor', 'blockfeed-api').metadata.labels).toMatchObject({ release: 'prom' });
  });
});

describe.each([
  ['default values', {}],
  ['every optional part on', ALL_ON],
  ['the CloudNativePG database', CLOUDNATIVEPG],
])('every object with %s', (_what, values) => {
  let objs: K8sObject[];
  beforeAll(async () => {
    objs = await renderChart(values, { release: 'rel', namespace: 'ns1' });
  });

  it('carries the app.kubernetes.io labels and lives in the release namespace', () => {
    for (const o of objs) {
      expect(o.metadata.labels, `${o.kind}/${o.metadata.name}`).toMatchObject({
        'app.kubernetes.io/name': 'blockfeed',
        'app.kubernetes.io/instance': 'rel',
        'app.kubernetes.io/version': '0.1.0',
        'app.kubernetes.io/managed-by': 'Helm',
        'app.kubernetes.io/part-of': 'blockfeed',
      });
      expect(['api-server', 'controller', 'database', 'sensor-cowrie']).toContain(o.metadata.labels?.['app.kubernetes.io/component']);
      if (NAMESPACED_KINDS.has(o.kind)) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe('ns1');
      else expect(o.metadata.namespace).toBeUndefined();
    }
  });

  it('runs hardened pods: non-root, seccomp RuntimeDefault, read-only root, no escalation, no capabilities, /tmp on an emptyDir', () => {
    const workloads = objs.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
    expect(workloads.length).toBeGreaterThanOrEqual(2);
    for (const w of workloads) {
      const pod = podTemplate(w).spec;
      expect(pod.securityContext, w.metadata.name).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.volumes?.find((v) => v.name === 'tmp')?.emptyDir, w.metadata.name).toBeDefined();
      for (const c of pod.containers) {
        expect(c.securityContext, `${w.metadata.name}/${c.name}`).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          privileged: false,
          capabilities: { drop: ['ALL'] },
        });
        expect(c.volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
      }
    }
  });

  it('labels pods with the selector of their workload', () => {
    for (const w of objs.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')) {
      const sel = (w.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
      expect(podTemplate(w).metadata.labels).toMatchObject(sel);
    }
  });
});

describe('helm template with database.type=cloudnativepg', () => {
  let objs: K8sObject[];
  beforeAll(async () => {
    objs = await renderChart(CLOUDNATIVEPG);
  });

  it('renders a CloudNativePG Cluster and its PodMonitor instead of the bundled database', () => {
    const names = kindsOf(objs);
    expect(names).toContain('Cluster/blockfeed-postgresql');
    expect(names).toContain('PodMonitor/blockfeed-postgresql');
    expect(names.filter((n) => /^(StatefulSet|Secret|Service)\/blockfeed-postgresql/.test(n))).toEqual([]);
    expect(find(objs, 'Cluster', 'blockfeed-postgresql').apiVersion).toBe('postgresql.cnpg.io/v1');
  });

  it('asks for the instances, synchronous replication, the database and its owner, storage and resources', () => {
    expect(find(objs, 'Cluster', 'blockfeed-postgresql').spec).toEqual({
      instances: 2,
      imageName: 'ghcr.io/cloudnative-pg/postgresql:17.5',
      imagePullPolicy: 'IfNotPresent',
      minSyncReplicas: 1,
      maxSyncReplicas: 1,
      smartShutdownTimeout: 15,
      bootstrap: { initdb: { database: 'blockfeed', owner: 'blockfeed' } },
      storage: { size: '20Gi', storageClass: 'fast' },
      resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } },
      // database.cloudnativepg.clusterSpec, merged: a setting and the backups' plugin
      postgresql: { parameters: { max_connections: '200' } },
      plugins: [{ name: 'barman-cloud.cloudnative-pg.io', isWALArchiver: true, parameters: { barmanObjectName: 'blockfeed-backups' } }],
    });
  });

  it("lets clusterSpec override the chart's fields", async () => {
    const values = { database: { type: 'cloudnativepg', cloudnativepg: { clusterSpec: { instances: 5, storage: { size: '1Ti' } } } } };
    const spec = find(await renderChart(values), 'Cluster', 'blockfeed-postgresql').spec as { instances: number; storage: object; imageName?: string };
    expect(spec.instances).toBe(5);
    expect(spec.storage).toEqual({ size: '1Ti' });
    // No image named: the operator's default.
    expect(spec.imageName).toBeUndefined();
  });

  it("points the api-server at the operator's URL for the database owner, over TLS verified against the Cluster's CA", () => {
    const deployment = find(objs, 'Deployment', 'blockfeed-api');
    const api = container(deployment, 'api-server');
    // The uri names the -rw Service (the primary); Kubernetes puts it in DATABASE_URL ($(VAR) of an earlier variable).
    expect(env(api).get('CLOUDNATIVEPG_APP_URI')?.valueFrom?.secretKeyRef).toEqual({ name: 'blockfeed-postgresql-app', key: 'uri' });
    const names = (api.env ?? []).map((e) => e.name);
    expect(names.indexOf('CLOUDNATIVEPG_APP_URI')).toBeLessThan(names.indexOf('DATABASE_URL'));
    expect(env(api).get('DATABASE_URL')?.value).toBe('$(CLOUDNATIVEPG_APP_URI)?sslmode=verify-full&sslrootcert=/etc/blockfeed/postgresql-ca/ca.crt');
    expect(api.volumeMounts).toContainEqual({ name: 'postgresql-ca', mountPath: '/etc/blockfeed/postgresql-ca', readOnly: true });
    // The CA's certificate only, not its key.
    expect(podTemplate(deployment).spec.volumes?.find((v) => v.name === 'postgresql-ca')).toEqual({
      name: 'postgresql-ca',
      secret: { secretName: 'blockfeed-postgresql-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
    });
  });

  it('reads lists from the standbys (the -ro Service) with the credentials of DATABASE_URL, over the same TLS', () => {
    const api = container(find(objs, 'Deployment', 'blockfeed-api'), 'api-server');
    const read = env(api).get('DATABASE_READ_URL')?.value ?? '';
    expect(read).toBe('postgresql://blockfeed-postgresql-ro.blockfeed:5432/?sslmode=verify-full&sslrootcert=/etc/blockfeed/postgresql-ca/ca.crt');
    // The program's configuration takes it, and fills in the user, password and database of the operator's URL.
    const uri = 'postgresql://blockfeed:Zx%2F9%3Aa%40b@blockfeed-postgresql-rw.blockfeed:5432/blockfeed';
    const config = loadConfig({ env: { DATABASE_URL: `${uri}?sslmode=verify-full`, DATABASE_READ_URL: read } });
    expect(completeReadUrl(config.databaseReadUrl ?? '', config.databaseUrl ?? '')).toBe(
      'postgresql://blockfeed:Zx%2F9%3Aa%40b@blockfeed-postgresql-ro.blockfeed:5432/blockfeed?sslmode=verify-full&sslrootcert=/etc/blockfeed/postgresql-ca/ca.crt',
    );
  });

  it.each([
    ['auto, one instance', { instances: 1, minSyncReplicas: 0, maxSyncReplicas: 0 }, false],
    ['auto, instances raised in clusterSpec', { instances: 1, minSyncReplicas: 0, maxSyncReplicas: 0, clusterSpec: { instances: 3 } }, true],
    ['off', { readFromStandbys: false }, false],
    ['on, one instance', { instances: 1, minSyncReplicas: 0, maxSyncReplicas: 0, readFromStandbys: true }, true],
  ])('reads from the standbys or not: %s', async (_what, cloudnativepg, reads) => {
    const api = container(find(await renderChart({ database: { type: 'cloudnativepg', cloudnativepg } }), 'Deployment', 'blockfeed-api'), 'api-server');
    expect(env(api).has('DATABASE_READ_URL')).toBe(reads);
  });

  it("reads the server CA from the Secret the Cluster names, when it names one", async () => {
    const values = { database: { type: 'cloudnativepg', cloudnativepg: { clusterSpec: { certificates: { serverCASecret: 'our-ca', serverTLSSecret: 'our-tls' } } } } };
    const deployment = find(await renderChart(values), 'Deployment', 'blockfeed-api');
    expect(podTemplate(deployment).spec.volumes?.find((v) => v.name === 'postgresql-ca')).toMatchObject({ secret: { secretName: 'our-ca' } });
  });

  it('scrapes the instances through their metrics port with the ServiceMonitors\' settings', () => {
    const pm = find(objs, 'PodMonitor', 'blockfeed-postgresql');
    expect(pm.metadata.labels).toMatchObject({ release: 'prom', 'app.kubernetes.io/component': 'database' });
    expect(pm.spec).toEqual({
      selector: { matchLabels: { 'cnpg.io/cluster': 'blockfeed-postgresql' } },
      namespaceSelector: { matchNames: ['blockfeed'] },
      podMetricsEndpoints: [{ port: 'metrics', interval: '30s', scrapeTimeout: '10s' }],
    });
  });

  it('renders no PodMonitor without the ServiceMonitor switch, nor a Cluster without the api-server', async () => {
    expect(kindsOf(await renderChart({ database: { type: 'cloudnativepg' } })).filter((n) => n.startsWith('PodMonitor'))).toEqual([]);
    const controllerOnly = await renderChart({ database: { type: 'cloudnativepg' }, api: { enabled: false }, metrics: { serviceMonitor: { enabled: true } } });
    expect(kindsOf(controllerOnly).filter((n) => n.includes('postgresql'))).toEqual([]);
  });
});

describe('helm template of the controller alone', () => {
  it('renders no api-server and no database when api.enabled is false', async () => {
    const objs = await renderChart({ api: { enabled: false } });
    expect(objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] !== 'controller').map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([]);
    expect(kindsOf(objs)).toContain('Deployment/blockfeed-controller');
  });
});

describe('refusing wrong values', () => {
  it.each([
    ['a string where a number belongs', { api: { replicas: 'two' } }, "at '/api/replicas': got string, want integer"],
    ['a misspelt key', { api: { replica: 2 } }, "at '/api': additional properties 'replica' not allowed"],
    ['an unknown database type', { database: { type: 'mysql' } }, "at '/database/type': value must be one of 'bundled', 'external', 'cloudnativepg'"],
    ['no PostgreSQL instance', { database: { type: 'cloudnativepg', cloudnativepg: { instances: 0 } } }, "at '/database/cloudnativepg/instances': minimum: got 0, want 1"],
    ['a misspelt CloudNativePG key', { database: { cloudnativepg: { replicas: 3 } } }, "at '/database/cloudnativepg': additional properties 'replicas' not allowed"],
    ['a negative synchronous replica count', { database: { cloudnativepg: { minSyncReplicas: -1 } } }, "at '/database/cloudnativepg/minSyncReplicas'"],
    ['a malformed trusted proxy', { api: { trustedProxies: ['not a cidr'] } }, "at '/api/trustedProxies/0'"],
    ['an unknown quota word', { api: { tiers: { basic: 'lots' } } }, "at '/api/tiers/basic': value must be one of 'none', 'unlimited'"],
    ['a non-URL database URL', { database: { type: 'external', external: { url: 'mysql://x' } } }, "at '/database/external/url'"],
    ['an ingest token shorter than the api-server accepts', { api: { ingest: { enabled: true, token: 'short' } } }, "at '/api/ingest/token'"],
    ['a password that cannot sit in a URL', { database: { bundled: { password: 'p@ss/word' } } }, "at '/database/bundled/password'"],
  ])('rejects %s (values.schema.json)', async (_what, values, message) => {
    const r = await helmWithValues(['template', 'blockfeed', CHART], values);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/values don't meet the specifications of the schema/);
    expect(r.stderr).toContain(message);
  });

  it.each([
    ['more synchronous standbys required than allowed', { minSyncReplicas: 2, maxSyncReplicas: 1 }, 'database.cloudnativepg.minSyncReplicas (2) must not exceed database.cloudnativepg.maxSyncReplicas (1)'],
    ['as many synchronous standbys as instances', { instances: 2, maxSyncReplicas: 2, minSyncReplicas: 1 }, 'database.cloudnativepg.maxSyncReplicas (2) needs more instances: a primary and at least that many standbys (database.cloudnativepg.instances >= 3)'],
    ['an image without its major version in the tag', { imageName: 'registry.example/postgres:latest' }, 'database.cloudnativepg.imageName "registry.example/postgres:latest" needs a tag starting with the PostgreSQL major version'],
    ['an image without a tag', { imageName: 'registry.example:5000/postgres' }, 'database.cloudnativepg.imageName "registry.example:5000/postgres" needs a tag'],
  ])('refuses %s with CloudNativePG, naming the values', async (_what, cloudnativepg, message) => {
    const r = await helmWithValues(['template', 'blockfeed', CHART], { database: { type: 'cloudnativepg', cloudnativepg } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
  });

  it('accepts image tags CloudNativePG reads a major version from', async () => {
    for (const imageName of ['ghcr.io/cloudnative-pg/postgresql:17.5', 'localhost:5000/pg:16-bookworm', `registry.example/pg:15@sha256:${'a'.repeat(64)}`]) {
      const spec = find(await renderChart({ database: { type: 'cloudnativepg', cloudnativepg: { imageName } } }), 'Cluster', 'blockfeed-postgresql').spec as { imageName: string };
      expect(spec.imageName).toBe(imageName);
    }
  });

  it('refuses a Cluster name CloudNativePG would refuse (over 50 characters), saying what to shorten', async () => {
    const r = await helmWithValues(['template', 'a-release-name-long-enough-to-matter-here', CHART], { database: { type: 'cloudnativepg' } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('the CloudNativePG Cluster would be named a-release-name-long-enough-to-matter-here-blockfee-postgresql (61 characters)');
    expect(r.stderr).toContain('CloudNativePG allows 50: set fullnameOverride or a shorter release name');
  });

  it('asks for a database URL when the database is external', async () => {
    const r = await helmWithValues(['template', 'blockfeed', CHART], { database: { type: 'external' } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('database.type=external needs database.external.url or database.external.existingSecret');
  });

  it('accepts an existing Secret for the database URL and the ingest token instead', async () => {
    const objs = await renderChart({
      database: { type: 'external', external: { existingSecret: 'pg', existingSecretKey: 'url' } },
      api: { ingest: { enabled: true, existingSecret: 'ingest', existingSecretKey: 'tok' } },
    });
    expect(objs.filter((o) => o.kind === 'Secret')).toEqual([]);
    const api = container(find(objs, 'Deployment', 'blockfeed-api'), 'api-server');
    expect(env(api).get('DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({ name: 'pg', key: 'url' });
    expect(env(api).get('BLOCKFEED_INGEST_TOKEN')?.valueFrom?.secretKeyRef).toEqual({ name: 'ingest', key: 'tok' });
  });
});

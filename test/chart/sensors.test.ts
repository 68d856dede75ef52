// helm template of the chart's sensors: Cowrie with the shipper beside it, its Service on the nodes' addresses,
// its own NetworkPolicy, and the values that refuse a sensor with nowhere to ship.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { sensorVersions } from '../support/honeypots.ts';
import { CHART, helmWithValues, renderChart, type K8sObject } from '../support/helm.ts';

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: { name: string; value?: string }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { exec?: { command: string[] } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface Volume {
  name: string;
  emptyDir?: object;
  configMap?: { name: string };
  secret?: { secretName: string; items: { key: string; path: string }[] };
}
interface StatefulSetSpec {
  template: {
    metadata: { labels: Record<string, string>; annotations: Record<string, string> };
    spec: { securityContext: Record<string, unknown>; initContainers: Container[]; containers: Container[]; volumes: Volume[]; automountServiceAccountToken: boolean; enableServiceLinks: boolean };
  };
  volumeClaimTemplates?: { metadata: { name: string }; spec: { resources: { requests: { storage: string } } } }[];
}
interface ServiceSpec {
  type: string;
  externalTrafficPolicy: string;
  selector: Record<string, string>;
  ports: { name: string; port: number; targetPort: string; nodePort?: number }[];
}
interface PolicyPort {
  port: string | number;
  protocol: string;
}
interface NetworkPolicySpec {
  podSelector: { matchLabels: Record<string, string> };
  policyTypes: string[];
  ingress: { from?: object[]; ports: PolicyPort[] }[];
  egress: { to?: { podSelector: { matchLabels: Record<string, string> } }[]; ports: PolicyPort[] }[];
}

const COWRIE = { api: { ingest: { enabled: true } }, sensors: { cowrie: { enabled: true } } };
const NAME = 'blockfeed-cowrie';

const find = (objs: K8sObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} not rendered (have: ${objs.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')})`);
  return o;
};
const statefulSet = (objs: K8sObject[]) => find(objs, 'StatefulSet', NAME).spec as StatefulSetSpec;
const container = (objs: K8sObject[], name: string) => {
  const c = statefulSet(objs).template.spec.containers.find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
};
const envOf = (c: Container) => new Map((c.env ?? []).map((e) => [e.name, e.value]));
const mountOf = (c: Container, volume: string) => c.volumeMounts?.find((m) => m.name === volume)?.mountPath;
/** `--flag=value` of a container's arguments. */
const flag = (c: Container, name: string) => c.args?.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);

describe('helm template with sensors.cowrie.enabled', () => {
  let objs: K8sObject[];
  beforeAll(async () => {
    objs = await renderChart(COWRIE);
  });

  it('adds Cowrie: a StatefulSet, its ConfigMap, its Service and its NetworkPolicy', () => {
    const sensorObjects = objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'sensor-cowrie').map((o) => `${o.kind}/${o.metadata.name}`);
    expect(sensorObjects.sort()).toEqual([`ConfigMap/${NAME}`, `NetworkPolicy/${NAME}`, `Service/${NAME}`, `StatefulSet/${NAME}`]);
  });

  it("runs the official image's layout as its cowrie user, the shipper as that user too", () => {
    const cowrie = container(objs, 'cowrie');
    expect(cowrie.image).toBe(`cowrie/cowrie:${sensorVersions().cowrie}`);
    const pod = statefulSet(objs).template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 999, runAsGroup: 999, fsGroup: 999 });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.enableServiceLinks).toBe(false);
    expect(mountOf(cowrie, 'var')).toBe('/cowrie/cowrie-git/var');
    expect(mountOf(cowrie, 'etc')).toBe('/cowrie/cowrie-git/etc');
  });

  it("ships the file Cowrie writes: the log path under Cowrie's working directory, seen through the shared volume", () => {
    const cowrie = container(objs, 'cowrie');
    const shipper = container(objs, 'shipper');
    // Cowrie's working directory is the image's (/cowrie/cowrie-git); its log path is relative to it.
    const written = path.posix.join('/cowrie/cowrie-git', envOf(cowrie).get('COWRIE_OUTPUT_JSONLOG_LOGFILE') ?? '');
    const varInCowrie = mountOf(cowrie, 'var') ?? '';
    expect(written.startsWith(`${varInCowrie}/`)).toBe(true);
    const seenByShipper = path.posix.join(mountOf(shipper, 'var') ?? '', path.posix.relative(varInCowrie, written));
    expect(shipper.args?.slice(0, 2)).toEqual(['ship', seenByShipper]);
    expect(flag(shipper, '--format')).toBe('cowrie');
    // The positions on the same volume as the log: they live exactly as long.
    expect(flag(shipper, '--state-file')?.startsWith(`${mountOf(shipper, 'var')}/`)).toBe(true);
    expect(envOf(cowrie).get('COWRIE_OUTPUT_JSONLOG_ENABLED')).toBe('true');
    // The init container makes the log's directory on the volume, in Cowrie's working directory.
    const init = statefulSet(objs).template.spec.initContainers[0]!;
    expect(init.workingDir).toBe('/cowrie/cowrie-git');
    expect(mountOf(init, 'var')).toBe(varInCowrie);
    expect(init.command?.join(' ')).toContain(`"${path.posix.relative('/cowrie/cowrie-git', path.posix.dirname(written))}"`);
  });

  it("pushes to the api-server's Service with the token of the chart's ingest Secret", () => {
    const shipper = container(objs, 'shipper');
    const api = find(objs, 'Service', 'blockfeed-api').spec as { ports: { port: number }[] };
    expect(flag(shipper, '--url')).toBe(`http://blockfeed-api.blockfeed.svc:${api.ports[0]?.port}`);
    const tokenFile = flag(shipper, '--token-file') ?? '';
    const mount = shipper.volumeMounts?.find((m) => tokenFile.startsWith(`${m.mountPath}/`));
    expect(mount?.readOnly).toBe(true);
    const volume = statefulSet(objs).template.spec.volumes.find((v) => v.name === mount?.name);
    expect(volume?.secret).toMatchObject({ secretName: 'blockfeed-api', items: [{ key: 'ingest-token', path: path.posix.basename(tokenFile) }] });
    expect(objs.some((o) => o.kind === 'Secret' && o.metadata.name === 'blockfeed-api')).toBe(true);
  });

  it('listens where the Service sends attackers, which reach it with their own addresses (NodePort, externalTrafficPolicy Local)', () => {
    const svc = find(objs, 'Service', NAME).spec as ServiceSpec;
    expect(svc.type).toBe('NodePort');
    expect(svc.externalTrafficPolicy).toBe('Local');
    expect(svc.ports.map((p) => [p.name, p.port, p.targetPort, p.nodePort])).toEqual([
      ['ssh', 22, 'ssh', undefined],
      ['telnet', 23, 'telnet', undefined],
    ]);
    const cowrie = container(objs, 'cowrie');
    const ports = new Map((cowrie.ports ?? []).map((p) => [p.name, p.containerPort]));
    expect(envOf(cowrie).get('COWRIE_SSH_LISTEN_ENDPOINTS')).toBe(`tcp:${ports.get('ssh')}:interface=0.0.0.0`);
    expect(envOf(cowrie).get('COWRIE_TELNET_LISTEN_ENDPOINTS')).toBe(`tcp:${ports.get('telnet')}:interface=0.0.0.0`);
    expect(envOf(cowrie).get('COWRIE_TELNET_ENABLED')).toBe('true');
    expect(statefulSet(objs).template.metadata.labels).toMatchObject(svc.selector);
    // The readiness probe looks for the SSH port in /proc/net/tcp (hexadecimal) instead of connecting to it.
    const probe = cowrie.readinessProbe?.exec?.command.join(' ') ?? '';
    expect(probe).toContain(`:${ports.get('ssh')!.toString(16).toUpperCase().padStart(4, '0')}"`);
  });

  it('lets anyone reach the honeypot, and the shipper only the api-server and DNS', () => {
    const policy = find(objs, 'NetworkPolicy', NAME).spec as NetworkPolicySpec;
    expect(statefulSet(objs).template.metadata.labels).toMatchObject(policy.podSelector.matchLabels);
    expect(policy.policyTypes).toEqual(['Ingress', 'Egress']);
    // No `from`: every source, the internet included.
    expect(policy.ingress[0]).toEqual({ ports: [{ port: 'ssh', protocol: 'TCP' }, { port: 'telnet', protocol: 'TCP' }] });
    expect(policy.ingress[1]).toEqual({ from: [{ namespaceSelector: {} }], ports: [{ port: 'metrics', protocol: 'TCP' }] });
    const apiPods = (find(objs, 'Deployment', 'blockfeed-api').spec as { template: { metadata: { labels: Record<string, string> }; spec: { containers: Container[] } } }).template;
    const apiPort = apiPods.spec.containers[0]?.ports?.find((p) => p.name === 'http')?.containerPort;
    expect(policy.egress).toHaveLength(2);
    expect(apiPods.metadata.labels).toMatchObject(policy.egress[0]?.to?.[0]?.podSelector.matchLabels ?? { none: 'none' });
    expect(policy.egress[0]?.ports).toEqual([{ port: apiPort, protocol: 'TCP' }]);
    expect(policy.egress[1]).toEqual({ ports: [{ port: 53, protocol: 'UDP' }, { port: 53, protocol: 'TCP' }] });
  });

  it("keeps Cowrie's var/ on a claim by default, on an emptyDir without persistence", async () => {
    expect(statefulSet(objs).volumeClaimTemplates?.map((c) => [c.metadata.name, c.spec.resources.requests.storage])).toEqual([['var', '5Gi']]);
    expect(statefulSet(objs).template.spec.volumes.some((v) => v.name === 'var')).toBe(false);
    const ephemeral = statefulSet(await renderChart({ ...COWRIE, sensors: { cowrie: { enabled: true, persistence: { enabled: false } } } }));
    expect(ephemeral.volumeClaimTemplates).toBeUndefined();
    expect(ephemeral.template.spec.volumes.find((v) => v.name === 'var')?.emptyDir).toEqual({ sizeLimit: '5Gi' });
  });
});

describe('helm template of Cowrie with its values set', () => {
  const values = {
    api: { ingest: { enabled: true, existingSecret: 'sensor-token', existingSecretKey: 'token' } },
    sensors: {
      networkPolicy: { metricsFrom: [] },
      cowrie: {
        enabled: true,
        sensorName: 'hp-edge-1',
        hostname: 'web01',
        telnet: { enabled: false },
        config: '[shell]\nkernel_version = 6.1.0-18-amd64\n',
        userdb: 'root:x:!root\nroot:x:*\n',
        service: { type: 'LoadBalancer', nodePorts: { ssh: 30022 } },
        shipper: { metricsPort: 0 },
      },
    },
  };
  let objs: K8sObject[];
  beforeAll(async () => {
    objs = await renderChart(values);
  });

  it('passes the names to Cowrie and its configuration files through the ConfigMap', () => {
    const env = envOf(container(objs, 'cowrie'));
    expect(env.get('COWRIE_HONEYPOT_SENSOR_NAME')).toBe('hp-edge-1');
    expect(env.get('COWRIE_HONEYPOT_HOSTNAME')).toBe('web01');
    const data = (find(objs, 'ConfigMap', NAME) as K8sObject & { data: Record<string, string> }).data;
    expect(data['cowrie.cfg']).toContain('[shell]\nkernel_version = 6.1.0-18-amd64\n');
    expect(data['userdb.txt']).toBe('root:x:!root\nroot:x:*\n');
  });

  it('starts a new pod when the configuration changes', async () => {
    const checksum = (o: K8sObject[]) => statefulSet(o).template.metadata.annotations['checksum/config'];
    const changed = await renderChart({ ...values, sensors: { ...values.sensors, cowrie: { ...values.sensors.cowrie, userdb: 'admin:x:*\n' } } });
    expect(checksum(changed)).toMatch(/^[0-9a-f]{64}$/);
    expect(checksum(changed)).not.toBe(checksum(objs));
  });

  it('leaves telnet out everywhere, and metrics when their port is 0 or nobody may scrape', () => {
    const svc = find(objs, 'Service', NAME).spec as ServiceSpec;
    expect(svc.type).toBe('LoadBalancer');
    expect(svc.externalTrafficPolicy).toBe('Local');
    expect(svc.ports).toEqual([{ name: 'ssh', port: 22, targetPort: 'ssh', protocol: 'TCP', nodePort: 30022 }]);
    const cowrie = container(objs, 'cowrie');
    expect(cowrie.ports?.map((p) => p.name)).toEqual(['ssh']);
    expect(envOf(cowrie).get('COWRIE_TELNET_ENABLED')).toBe('false');
    const shipper = container(objs, 'shipper');
    expect(flag(shipper, '--metrics-bind-address')).toBe('0');
    expect(shipper.ports).toBeUndefined();
    const policy = find(objs, 'NetworkPolicy', NAME).spec as NetworkPolicySpec;
    expect(policy.ingress).toEqual([{ ports: [{ port: 'ssh', protocol: 'TCP' }] }]);
  });

  it('reads the token from the Secret api.ingest names', () => {
    const volume = statefulSet(objs).template.spec.volumes.find((v) => v.name === 'ingest-token');
    expect(volume?.secret).toMatchObject({ secretName: 'sensor-token', items: [{ key: 'token', path: 'ingest-token' }] });
  });

  it('scrapes the shipper with a PodMonitor when the ServiceMonitors are on', async () => {
    const monitored = await renderChart({ ...COWRIE, metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } } } });
    expect(find(monitored, 'PodMonitor', NAME).spec).toEqual({
      selector: { matchLabels: { 'app.kubernetes.io/name': 'blockfeed', 'app.kubernetes.io/instance': 'blockfeed', 'app.kubernetes.io/component': 'sensor-cowrie' } },
      namespaceSelector: { matchNames: ['blockfeed'] },
      podMetricsEndpoints: [{ port: 'metrics', interval: '30s', scrapeTimeout: '10s' }],
    });
    expect(objs.some((o) => o.kind === 'PodMonitor')).toBe(false);
  });

  it('leaves the NetworkPolicy out when sensors.networkPolicy.enabled is false', async () => {
    const unguarded = await renderChart({ ...COWRIE, sensors: { ...COWRIE.sensors, networkPolicy: { enabled: false } } });
    expect(unguarded.some((o) => o.kind === 'NetworkPolicy')).toBe(false);
  });
});

describe('Cowrie refused with nowhere to ship', () => {
  it.each([
    ['without the ingest route', { sensors: { cowrie: { enabled: true } } }],
    ['without the api-server', { api: { enabled: false, ingest: { enabled: true } }, sensors: { cowrie: { enabled: true } } }],
  ])('%s, naming the values to set', async (_what, values) => {
    const r = await helmWithValues(['template', 'blockfeed', CHART], values);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("sensors.cowrie.enabled needs this release's api-server with its ingest route (api.enabled=true, api.ingest.enabled=true)");
  });

  it.each([
    ['a ClusterIP Service, which attackers cannot reach', { service: { type: 'ClusterIP' } }, "at '/sensors/cowrie/service/type'"],
    ["the metrics on a honeypot's port", { shipper: { metricsPort: 2222 } }, "at '/sensors/cowrie/shipper/metricsPort'"],
    ['a sensor name the events cannot carry', { sensorName: 'hp edge' }, "at '/sensors/cowrie/sensorName'"],
    ['a misspelt key', { telnetEnabled: true }, "at '/sensors/cowrie': additional properties 'telnetEnabled' not allowed"],
  ])('rejects %s (values.schema.json)', async (_what, cowrie, message) => {
    const r = await helmWithValues(['template', 'blockfeed', CHART], { api: { ingest: { enabled: true } }, sensors: { cowrie: { enabled: true, ...cowrie } } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
  });
});

describe("the chart's default Cowrie", () => {
  it('is the version the integration tier attacks and the cluster tier builds (hack/sensors/versions.env)', () => {
    const values = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8')) as { sensors: { cowrie: { enabled: boolean; image: { tag: string } } } };
    expect(values.sensors.cowrie.image.tag).toBe(sensorVersions().cowrie);
    expect(values.sensors.cowrie.enabled).toBe(false);
  });
});

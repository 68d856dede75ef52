// From a real attack to a dropped packet on the cluster tier's node (cluster.ts), shared by the test that checks
// the loop (test/cluster/attack-to-block.test.ts) and the benchmark that times its stages (bench/attack-to-block.ts):
// the chart with its ingest route and Cowrie (sensors.cowrie: the shipper beside it), a busybox httpd in another
// namespace protected by a live BlocklistSubscription whose interval is a day — so only its long poll can block
// anyone while the loop runs — and hosts of the internet (attachClient: network namespaces with documentation
// addresses on the node's external network) that reach Cowrie and the workload the way the internet reaches a
// cluster: through NodePort Services on the node's address with externalTrafficPolicy: Local.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, CustomObjectsApi, NetworkingV1Api } from '@kubernetes/client-node';
import { attachClient, execInPod, podReport, splitImage, startCluster, type Client, type Cluster } from './cluster.ts';
import { CHART, helmWithValues } from './helm.ts';
import { eventually } from './k8s.ts';
import { NODE } from './node.ts';
import { startManaged } from './processes.ts';
import { startProtectedWeb } from './protected-web.ts';

export const RELEASE = 'blockfeed';
/** The release's namespace: the api-server, the controller, the database and Cowrie. */
export const SYSTEM = 'blockfeed';
export const PROTECTED = 'protected';
export const SUBSCRIPTIONS = 'subscriptions';
const SUBSCRIPTION = 'attackers';
const INGEST_TOKEN = 'cluster-tier-attack-loop-ingest-token';
export const COWRIE_POD = `${RELEASE}-cowrie-0`;
/** The nodePorts: Cowrie's SSH (the Service's port 22) and the workload's HTTP. */
export const COWRIE_SSH_NODE_PORT = 30022;
export const WEB_NODE_PORT = 30080;
/** hydra's wordlists: 15 logins, none of which Cowrie accepts (USERDB), so every one fails. */
const USERS = ['root', 'admin', 'ubuntu'];
const PASSWORDS = ['123456', 'password', 'admin', 'root', 'qwerty'];
const USERDB = 'root:x:Tr0ub4dor&3-in-no-wordlist\n';
/** How often an attacker tries the workload again while it attacks Cowrie. */
const PROBE_EVERY_MS = 150;

export const subscriptionResource = { group: 'blockfeed.dev', version: 'v1alpha1', namespace: SUBSCRIPTIONS, plural: 'blocklistsubscriptions' };

export interface AttackLoop {
  readonly cluster: Cluster;
  readonly core: CoreV1Api;
  /** Every host of the internet by address: the attackers and the bystanders. */
  readonly clients: ReadonlyMap<string, Client>;
  /** The workload as the internet sees it: the node's address and the Service's nodePort. */
  readonly webUrl: string;
  /** Cowrie's SSH as the internet sees it, for hydra. */
  readonly cowrieTarget: string;
  /** The workload's pod address, for what the sensor pod may not reach. */
  readonly webPodIp: string;
  /** Cowrie's JSON log where the node keeps its volume (a hostPath PersistentVolume). */
  readonly cowrieLog: string;
  stop(): Promise<void>;
}

export interface CowrieEvent {
  eventid: string;
  src_ip: string;
  timestamp: string;
  /** Its line in the log, from 1. */
  line: number;
}

export interface Attack {
  attacker: string;
  /** When hydra started (ms since the epoch). */
  hydraStartMs: number;
  /** When the first probe the workload refused (kube-router's policy rejects the connection) was sent. */
  refusedAtMs: number;
  /** Probes the workload answered before. */
  answeredProbes: number;
  /** Probes before it that got neither an answer nor a refusal (a time-out on a loaded machine), with what curl said. */
  otherProbes: string[];
}

/**
 * Starts the node, installs the chart with Cowrie and the workload, applies the live subscription (with
 * `minIntervalSeconds` when given, else the CRD's default) and attaches a host for each of `addresses`. `log`
 * gets a line per step.
 */
export async function startAttackLoop(addresses: readonly string[], log: (line: string) => void, { minIntervalSeconds }: { minIntervalSeconds?: number } = {}): Promise<AttackLoop> {
  const cluster = await startCluster({ images: ['blockfeed', 'postgresql', 'busybox', 'cowrie'], volumes: 2, log: (line) => process.env.CLUSTER_TEST_VERBOSE && log(line) });
  const clients = new Map<string, Client>();
  const stop = async () => {
    for (const c of clients.values()) await c.stop();
    await cluster.stop();
  };
  try {
    log(`cluster ready in ${cluster.startMs} ms`);
    const core = cluster.kc.makeApiClient(CoreV1Api);
    await installChart(cluster, core, log);
    const webPodIp = await startWorkload(cluster, core);
    await applySubscription(cluster, core, log, minIntervalSeconds);
    let i = 0;
    for (const address of addresses) clients.set(address, await attachClient(cluster, i++, address));
    return {
      cluster,
      core,
      clients,
      webUrl: `http://${NODE.address}:${WEB_NODE_PORT}/`,
      cowrieTarget: `ssh://${NODE.address}:${COWRIE_SSH_NODE_PORT}`,
      webPodIp,
      cowrieLog: await cowrieLogPath(core),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function installChart(cluster: Cluster, core: CoreV1Api, log: (line: string) => void): Promise<void> {
  const image = (name: 'blockfeed' | 'postgresql' | 'cowrie') => {
    const [repository, tag] = splitImage(cluster.images[name]);
    return { repository, tag, pullPolicy: 'Never' };
  };
  const t0 = Date.now();
  const installed = await helmWithValues(['install', RELEASE, CHART, '--namespace', SYSTEM, '--create-namespace', '--kubeconfig', cluster.kubeconfigPath, '--wait', '--timeout', '5m'], {
    image: image('blockfeed'),
    api: { replicas: 1, ingest: { enabled: true, token: INGEST_TOKEN } },
    database: { bundled: { image: image('postgresql') } },
    controller: { clusterCidrs: [NODE.podCidr, NODE.serviceCidr] },
    sensors: { cowrie: { enabled: true, image: image('cowrie'), userdb: USERDB, service: { nodePorts: { ssh: COWRIE_SSH_NODE_PORT } } } },
  });
  if (installed.code !== 0) throw new Error(`helm install failed:\n${installed.stderr}\n${await podReport(core, SYSTEM)}`);
  log(`helm install --wait (api-server, controller, database, Cowrie with its shipper): ${Date.now() - t0} ms`);
}

/** busybox httpd in PROTECTED (protected-web.ts), published on WEB_NODE_PORT with externalTrafficPolicy: Local; its pod's address. */
async function startWorkload(cluster: Cluster, core: CoreV1Api): Promise<string> {
  const address = await startProtectedWeb(cluster, PROTECTED);
  await core.createNamespacedService({
    namespace: PROTECTED,
    body: {
      metadata: { name: 'web' },
      spec: { type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http', nodePort: WEB_NODE_PORT }] },
    },
  });
  return address;
}

/**
 * An API key made with the CLI in the api-server's pod, and the live subscription: attackers at level high of the
 * last day, a NetworkPolicy in every namespace labelled blockfeed.dev/protect=true (not the release's, where
 * Cowrie runs), synced on a daily interval and within seconds of new data by its long poll.
 */
async function applySubscription(cluster: Cluster, core: CoreV1Api, log: (line: string) => void, minIntervalSeconds: number | undefined): Promise<void> {
  const api = (await core.listNamespacedPod({ namespace: SYSTEM, labelSelector: 'app.kubernetes.io/component=api-server' })).items[0];
  const created = await execInPod(cluster.kc, SYSTEM, api?.metadata?.name ?? '', 'api-server', ['blockfeed', 'keys', 'create', '--tier', 'enterprise', '--name', 'attack-loop']);
  const apiKey = created.stdout.trim().split('\n').at(-1) ?? '';
  await core.createNamespace({ body: { metadata: { name: SUBSCRIPTIONS } } });
  await core.createNamespacedSecret({ namespace: SUBSCRIPTIONS, body: { metadata: { name: 'blockfeed-key' }, stringData: { apiKey } } });
  const objects = cluster.kc.makeApiClient(CustomObjectsApi);
  await objects.createNamespacedCustomObject({
    ...subscriptionResource,
    body: {
      apiVersion: 'blockfeed.dev/v1alpha1',
      kind: 'BlocklistSubscription',
      metadata: { name: SUBSCRIPTION, namespace: SUBSCRIPTIONS },
      spec: {
        feed: {
          url: `http://${RELEASE}-api.${SYSTEM}.svc:8080`,
          endpoint: 'export',
          filters: { type: 'attacker', level: 'high', hours: 24 },
          credentials: { secretRef: { name: 'blockfeed-key', key: 'apiKey' } },
          live: { enabled: true, ...(minIntervalSeconds === undefined ? {} : { minIntervalSeconds }) },
        },
        interval: '24h',
        targets: [{ networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': 'true' } } } }],
      },
    },
  });
  const t0 = Date.now();
  await eventually(
    async () => {
      const got = (await objects.getNamespacedCustomObject({ ...subscriptionResource, name: SUBSCRIPTION })) as { status?: { conditions?: { type: string; status: string; message?: string }[] } };
      const conditions = got.status?.conditions ?? [];
      if (['Synced', 'Live'].every((type) => conditions.some((c) => c.type === type && c.status === 'True'))) return true;
      // The conditions so far, for the message when the wait ends without them.
      throw new Error(conditions.map((c) => `${c.type}=${c.status}: ${c.message ?? ''}`).join('; ') || 'no status yet');
    },
    120_000,
    'the subscription Synced, its long poll open (Live)',
  );
  log(`subscription synced and live ${Date.now() - t0} ms after it was applied (empty list: nobody has attacked yet)`);
}

/** Where the node keeps Cowrie's var/ (the claim's hostPath PersistentVolume), and the log in it. */
async function cowrieLogPath(core: CoreV1Api): Promise<string> {
  const claim = await core.readNamespacedPersistentVolumeClaim({ name: `var-${COWRIE_POD}`, namespace: SYSTEM });
  const volume = await core.readPersistentVolume({ name: claim.spec?.volumeName ?? '' });
  const dir = volume.spec?.hostPath?.path;
  if (!dir) throw new Error(`claim var-${COWRIE_POD} is not bound to a hostPath volume`);
  return path.join(dir, 'log/cowrie/cowrie.json');
}

/** Cowrie's log as written so far, line by line. */
export function cowrieEvents(loop: Pick<AttackLoop, 'cowrieLog'>): CowrieEvent[] {
  return readFileSync(loop.cowrieLog, 'utf8')
    .split('\n')
    .map((text, i) => ({ text, line: i + 1 }))
    .filter(({ text }) => text.trim() !== '')
    .map(({ text, line }) => ({ ...(JSON.parse(text) as Omit<CowrieEvent, 'line'>), line }));
}

/** The first failed login Cowrie logged from `address`, if any. */
export function firstFailedLogin(events: readonly CowrieEvent[], address: string): CowrieEvent | undefined {
  return events.find((e) => e.eventid === 'cowrie.login.failed' && e.src_ip === address);
}

/**
 * `address` brute-forces Cowrie's SSH with hydra (the wordlists above, 4 tasks) while it asks the workload for
 * its page every PROBE_EVERY_MS, until a request is refused; then hydra is let finish. Gives up after
 * `timeoutMs` without a refusal.
 */
export async function attack(loop: AttackLoop, address: string, timeoutMs = 120_000): Promise<Attack> {
  const client = loop.clients.get(address);
  if (!client) throw new Error(`no host ${address}`);
  const words = await mkdtemp(path.join(tmpdir(), 'blockfeed-hydra-'));
  try {
    await writeFile(path.join(words, 'users.txt'), `${USERS.join('\n')}\n`);
    await writeFile(path.join(words, 'passwords.txt'), `${PASSWORDS.join('\n')}\n`);
    const hydraStartMs = Date.now();
    // -I: no restore file to ask about; -t 4: four connections at once.
    const hydra = startManaged(`hydra from ${address}`, ...client.ns.command('hydra', ['-L', path.join(words, 'users.txt'), '-P', path.join(words, 'passwords.txt'), '-t', '4', '-I', loop.cowrieTarget]));
    let answeredProbes = 0;
    const otherProbes: string[] = [];
    for (;;) {
      const sent = Date.now();
      const r = await client.request(loop.webUrl, 2);
      if (r.outcome === 'refused') {
        await waitForExit(hydra.child, 120_000);
        return { attacker: address, hydraStartMs, refusedAtMs: sent, answeredProbes, otherProbes };
      }
      if (r.outcome === 'answered') answeredProbes++;
      else otherProbes.push(`${r.outcome}: ${r.detail}`);
      if (Date.now() - hydraStartMs > timeoutMs) {
        await hydra.stop();
        throw new Error(
          `${address} not refused by the workload ${timeoutMs / 1000} s after it started attacking Cowrie (${answeredProbes} requests answered, ` +
            `others: ${otherProbes.slice(-3).join('; ') || 'none'}; hydra: ${hydra.output().slice(-2000)})\n${await whereTheLoopStopped(loop)}`,
        );
      }
      await sleep(Math.max(0, sent + PROBE_EVERY_MS - Date.now()));
    }
  } finally {
    await rm(words, { recursive: true, force: true });
  }
}

/** What each stage of the loop has done so far, for the message of an attack that was never refused. */
async function whereTheLoopStopped(loop: AttackLoop): Promise<string> {
  const tail = async (namespace: string, labelSelector: string, container: string) => {
    try {
      const pod = (await loop.core.listNamespacedPod({ namespace, labelSelector })).items[0];
      return await loop.core.readNamespacedPodLog({ name: pod?.metadata?.name ?? '', namespace, container, tailLines: 15 });
    } catch (err) {
      return `(no log: ${(err as Error).message})`;
    }
  };
  const objects = loop.cluster.kc.makeApiClient(CustomObjectsApi);
  const subscription = (await objects.getNamespacedCustomObject({ ...subscriptionResource, name: SUBSCRIPTION })) as { status?: unknown };
  const policies = await loop.cluster.kc.makeApiClient(NetworkingV1Api).listNamespacedNetworkPolicy({ namespace: PROTECTED });
  return [
    `the shipper:\n${await tail(SYSTEM, `statefulset.kubernetes.io/pod-name=${COWRIE_POD}`, 'shipper')}`,
    `the api-server:\n${await tail(SYSTEM, 'app.kubernetes.io/component=api-server', 'api-server')}`,
    `the controller:\n${await tail(SYSTEM, 'app.kubernetes.io/component=controller', 'controller')}`,
    `the subscription's status: ${JSON.stringify(subscription.status)}`,
    `NetworkPolicies in ${PROTECTED}: ${JSON.stringify(policies.items.map((p) => ({ name: p.metadata?.name, ingress: p.spec?.ingress })))}`,
  ].join('\n');
}

async function waitForExit(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(timeoutMs)]);
}

/**
 * What a connection from the sensor's pod to `host:port` gets, tried from its shipper container (Node): the
 * sensor's NetworkPolicy lets it reach the api-server and DNS only.
 */
export async function connectFromSensor(loop: AttackLoop, host: string, port: number): Promise<string> {
  const script = [
    `const s = require('node:net').connect(${port}, ${JSON.stringify(host)});`,
    's.setTimeout(3000);',
    "s.on('connect', () => { console.log('connected'); s.destroy(); });",
    "s.on('error', (e) => console.log(e.code));",
    "s.on('timeout', () => { console.log('timed out'); s.destroy(); });",
  ].join(' ');
  const { stdout } = await execInPod(loop.cluster.kc, SYSTEM, COWRIE_POD, 'shipper', ['node', '-e', script]);
  return stdout.trim();
}

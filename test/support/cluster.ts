// A single-node Kubernetes cluster on the local host for the cluster tier and `make cluster`: the test control
// plane (control-plane.ts) and a node (node.ts) in one set of namespaces, so pods reach the apiserver through
// the `kubernetes` Service and kubelet serves exec and logs. This process reaches the apiserver on a forwarded
// 127.0.0.1 port; clients with addresses of their own (attachClient) are network namespaces on the node's
// external bridge, routed to the pods like hosts of the internet.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { CoreV1Api, Exec, KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { freePort } from './cli.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { forward, holdNamespaces, type Forward, type Namespaces } from './namespaces.ts';
import { processAlive } from './processes.ts';
import { IMAGE_NAMES, NODE, clusterBinaries, clusterImages, removeStaleCgroupRoots, setUpNodeNetwork, startNode, type ImageName, type Node } from './node.ts';

export interface Cluster {
  readonly dir: string;
  /** Admin kubeconfig for this process (the forwarded port). */
  readonly kubeconfigPath: string;
  readonly kc: KubeConfig;
  /** The node's namespaces: run(cmd, args) runs a command on the node. */
  readonly node: Namespaces;
  /** Where the node's programs write their logs (<name>.log). */
  readonly logsDir: string;
  /** Where kubelet keeps the containers' logs (<namespace>_<pod>_<uid>/<container>/<n>.log, CRI format). */
  readonly podLogsDir: string;
  /** Every image's name (images.env); the node has imported those asked for (ClusterOptions.images). */
  readonly images: Record<ImageName, string>;
  readonly startMs: number;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  log?: (line: string) => void;
  /** The images the node imports (pause always); default: every image `make cluster-images` builds. */
  images?: readonly ImageName[];
  /** hostPath PersistentVolumes to create: one per claim the test's workloads make (default 2). */
  volumes?: number;
}

const RUN_DIR_PREFIX = 'blockfeed-cluster-';

/** The run whose directory is `id`'s, if its process still runs. */
function runAlive(id: string): boolean {
  try {
    return processAlive(Number(readFileSync(path.join(tmpdir(), `${RUN_DIR_PREFIX}${id}`, 'owner.pid'), 'utf8')));
  } catch {
    return false;
  }
}

/** What runs killed before they could clean up left: their directories (containerd's images are big) and cgroups. */
async function removeStaleRuns(): Promise<void> {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(RUN_DIR_PREFIX))) {
    const id = name.slice(RUN_DIR_PREFIX.length);
    // A directory without owner.pid is being created (mkdtemp, then the file): left alone.
    if (existsSync(path.join(tmpdir(), name, 'owner.pid')) && !runAlive(id)) await rm(path.join(tmpdir(), name), { recursive: true, force: true });
  }
  removeStaleCgroupRoots(runAlive);
}

/** hostPath PersistentVolumes (the node's disk) for claims without a storage class, like the chart's database's. */
async function createVolumes(kc: KubeConfig, dir: string, count: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < count; i++) {
    const volume = path.join(dir, 'volumes', `pv-${i}`);
    await mkdir(volume, { recursive: true });
    // Any user id may own what it writes there (the database runs as 999, the blockfeed programs as 1000).
    await chmod(volume, 0o777);
    await core.createPersistentVolume({
      body: {
        metadata: { name: `node-disk-${i}` },
        spec: {
          capacity: { storage: '20Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          hostPath: { path: volume, type: 'Directory' },
        },
      },
    });
  }
}

export async function startCluster({ log = () => undefined, images: wanted = IMAGE_NAMES, volumes = 2 }: ClusterOptions = {}): Promise<Cluster> {
  if (process.getuid?.() !== 0) throw new Error('a cluster needs root: it makes namespaces, cgroups, bridges and iptables rules');
  const started = Date.now();
  const images = clusterImages(wanted);
  const bins = clusterBinaries();
  await removeStaleRuns();
  const dir = await mkdtemp(path.join(tmpdir(), RUN_DIR_PREFIX));
  await writeFile(path.join(dir, 'owner.pid'), String(process.pid));
  const node = await holdNamespaces({ node: true });
  const forwards: Forward[] = [];
  let plane: ControlPlane | undefined;
  let running: Node | undefined;
  const stop = async () => {
    // Everything of the node dies with its PID namespace at once; then what the host keeps for it goes.
    await node.stop();
    await running?.stop();
    await Promise.all(forwards.map((f) => f.stop()));
    await plane?.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await setUpNodeNetwork(node);
    plane = await startControlPlane({
      node: {
        namespaces: node,
        address: NODE.address,
        serviceCidr: NODE.serviceCidr,
        apiServiceAddress: NODE.apiServiceAddress,
        kubeScheduler: bins.kubeScheduler,
        reach: async (host, port) => {
          const f = await forward(node, host, port, dir, await freePort());
          forwards.push(f);
          return f.port;
        },
      },
      parentDir: dir,
      log,
    });
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    const credentials = { dir: plane.dir, server: plane.nodeServer, adminKubeconfig: plane.nodeKubeconfigPath, kc };
    running = await startNode(node, path.basename(dir).slice(RUN_DIR_PREFIX.length), path.join(dir, 'node'), credentials, log, wanted);
    await createVolumes(kc, dir, volumes);
    const startMs = Date.now() - started;
    log(`cluster ready after ${startMs} ms`);
    return { dir, kubeconfigPath: plane.kubeconfigPath, kc, node, logsDir: path.join(dir, 'node', 'logs'), podLogsDir: path.join(dir, 'node', 'pod-logs'), images: images.names, startMs, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** What became of a request: an HTTP answer, or how the connection failed. */
export type Outcome = 'answered' | 'refused' | 'timed out' | 'unreachable';

export interface RequestResult {
  outcome: Outcome;
  status?: number;
  /** The HTTP status, or what curl said. */
  detail: string;
}

export interface Client {
  /** The client's source address. */
  readonly address: string;
  readonly ns: Namespaces;
  /** GET `url` from the client's address with curl; `answered` is any HTTP status. */
  request(url: string, timeoutSeconds?: number): Promise<RequestResult>;
  stop(): Promise<void>;
}

/**
 * A host of its own with source address `address` (a /32): a network namespace whose eth0 is a port of the
 * node's external bridge (on 172.30.0.<10 + index>/24), its default route the node; the node routes `address`
 * back to it. Pods and the node see `address` itself, not a translated one, whether it connects to a pod's
 * address or to a NodePort on the node's.
 */
export async function attachClient(cluster: Pick<Cluster, 'node'>, index: number, address: string): Promise<Client> {
  const ns = await holdNamespaces();
  const link = `client${index}`;
  const local = `172.30.0.${10 + index}`;
  try {
    const ip = (...args: string[]) => ns.run('ip', args);
    await ip('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', link, 'netns', String(cluster.node.pid));
    await cluster.node.run('ip', ['link', 'set', link, 'master', NODE.externalBridge, 'up']);
    await ip('link', 'set', 'lo', 'up');
    await ip('addr', 'add', `${local}/${NODE.externalPrefix}`, 'dev', 'eth0');
    await ip('addr', 'add', `${address}/32`, 'dev', 'eth0');
    await ip('link', 'set', 'eth0', 'up');
    await ip('route', 'add', 'default', 'via', NODE.address, 'src', address);
    // The node's own address is on the link: without this route a connection to it (a NodePort) would leave
    // from the link's address, not from `address`.
    await ip('route', 'add', `${NODE.address}/32`, 'dev', 'eth0', 'src', address);
    await cluster.node.run('ip', ['route', 'add', `${address}/32`, 'via', local]);
  } catch (err) {
    await ns.stop();
    throw err;
  }
  return {
    address,
    ns,
    request: (url, timeoutSeconds = 3) => curl(ns, url, timeoutSeconds),
    stop: async () => {
      await cluster.node.run('ip', ['route', 'del', `${address}/32`]).catch(() => undefined);
      await ns.stop();
    },
  };
}

// curl's exit codes: 7 = could not connect (a TCP reset or an ICMP error; --verbose says which), 28 = timed out
// (nothing came back).
function curl(ns: Namespaces, url: string, timeoutSeconds: number): Promise<RequestResult> {
  const [cmd, args] = ns.command('curl', ['--silent', '--show-error', '--verbose', '--output', '/dev/null', '--write-out', '%{http_code}', '--max-time', String(timeoutSeconds), url]);
  return new Promise((resolve) => {
    execFile(cmd, args, (err, stdout, stderr) => {
      const detail = /failed: (.+)/.exec(stderr)?.[1] ?? stderr.trim().split('\n').at(-1) ?? '';
      if (!err) resolve({ outcome: 'answered', status: Number(stdout), detail: `HTTP ${stdout}` });
      else if (err.code === 28) resolve({ outcome: 'timed out', detail: `nothing back in ${timeoutSeconds} s` });
      else if (err.code === 7 && /refused/i.test(detail)) resolve({ outcome: 'refused', detail });
      else resolve({ outcome: 'unreachable', detail: detail || err.message });
    });
  });
}

/** Runs `command` in a pod's container through the apiserver and kubelet (kubectl exec); stdin optional. */
export async function execInPod(kc: KubeConfig, namespace: string, pod: string, container: string, command: string[], stdin?: string): Promise<{ stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const collect = (add: (text: string) => void) =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        add(chunk.toString());
        done();
      },
    });
  const status = await new Promise<V1Status>((resolve, reject) => {
    new Exec(kc)
      .exec(
        namespace,
        pod,
        container,
        command,
        collect((t) => (stdout += t)),
        collect((t) => (stderr += t)),
        stdin === undefined ? null : Readable.from([stdin]),
        false,
        resolve,
      )
      .catch(reject);
  });
  if (status.status !== 'Success') throw new Error(`${command.join(' ')} in ${namespace}/${pod}: ${status.message ?? status.reason ?? 'failed'}\n${stderr}`);
  return { stdout, stderr };
}

/** Each pod's phase, its containers' states and the namespace's warning events: why an install did not finish. */
export async function podReport(core: CoreV1Api, namespace: string): Promise<string> {
  const pods = (await core.listNamespacedPod({ namespace })).items.map((p) => {
    const containers = (p.status?.containerStatuses ?? []).map((c) => `${c.name} ready=${c.ready} restarts=${c.restartCount} ${JSON.stringify(c.state)}`);
    return `${p.metadata?.name}: ${p.status?.phase}\n  ${containers.join('\n  ')}`;
  });
  const events = (await core.listNamespacedEvent({ namespace })).items.filter((e) => e.type === 'Warning').map((e) => `${e.involvedObject.name}: ${e.reason} ${e.message}`);
  return [...pods, ...events].join('\n');
}

export function podReady(pod: V1Pod | undefined): boolean {
  return pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** "registry/name:tag" → [repository, tag]. */
export function splitImage(ref: string): [string, string] {
  const at = ref.lastIndexOf(':');
  return [ref.slice(0, at), ref.slice(at + 1)];
}

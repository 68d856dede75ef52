// The cluster tier's node: what a kubelet host runs, in namespaces of its own (namespaces.ts), the way a kind
// node runs in a container. containerd and runc (Debian's) run the pods, with the CNI bridge plugin on cni0;
// kubelet, kube-proxy (iptables) and kube-router's NetworkPolicy controller (iptables and ipsets, `make
// cluster-bin`) run beside them, and CoreDNS answers cluster names on the node's address. Every one of
// them, the shims and the containers die with the node's PID namespace; iptables, ipsets, routes and the
// bridges live in its network namespace, mounts in its mount namespace. Only cgroups are the host's: each
// node has a root of its own (/blockfeed-node-<id> in every hierarchy), removed when it stops; a killed run's
// is removed by the next run (cluster.ts).
import { existsSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { REPO_ROOT, builtPrograms, issueCert, kubeconfigYaml, readEnvFile } from './control-plane.ts';
import { execFileText, type Namespaces } from './namespaces.ts';
import { startManaged, waitWhileRunning, type ManagedProcess } from './processes.ts';

/** The node's addresses. Only inside its network namespace (and the clients attached to it). */
export const NODE = {
  name: 'blockfeed-node',
  /** On ext0, the node's external network, where clients attach (attachClient). */
  address: '172.30.0.2',
  externalPrefix: 24,
  externalBridge: 'ext0',
  /** Locally administered (02:...), the node's address in its last four bytes. */
  externalBridgeMac: '02:00:ac:1e:00:02',
  podCidr: '10.244.0.0/16',
  /** The node's share of podCidr (CNI host-local). */
  nodePodCidr: '10.244.0.0/24',
  serviceCidr: '10.96.0.0/16',
  /** The `kubernetes` Service. */
  apiServiceAddress: '10.96.0.1',
  clusterDomain: 'cluster.local',
} as const;

export interface ClusterBinaries {
  kubeScheduler: string;
  kubelet: string;
  kubeProxy: string;
  kubeRouter: string;
  coredns: string;
}

/** The node's programs written by `make cluster-bin` (.cache/k8s/cluster.env). */
export function clusterBinaries(root = REPO_ROOT): ClusterBinaries {
  const bins = builtPrograms(path.join(root, '.cache/k8s/cluster.env'), 'make cluster-bin', ['KUBE_SCHEDULER', 'KUBELET', 'KUBE_PROXY', 'KUBE_ROUTER', 'COREDNS']);
  return { kubeScheduler: bins.KUBE_SCHEDULER, kubelet: bins.KUBELET, kubeProxy: bins.KUBE_PROXY, kubeRouter: bins.KUBE_ROUTER, coredns: bins.COREDNS };
}

export type ImageName = 'blockfeed' | 'postgresql' | 'busybox' | 'pause' | 'cnpgOperator' | 'cnpgPostgresql' | 'cowrie';

/** Each image: its key in images.env and the archive name `make cluster-images` writes. */
const IMAGES: Record<ImageName, { key: string; archive: string }> = {
  blockfeed: { key: 'BLOCKFEED_IMAGE', archive: 'blockfeed' },
  postgresql: { key: 'POSTGRESQL_IMAGE', archive: 'postgresql' },
  busybox: { key: 'BUSYBOX_IMAGE', archive: 'busybox' },
  pause: { key: 'PAUSE_IMAGE', archive: 'pause' },
  cnpgOperator: { key: 'CNPG_OPERATOR_IMAGE', archive: 'cnpg-operator' },
  cnpgPostgresql: { key: 'CNPG_POSTGRESQL_IMAGE', archive: 'cnpg-postgresql' },
  cowrie: { key: 'COWRIE_IMAGE', archive: 'cowrie' },
};
export const IMAGE_NAMES = Object.keys(IMAGES) as ImageName[];

/**
 * The image archives `make cluster-images` writes for `wanted` (and pause, every pod's sandbox), and the names
 * every image carries (hack/images/images.env).
 */
export function clusterImages(wanted: readonly ImageName[] = IMAGE_NAMES, root = REPO_ROOT): { archives: string[]; names: Record<ImageName, string> } {
  const env = readEnvFile(path.join(root, 'hack/images/images.env'));
  const names = Object.fromEntries(IMAGE_NAMES.map((image) => [image, env[IMAGES[image].key] ?? ''])) as Record<ImageName, string>;
  const archives = [...new Set<ImageName>(['pause', ...wanted])].map((image) => path.join(root, '.cache/cluster/images', `${IMAGES[image].archive}.tar`));
  for (const a of archives) if (!existsSync(a)) throw new Error(`${a} not found: run \`make cluster-images\``);
  return { archives, names };
}

const CGROUP_FS = '/sys/fs/cgroup';
const CGROUP_ROOT_PREFIX = 'blockfeed-node-';

/** The cgroup hierarchies of the host: the unified one (v2), or each v1 hierarchy (cpu, memory, ...). */
function cgroupHierarchies(): string[] {
  if (existsSync(path.join(CGROUP_FS, 'cgroup.controllers'))) return [CGROUP_FS];
  return readdirSync(CGROUP_FS)
    .map((h) => path.join(CGROUP_FS, h))
    .filter((h) => statSync(h).isDirectory() && existsSync(path.join(h, 'cgroup.procs')));
}

/** rmdir of a cgroup tree, deepest first; a cgroup that still has processes stays (EBUSY). */
function removeCgroupTree(dir: string): void {
  let entries: string[];
  try {
    entries = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return;
  }
  for (const e of entries) removeCgroupTree(path.join(dir, e));
  try {
    rmdirSync(dir);
  } catch {
    /* busy: its processes are alive (another run's node), or already gone */
  }
}

/** Removes the cgroup roots of nodes whose run is over (`live(id)` false): a killed run leaves them behind. */
export function removeStaleCgroupRoots(live: (id: string) => boolean): void {
  for (const h of cgroupHierarchies()) {
    for (const name of readdirSync(h).filter((d) => d.startsWith(CGROUP_ROOT_PREFIX))) {
      if (!live(name.slice(CGROUP_ROOT_PREFIX.length))) removeCgroupTree(path.join(h, name));
    }
  }
}

/** Creates the node's cgroup root in every hierarchy. */
async function createCgroupRoot(id: string): Promise<string> {
  const name = `${CGROUP_ROOT_PREFIX}${id}`;
  for (const h of cgroupHierarchies()) {
    const dir = path.join(h, name);
    await mkdir(dir, { recursive: true });
    // A new v1 cpuset has no CPUs or memory nodes until given its parent's.
    if (h !== CGROUP_FS && existsSync(path.join(h, 'cpuset.cpus'))) {
      for (const f of ['cpuset.cpus', 'cpuset.mems']) await writeFile(path.join(dir, f), await readFile(path.join(h, f), 'utf8'));
    }
  }
  return `/${name}`;
}

/** Removes the node's cgroup root once the processes in it have died (they die with the node's namespace). */
async function removeCgroupRoot(root: string): Promise<void> {
  for (let i = 0; ; i++) {
    const left = cgroupHierarchies().filter((h) => {
      removeCgroupTree(path.join(h, root));
      return existsSync(path.join(h, root));
    });
    if (left.length === 0) return;
    if (i > 100) throw new Error(`cgroup ${root} still has processes in ${left.join(', ')}`);
    await sleep(100);
  }
}

export interface NodeCredentials {
  /** The control plane's directory: its CA signs the node's certificates (issueCert). */
  dir: string;
  /** The apiserver's URL inside the node. */
  server: string;
  /** An admin kubeconfig that works inside the node. */
  adminKubeconfig: string;
  /** An admin client for this process, to watch the node come up. */
  kc: KubeConfig;
}

export interface Node {
  /** Stops its programs (already dead when the node's PID namespace is gone) and removes its cgroup root. */
  stop(): Promise<void>;
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** Puts the node's external network in place: ext0 with the node's address, forwarding, bridge netfilter. */
export async function setUpNodeNetwork(ns: Namespaces): Promise<void> {
  const ip = (...args: string[]) => ns.run('ip', args);
  await ip('link', 'set', 'lo', 'up');
  // A MAC address of its own: a bridge otherwise takes its ports' lowest and changes it as clients come and go,
  // and clients that cached the old one lose the node for the seconds their ARP entry takes to expire.
  await ip('link', 'add', NODE.externalBridge, 'address', NODE.externalBridgeMac, 'type', 'bridge');
  await ip('addr', 'add', `${NODE.address}/${NODE.externalPrefix}`, 'dev', NODE.externalBridge);
  await ip('link', 'set', NODE.externalBridge, 'up');
  // The node has no default route: without one for Services, a connection it makes to a ClusterIP fails
  // (ENETUNREACH) before kube-proxy's DNAT could rewrite it.
  await ip('route', 'add', NODE.serviceCidr, 'dev', NODE.externalBridge);
  // Pods reach each other across cni0 through iptables only with bridge netfilter (Services, policies).
  await ns.run('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1', 'net.bridge.bridge-nf-call-iptables=1', 'net.bridge.bridge-nf-call-ip6tables=1']);
}

/** Starts containerd, imports the images (`images`; pause always), then kubelet, kube-proxy, kube-router and CoreDNS. */
export async function startNode(ns: Namespaces, id: string, dir: string, creds: NodeCredentials, log: (line: string) => void, images: readonly ImageName[] = IMAGE_NAMES): Promise<Node> {
  const bins = clusterBinaries();
  const started = Date.now();
  const processes: ManagedProcess[] = [];
  const cgroupRoot = await createCgroupRoot(id);
  const stop = async () => {
    for (const p of [...processes].reverse()) await p.stop(5_000);
    await removeCgroupRoot(cgroupRoot);
  };
  const start = (name: string, bin: string, args: string[]) => {
    const [command, argv] = ns.command(bin, args);
    const p = startManaged(name, command, argv, { logFile: path.join(dir, 'logs', `${name}.log`) });
    processes.push(p);
    return p;
  };
  try {
    const d = (...parts: string[]) => path.join(dir, ...parts);
    await Promise.all(['containerd', 'cni', 'cni-ipam', 'kubelet', 'logs', 'pod-logs'].map((p) => mkdir(d(p), { recursive: true })));

    // containerd: the CRI with runc on cgroupfs, the CNI config below, every state under dir.
    const socket = d('containerd', 'containerd.sock');
    const { archives, names } = clusterImages(images);
    await writeFile(
      d('containerd', 'config.toml'),
      [
        'version = 2',
        `root = "${d('containerd', 'root')}"`,
        `state = "${d('containerd', 'state')}"`,
        'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]',
        '[grpc]',
        `  address = "${socket}"`,
        '[ttrpc]',
        `  address = "${socket}.ttrpc"`,
        '[plugins."io.containerd.internal.v1.opt"]',
        `  path = "${d('containerd', 'opt')}"`,
        '[plugins."io.containerd.grpc.v1.cri"]',
        `  sandbox_image = "${names.pause}"`,
        // Pod network namespaces under the state directory, not /run/netns of the host.
        '  netns_mounts_under_state_dir = true',
        '  disable_apparmor = true',
        // Lowering oom_score_adj below containerd's own is not permitted here (and not needed): clamp it.
        '  restrict_oom_score_adj = true',
        '  [plugins."io.containerd.grpc.v1.cri".cni]',
        '    bin_dir = "/usr/lib/cni"',
        `    conf_dir = "${d('cni')}"`,
        '',
      ].join('\n'),
    );
    await writeFile(
      d('cni', '10-blockfeed.conflist'),
      json({
        cniVersion: '1.0.0',
        name: 'blockfeed',
        plugins: [
          {
            type: 'bridge',
            bridge: 'cni0',
            isGateway: true,
            ipMasq: true,
            hairpinMode: true,
            ipam: { type: 'host-local', dataDir: d('cni-ipam'), ranges: [[{ subnet: NODE.nodePodCidr }]], routes: [{ dst: '0.0.0.0/0' }] },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
        ],
      }),
    );
    const containerd = start('containerd', 'containerd', ['--config', d('containerd', 'config.toml')]);
    await waitWhileRunning('containerd', [containerd], async () => existsSync(socket), 30_000);
    for (const archive of archives) await execFileText('ctr', ['--address', socket, '--namespace', 'k8s.io', 'images', 'import', archive], { timeoutMs: 300_000 });
    log(`containerd ready, images imported after ${Date.now() - started} ms`);

    // kubelet, as the node's identity (Node authorizer), serving its API on the node's address.
    issueCert(creds.dir, 'kubelet', `/O=system:nodes/CN=system:node:${NODE.name}`, 'extendedKeyUsage=clientAuth');
    await writeFile(d('kubelet', 'kubeconfig'), kubeconfigYaml(creds.server, creds.dir, 'kubelet'));
    await writeFile(d('kubelet', 'resolv.conf'), `nameserver ${NODE.address}\n`);
    await writeFile(
      d('kubelet', 'config.json'),
      json({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        failCgroupV1: false,
        cgroupDriver: 'cgroupfs',
        cgroupRoot,
        containerRuntimeEndpoint: `unix://${socket}`,
        address: NODE.address,
        readOnlyPort: 0,
        healthzBindAddress: '127.0.0.1',
        authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: path.join(creds.dir, 'ca.crt') } },
        authorization: { mode: 'Webhook' },
        clusterDNS: [NODE.address],
        clusterDomain: NODE.clusterDomain,
        resolvConf: d('kubelet', 'resolv.conf'),
        podLogsDir: d('pod-logs'),
        failSwapOn: false,
        // The machine's disk is shared with everything else it runs: no evictions for disk pressure.
        evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
        imageGCHighThresholdPercent: 100,
        serializeImagePulls: false,
      }),
    );
    const kubelet = start('kubelet', bins.kubelet, [
      `--config=${d('kubelet', 'config.json')}`,
      `--kubeconfig=${d('kubelet', 'kubeconfig')}`,
      `--root-dir=${d('kubelet', 'root')}`,
      `--cert-dir=${d('kubelet', 'pki')}`,
      `--hostname-override=${NODE.name}`,
      `--node-ip=${NODE.address}`,
      '--v=0',
    ]);

    // kube-proxy (iptables), as system:kube-proxy (the default RBAC binds system:node-proxier to it).
    issueCert(creds.dir, 'kube-proxy', '/CN=system:kube-proxy', 'extendedKeyUsage=clientAuth');
    await writeFile(d('kube-proxy.kubeconfig'), kubeconfigYaml(creds.server, creds.dir, 'kube-proxy'));
    await writeFile(
      d('kube-proxy.json'),
      json({
        apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
        kind: 'KubeProxyConfiguration',
        clientConnection: { kubeconfig: d('kube-proxy.kubeconfig') },
        mode: 'iptables',
        clusterCIDR: NODE.podCidr,
        hostnameOverride: NODE.name,
        // NodePorts on the node's own address only, not on every address it has.
        nodePortAddresses: ['primary'],
        healthzBindAddress: '127.0.0.1:10256',
        metricsBindAddress: '127.0.0.1:10249',
        // nf_conntrack_max is the host's, not the node's to change.
        conntrack: { maxPerCore: 0, min: 0 },
      }),
    );
    start('kube-proxy', bins.kubeProxy, [`--config=${d('kube-proxy.json')}`, '--v=0']);

    // CoreDNS on the node's address (kubelet's clusterDNS): cluster names only, nothing forwarded.
    await writeFile(
      d('Corefile'),
      [
        '.:53 {',
        `  bind ${NODE.address}`,
        '  errors',
        '  ready 127.0.0.1:8181',
        `  kubernetes ${NODE.clusterDomain} in-addr.arpa ip6.arpa {`,
        `    kubeconfig ${creds.adminKubeconfig}`,
        '    pods insecure',
        '    fallthrough in-addr.arpa ip6.arpa',
        '  }',
        '  cache 30',
        '}',
        '',
      ].join('\n'),
    );
    const coredns = start('coredns', bins.coredns, ['-conf', d('Corefile')]);

    // kube-router reads the Node object kubelet registers: its NetworkPolicy controller only (no routing, no
    // service proxy), with iptables and ipsets, and no listening port (no health or metrics endpoint; without
    // the router there is no BGP speaker nor GoBGP admin port): why its advisories do not apply is in
    // docs/testing.md, "The enforcer"; the cluster tier checks that it listens nowhere beyond loopback.
    const core = creds.kc.makeApiClient(CoreV1Api);
    await waitWhileRunning(`node ${NODE.name} registered`, [containerd, kubelet], async () => Boolean(await core.readNode({ name: NODE.name })), 60_000);
    start('kube-router', bins.kubeRouter, [
      `--kubeconfig=${creds.adminKubeconfig}`,
      `--hostname-override=${NODE.name}`,
      '--run-firewall=true',
      '--run-router=false',
      '--run-service-proxy=false',
      '--enable-cni=false',
      '--enable-ipv6=false',
      `--service-cluster-ip-range=${NODE.serviceCidr}`,
      '--metrics-port=0',
      '--health-port=0',
    ]);
    await waitWhileRunning(
      `node ${NODE.name} Ready`,
      processes,
      async () => (await core.readNode({ name: NODE.name })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      120_000,
    );
    await waitWhileRunning('CoreDNS ready', [coredns], async () => (await ns.run('busybox', ['wget', '-q', '-O', '-', 'http://127.0.0.1:8181/ready'])).includes('OK'), 60_000);
    log(`node ${NODE.name} Ready after ${Date.now() - started} ms`);
    return { stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

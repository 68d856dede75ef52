// A real Kubernetes control plane for tests, started the way controller-runtime's envtest does it: etcd,
// kube-apiserver (RBAC, throwaway CA and serving certificate, service-account keys, an admin client
// certificate in system:masters) and kube-controller-manager (garbage collection, namespace deletion), all
// on free loopback ports. Binaries come from `make k8s-bin` (listed in .cache/k8s/current.env).
//
// Every process is started under `setpriv --pdeathsig KILL`, so the kernel kills it when the process that
// started it dies, even by SIGKILL: a crashed test run leaves no orphans.
//
// The cluster tier runs the same control plane inside its node's namespaces (`node`, see cluster.ts), where
// kubelets and pods can reach it, and adds kube-scheduler and every default controller.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile, readFile } from 'node:fs/promises';
import { request, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ApiextensionsV1Api, KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { enforcementPointCrdDir } from '../../hack/crds/enforcement-points.ts';
import { freePort } from './cli.ts';
import type { Namespaces } from './namespaces.ts';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface K8sBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  helm?: string;
}

/** KEY=value lines (comments and blank lines skipped), as the build scripts write them. */
export function readEnvFile(file: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#') && l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).replace(/^"|"$/g, '')]),
  );
}

/**
 * The paths of built programs listed in a file a build step writes; a clear error naming `target` when the file
 * or a program is missing.
 */
export function builtPrograms<K extends string>(file: string, target: string, keys: readonly K[]): Record<K, string> {
  if (!existsSync(file)) throw new Error(`${file} not found: run \`${target}\``);
  const env = readEnvFile(file);
  const need = (k: K) => {
    const v = env[k];
    if (!v || !existsSync(v)) throw new Error(`${file}: ${k} missing or not built (${v ?? 'unset'}); run \`${target}\``);
    return v;
  };
  return Object.fromEntries(keys.map((k) => [k, need(k)])) as Record<K, string>;
}

/** Reads the binary paths written by `make k8s-bin`; a clear error when they have not been built. */
export function k8sBinaries(root = REPO_ROOT): K8sBinaries {
  const file = path.join(root, '.cache/k8s/current.env');
  const bins = builtPrograms(file, 'make k8s-bin', ['ETCD', 'KUBE_APISERVER', 'KUBE_CONTROLLER_MANAGER']);
  return { etcd: bins.ETCD, kubeApiserver: bins.KUBE_APISERVER, kubeControllerManager: bins.KUBE_CONTROLLER_MANAGER, helm: readEnvFile(file).HELM };
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Issues a certificate signed by the control plane's CA, as `<name>.crt` and `<name>.key` in `dir`. */
export function issueCert(dir: string, name: string, subject: string, extensions: string): void {
  openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
  execFileSync('sh', ['-c', `printf '%s\\n' "$EXT" > ${name}.ext`], { cwd: dir, env: { ...process.env, EXT: extensions } });
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-out', `${name}.crt`, '-extfile', `${name}.ext`], dir);
}

/** A kubeconfig for the client certificate `<user>.crt` / `<user>.key` in `dir`. */
export function kubeconfigYaml(server: string, dir: string, user: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: test\n  cluster:\n    server: ${server}\n    certificate-authority: ${path.join(dir, 'ca.crt')}`,
    'users:',
    `- name: ${user}\n  user:\n    client-certificate: ${path.join(dir, `${user}.crt`)}\n    client-key: ${path.join(dir, `${user}.key`)}`,
    'contexts:',
    `- name: ${user}\n  context:\n    cluster: test\n    user: ${user}`,
    `current-context: ${user}`,
    '',
  ].join('\n');
}

/**
 * Writes a kubeconfig for `user` (client certificate signed by the plane's CA, in `groups`) and returns its
 * path. The user has no rights beyond what RBAC grants it.
 */
export async function issueUserKubeconfig(dir: string, server: string, user: string, groups: string[] = []): Promise<string> {
  if (!/^[a-z0-9][a-z0-9.-]*$/.test(user)) throw new Error(`user name ${user} must be a DNS label`);
  const subject = [...groups.map((g) => `/O=${g}`), `/CN=${user}`].join('');
  issueCert(dir, user, subject, 'extendedKeyUsage=clientAuth');
  const file = path.join(dir, `${user}.kubeconfig`);
  await writeFile(file, kubeconfigYaml(server, dir, user));
  return file;
}

export interface ControlPlaneOptions {
  /** Directory of CRD manifests to install and wait for (default: the repo's crds/). */
  crdDir?: string;
  /**
   * Also install the enforcement points' own CRDs (Gateway API, Envoy Gateway, Istio, Cilium, Calico) fetched by
   * `make k8s-crds` (default true): their targets are then validated by the real schemas.
   */
  enforcementPoints?: boolean;
  /** Start kube-controller-manager too (default true). */
  controllerManager?: boolean;
  /** Run inside a node's namespaces, as the control plane of a cluster with a kubelet (default: loopback). */
  node?: NodeHost;
  /** Where its directory is made (default: the system's temporary directory). */
  parentDir?: string;
  log?: (line: string) => void;
}

/** Where a cluster's control plane runs: the node's namespaces and addresses (cluster.ts). */
export interface NodeHost {
  namespaces: Namespaces;
  /** The node's address: the apiserver binds and advertises it (the `kubernetes` Service's endpoint). */
  address: string;
  serviceCidr: string;
  /** The first address of serviceCidr, the `kubernetes` Service, in the apiserver's certificate. */
  apiServiceAddress: string;
  /** kube-scheduler's binary. */
  kubeScheduler: string;
  /** A port on this process's loopback that reaches host:port inside the node. */
  reach(host: string, port: number): Promise<number>;
}

export interface ControlPlane {
  readonly dir: string;
  /** The apiserver's URL from this process (through a forwarded port when it runs in a node). */
  readonly server: string;
  /** The apiserver's URL inside the node (for kubelets and pods); `server` without a node. */
  readonly nodeServer: string;
  /** Admin kubeconfig (system:masters). */
  readonly kubeconfigPath: string;
  /** The same for programs inside the node (nodeServer); kubeconfigPath without a node. */
  readonly nodeKubeconfigPath: string;
  readonly startMs: number;
  /** A kubeconfig for a user with a client certificate and no rights beyond what RBAC grants it. */
  userKubeconfig(user: string, groups?: string[]): Promise<string>;
  stop(): Promise<void>;
}

interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
}

/** Starts `bin`, in a node's namespaces when given. */
function startProcess(name: string, bin: string, args: string[], dir: string, inside?: Namespaces): Proc {
  const [command, argv] = inside ? inside.command(bin, args) : [bin, args];
  // setpriv --pdeathsig: the kernel SIGKILLs the process when its parent (this Node process) dies.
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', command, ...argv], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { name, child, output: () => out };
}

async function stopProcess(p: Proc, timeoutMs = 10_000): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.child.once('exit', () => r()));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/**
 * GET over mTLS with the admin certificate; resolves with the status code (0 when unreachable). The
 * controller-manager serves a self-signed certificate of its own, hence `verify`.
 */
function probe(url: string, dir: string, verify = true): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { ca: readFileSync(path.join(dir, 'ca.crt')), cert: readFileSync(path.join(dir, 'admin.crt')), key: readFileSync(path.join(dir, 'admin.key')), timeout: 2000, rejectUnauthorized: verify }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, procs: Proc[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    const dead = procs.find((p) => p.child.exitCode !== null);
    if (dead) throw new Error(`${dead.name} exited (${dead.child.exitCode}) while waiting for ${what}:\n${dead.output().slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${procs.map((p) => `--- ${p.name}\n${p.output().slice(-2000)}`).join('\n')}`);
    await sleep(200);
  }
}

/**
 * A request to the API server with `kc`'s credentials and a raw JSON body. Used where client-node's typed
 * serializer would drop fields it names differently (e.g. `enum` in CRD schemas is `_enum` in its models).
 */
export async function rawRequest(kc: KubeConfig, method: string, apiPath: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; body: unknown }> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('kubeconfig has no current cluster');
  const opts: RequestOptions = { method, timeout: 10_000, headers: body === undefined ? {} : { 'content-type': contentType } };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = request(new URL(apiPath, server), opts, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text) as unknown;
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`${method} ${apiPath}: timeout`)));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Installs every CRD manifest in `dir` and waits until each is Established and served by discovery. */
export async function installCrds(kc: KubeConfig, dir: string): Promise<V1CustomResourceDefinition[]> {
  if (!existsSync(dir)) return [];
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const crds: V1CustomResourceDefinition[] = [];
  for (const file of (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    for (const doc of parseAllDocuments(await readFile(path.join(dir, file), 'utf8'))) {
      const crd = doc.toJS() as V1CustomResourceDefinition | null;
      if (crd?.kind !== 'CustomResourceDefinition') continue;
      // Server-side apply with the manifest as JSON: creates or updates, and keeps every schema field.
      const name = crd.metadata?.name ?? '';
      const res = await rawRequest(kc, 'PATCH', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}?fieldManager=blockfeed-test&force=true`, crd, 'application/apply-patch+yaml');
      if (res.status >= 300) throw new Error(`installing CRD ${name} from ${file}: ${res.status} ${JSON.stringify(res.body)}`);
      crds.push(crd);
    }
  }
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    for (let i = 0; ; i++) {
      const got = await api.readCustomResourceDefinition({ name });
      if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (i > 300) throw new Error(`CRD ${name} not Established`);
      await sleep(100);
    }
    for (const version of crd.spec.versions.filter((v) => v.served)) {
      const url = `/apis/${crd.spec.group}/${version.name}`;
      for (let i = 0; ; i++) {
        const res = await rawRequest(kc, 'GET', url).catch(() => undefined);
        const body = res?.status === 200 ? (res.body as { resources?: { name: string }[] }) : undefined;
        if (body?.resources?.some((r) => r.name === crd.spec.names.plural)) break;
        if (i > 300) throw new Error(`discovery does not serve ${crd.spec.names.plural}.${crd.spec.group}/${version.name}`);
        await sleep(100);
      }
    }
  }
  return crds;
}

/** The enforcement points' CRDs fetched by `make k8s-crds`; a clear error when they have not been. */
export function enforcementPointCrds(root = REPO_ROOT): string {
  const dir = enforcementPointCrdDir(root);
  if (!existsSync(dir)) throw new Error(`${dir} not found: run \`make k8s-crds\` to fetch the enforcement points' CRDs (hack/crds/enforcement-points.ts)`);
  return dir;
}

export async function startControlPlane({
  crdDir = path.join(REPO_ROOT, 'crds'),
  enforcementPoints = true,
  controllerManager = true,
  node,
  parentDir = tmpdir(),
  log = () => undefined,
}: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const bins = k8sBinaries();
  const crdDirs = [crdDir, ...(enforcementPoints ? [enforcementPointCrds()] : [])];
  const started = Date.now();
  const dir = await mkdtemp(path.join(parentDir, 'blockfeed-k8s-'));
  const procs: Proc[] = [];
  const start = (name: string, bin: string, args: string[]) => procs.push(startProcess(name, bin, args, dir, node?.namespaces));
  // Inside a node every port is free (a network namespace of its own): the usual ones.
  const port = async (usual: number) => (node ? usual : await freePort());
  const reach = async (host: string, p: number) => (node ? `127.0.0.1:${await node.reach(host, p)}` : `${host}:${p}`);
  const stop = async () => {
    for (const p of [...procs].reverse()) await stopProcess(p);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const address = node?.address ?? '127.0.0.1';
    const serviceCidr = node?.serviceCidr ?? '10.0.0.0/24';
    const sans = ['IP:127.0.0.1', 'DNS:localhost', 'DNS:kubernetes', 'DNS:kubernetes.default', 'DNS:kubernetes.default.svc', `IP:${node?.apiServiceAddress ?? '10.0.0.1'}`];
    if (node) sans.push(`IP:${node.address}`, 'DNS:kubernetes.default.svc.cluster.local');
    // Throwaway PKI: CA, apiserver serving cert, admin client cert, service-account signing keys.
    openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=blockfeed-test-ca'], dir);
    issueCert(dir, 'apiserver', '/CN=kube-apiserver', `subjectAltName=${sans.join(',')}\nextendedKeyUsage=serverAuth`);
    issueCert(dir, 'admin', '/O=system:masters/CN=admin', 'extendedKeyUsage=clientAuth');
    if (node) issueCert(dir, 'apiserver-kubelet', '/O=system:masters/CN=kube-apiserver-kubelet-client', 'extendedKeyUsage=clientAuth');
    openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
    openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);

    const [etcdClient, etcdPeer, apiPort] = [await port(2379), await port(2380), await port(6443)];
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    start('etcd', bins.etcd, [
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]);
    const etcdHealth = `http://${await reach('127.0.0.1', etcdClient)}/health`;
    await waitFor('etcd', async () => (await fetch(etcdHealth).then((r) => r.ok).catch(() => false)), procs, 30_000);
    log(`etcd ready after ${Date.now() - started} ms`);

    const server = `https://${await reach(address, apiPort)}`;
    const nodeServer = `https://${address}:${apiPort}`;
    start('kube-apiserver', bins.kubeApiserver, [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${address}`,
      `--advertise-address=${address}`,
      `--secure-port=${apiPort}`,
      `--cert-dir=${dir}`,
      `--tls-cert-file=${path.join(dir, 'apiserver.crt')}`,
      `--tls-private-key-file=${path.join(dir, 'apiserver.key')}`,
      `--client-ca-file=${path.join(dir, 'ca.crt')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${path.join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${path.join(dir, 'sa.key')}`,
      `--service-cluster-ip-range=${serviceCidr}`,
      '--allow-privileged=true',
      '--enable-priority-and-fairness=false',
      '--v=0',
      ...(node
        ? [
            // A cluster's: kubelets authorised as nodes, pods with ServiceAccount tokens, and the apiserver's
            // own client certificate for kubelets (exec, logs).
            '--authorization-mode=Node,RBAC',
            '--enable-admission-plugins=NodeRestriction',
            `--kubelet-client-certificate=${path.join(dir, 'apiserver-kubelet.crt')}`,
            `--kubelet-client-key=${path.join(dir, 'apiserver-kubelet.key')}`,
            '--kubelet-preferred-address-types=InternalIP',
          ]
        : [
            // The default reconciler refuses a loopback advertise address; there are no other apiservers anyway.
            '--endpoint-reconciler-type=none',
            '--authorization-mode=RBAC',
            '--disable-admission-plugins=ServiceAccount',
          ]),
    ]);
    await writeFile(path.join(dir, 'admin.kubeconfig'), kubeconfigYaml(server, dir, 'admin'));
    // The programs inside the node reach the apiserver directly.
    const nodeKubeconfig = path.join(dir, node ? 'admin-node.kubeconfig' : 'admin.kubeconfig');
    if (node) await writeFile(nodeKubeconfig, kubeconfigYaml(nodeServer, dir, 'admin'));
    await waitFor('kube-apiserver /readyz', async () => (await probe(`${server}/readyz`, dir)) === 200, procs, 120_000);
    log(`kube-apiserver ready after ${Date.now() - started} ms`);

    // Each component authenticates with the admin certificate and serves /healthz with a self-signed one.
    const component = async (name: string, bin: string, usualPort: number, args: string[]) => {
      const p = await port(usualPort);
      start(name, bin, [
        `--kubeconfig=${nodeKubeconfig}`,
        `--authentication-kubeconfig=${nodeKubeconfig}`,
        `--authorization-kubeconfig=${nodeKubeconfig}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${p}`,
        `--cert-dir=${path.join(dir, `${name}-certs`)}`,
        '--leader-elect=false',
        '--v=0',
        ...args,
      ]);
      const healthz = `https://${await reach('127.0.0.1', p)}/healthz`;
      await waitFor(`${name} /healthz`, async () => (await probe(healthz, dir, false)) === 200, procs, 60_000);
      log(`${name} ready after ${Date.now() - started} ms`);
    };
    if (controllerManager) {
      await component('kube-controller-manager', bins.kubeControllerManager, 10257, [
        // A cluster gets every default controller (deployments, endpoints, volumes, ...); the k8s tier only
        // what its tests rely on.
        node
          ? '--controllers=*'
          : '--controllers=namespace-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller',
        `--service-account-private-key-file=${path.join(dir, 'sa.key')}`,
        `--root-ca-file=${path.join(dir, 'ca.crt')}`,
        `--service-cluster-ip-range=${serviceCidr}`,
        '--use-service-account-credentials=false',
      ]);
    }
    if (node) await component('kube-scheduler', node.kubeScheduler, 10259, []);

    const kc = new KubeConfig();
    kc.loadFromFile(path.join(dir, 'admin.kubeconfig'));
    // CRDs of different directories are independent: installed side by side.
    await Promise.all(crdDirs.map((d) => installCrds(kc, d)));
    const startMs = Date.now() - started;
    log(`control plane ready after ${startMs} ms`);

    return {
      dir,
      server,
      nodeServer,
      kubeconfigPath: path.join(dir, 'admin.kubeconfig'),
      nodeKubeconfigPath: nodeKubeconfig,
      startMs,
      userKubeconfig: (user: string, groups: string[] = []) => issueUserKubeconfig(dir, server, user, groups),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

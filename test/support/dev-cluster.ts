// `make dev-cluster` (the k8s tier's control plane) and `make cluster` (`--node`: the cluster tier's
// single-node cluster) for people. Runs in the foreground until SIGTERM or SIGINT (the Makefile starts it in
// the background and records its pid); prints the KUBECONFIG line when ready and leaves the kubeconfig's
// path (and the node's log directory and pid) in the state directory.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startCluster } from './cluster.ts';
import { REPO_ROOT, startControlPlane } from './control-plane.ts';

const withNode = process.argv.includes('--node');
const stateDir = process.env.BLOCKFEED_DEV_CLUSTER_STATE ?? path.join(REPO_ROOT, withNode ? '.cache/cluster/run' : '.cache/dev-cluster');
mkdirSync(stateDir, { recursive: true });
const log = (line: string) => console.error(`[dev-cluster] ${line}`);
const running = withNode ? await startCluster({ log }) : await startControlPlane({ log });
// With a node: where its logs are, and a pid for `nsenter --target <pid> --net --mount --pid` (a shell on it).
const state = { 'kubeconfig-path': running.kubeconfigPath, ...('node' in running ? { 'logs-path': running.logsDir, 'node-pid': String(running.node.pid) } : {}) };
// kubeconfig-path last: the Makefile waits for it.
for (const [file, content] of Object.entries(state).reverse()) writeFileSync(path.join(stateDir, file), content);
console.log(`export KUBECONFIG=${running.kubeconfigPath}`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  await running.stop();
  for (const file of Object.keys(state)) rmSync(path.join(stateDir, file), { force: true });
  process.exit(0);
};
process.on('SIGTERM', () => void shutdown());
process.on('SIGINT', () => void shutdown());
// Keep the event loop alive: the processes are our children.
setInterval(() => undefined, 1 << 30);

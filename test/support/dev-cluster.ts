// `make dev-cluster`: the test control plane for people. Runs in the foreground until SIGTERM/SIGINT
// (the Makefile starts it in the background and records its pid); prints the KUBECONFIG line when ready.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, startControlPlane } from './control-plane.ts';

const stateDir = process.env.BLOCKFEED_DEV_CLUSTER_STATE ?? path.join(REPO_ROOT, '.cache/dev-cluster');
mkdirSync(stateDir, { recursive: true });
const plane = await startControlPlane({ log: (line) => console.error(`[dev-cluster] ${line}`) });
writeFileSync(path.join(stateDir, 'kubeconfig-path'), plane.kubeconfigPath);
console.log(`export KUBECONFIG=${plane.kubeconfigPath}`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  await plane.stop();
  rmSync(path.join(stateDir, 'kubeconfig-path'), { force: true });
  process.exit(0);
};
process.on('SIGTERM', () => void shutdown());
process.on('SIGINT', () => void shutdown());
// Keep the event loop alive: the control plane's processes are our children.
setInterval(() => undefined, 1 << 30);

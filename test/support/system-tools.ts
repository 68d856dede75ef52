// vitest globalSetup of every tier: the system tools the tier's tests run must be installed. A missing one
// fails the run at once, naming it, rather than failing or skipping tests one by one. `make test` installs
// them first (.ci/system-deps); the Kubernetes binaries and helm come from `make k8s-bin` and are checked
// where they are used (control-plane.ts, helm.ts).
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

/** What each tier runs: promtool (metrics and alert rules), nginx (the nginx format), the attackers and the
 * network namespaces of the real honeypots' test (hydra, sshpass, ssh; ip, ss, unshare, nsenter, setpriv),
 * prometheus (e2e), and openssl, setpriv and ps for the control plane and the processes tests start, chromium
 * (the website), and the node, network and image tools of the cluster tier with its attacker (hydra). */
export const TOOLS_BY_TIER: Readonly<Record<string, readonly string[]>> = {
  unit: ['promtool'],
  integration: ['promtool', 'nginx', 'hydra', 'sshpass', 'ssh', 'ip', 'ss', 'unshare', 'nsenter', 'setpriv'],
  k8s: ['openssl', 'setpriv', 'ps'],
  'k8s-serial': ['openssl', 'setpriv'],
  chart: ['promtool'],
  e2e: ['prometheus', 'openssl', 'setpriv'],
  browser: ['chromium'],
  cluster: ['containerd', 'runc', 'iptables', 'ipset', 'nft', 'conntrack', 'ip', 'tini', 'socat', 'curl', 'buildah', 'hydra', 'busybox'],
};

/** PATH, then the sbin directories a minimal PATH leaves out (Debian puts nginx in /usr/sbin). */
export function searchDirs(envPath = process.env.PATH ?? ''): string[] {
  return [...envPath.split(path.delimiter).filter(Boolean), '/usr/sbin', '/sbin'];
}

function executableIn(dirs: readonly string[], name: string): boolean {
  return dirs.some((dir) => {
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The tools of `tier` found in none of `dirs`. */
export function missingTools(tier: string, dirs: readonly string[]): string[] {
  return (TOOLS_BY_TIER[tier] ?? []).filter((tool) => !executableIn(dirs, tool));
}

export default function setup(project: TestProject): void {
  const missing = missingTools(project.name, searchDirs());
  if (missing.length) {
    throw new Error(
      `the ${project.name} tier runs ${missing.join(', ')}, which ${missing.length === 1 ? 'is' : 'are'} not installed: ` +
        'run .ci/system-deps (make test runs it first; it installs the Debian packages, with sudo when not root)',
    );
  }
}

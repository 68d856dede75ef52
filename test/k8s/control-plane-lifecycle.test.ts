// The harness cleans up after itself: on stop, and when the process that started it dies abruptly.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, startControlPlane } from '../support/control-plane.ts';
import { eventually } from '../support/k8s.ts';

function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return ''; // exited meanwhile (e.g. the `ps` that listed it)
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2]?.startsWith('Z');
  } catch {
    return false;
  }
}

describe('control-plane harness lifecycle', () => {
  it('stop() ends every process and removes its directory', async () => {
    const plane = await startControlPlane({ controllerManager: false, crdDir: path.join(REPO_ROOT, 'test/fixtures/k8s') });
    const pids = childPids(process.pid).filter((p) => /etcd|kube-apiserver/.test(commandOf(p)));
    expect(pids).toHaveLength(2);
    expect(existsSync(plane.dir)).toBe(true);
    await plane.stop();
    expect(pids.filter(alive)).toEqual([]);
    expect(existsSync(plane.dir)).toBe(false);
  });

  it('a starter killed with SIGKILL leaves no orphan processes', async () => {
    const node = process.execPath;
    const starter = spawn(node, [path.join(REPO_ROOT, 'test/support/dev-cluster.ts')], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, BLOCKFEED_DEV_CLUSTER_STATE: path.join(REPO_ROOT, '.cache/dev-cluster-test') } });
    let out = '';
    starter.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await eventually(async () => (out.includes('export KUBECONFIG=') ? true : undefined), 120_000, 'dev cluster to start');
    const pids = childPids(starter.pid ?? 0);
    expect(pids.length).toBeGreaterThanOrEqual(3); // etcd, kube-apiserver, kube-controller-manager
    starter.kill('SIGKILL');
    await eventually(async () => (pids.filter(alive).length === 0 ? true : undefined), 30_000, 'control-plane processes to die with their starter');
  });
});

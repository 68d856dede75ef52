// Two real `blockfeed controller` processes with leader election: only the lease holder syncs and writes;
// when it dies (SIGKILL, no goodbye) the other takes the lease over and carries on.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BLOCKFEED, cliEnv, freePort } from '../../support/cli.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import { FeedServer, applySubscription, condition, events, getSubscription, startController, syncNow, type Harness } from '../../support/controller-harness.ts';

interface Proc {
  child: ChildProcessWithoutNullStreams;
  metricsPort: number;
  output: () => string;
}

const feed = new FeedServer();
const procs: Proc[] = [];
let ns: string;
let h: Harness; // an API client only: its controller watches a namespace with no subscriptions

async function startProcess(): Promise<Proc> {
  const metricsPort = await freePort();
  const healthPort = await freePort();
  const child = spawn(
    BLOCKFEED,
    [
      'controller',
      '--kubeconfig', inject('kubeconfigPath'),
      '--namespace', ns,
      '--leader-elect',
      '--lease-namespace', ns,
      '--lease-duration', '3',
      '--metrics-bind-address', `127.0.0.1:${metricsPort}`,
      '--health-probe-bind-address', `127.0.0.1:${healthPort}`,
    ],
    { env: cliEnv({ LOG_LEVEL: 'info' }) },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await eventually(async () => ((await fetch(`http://127.0.0.1:${healthPort}/readyz`)).status === 200 ? true : undefined), 30_000, 'readyz');
  const proc = { child, metricsPort, output: () => out };
  procs.push(proc);
  return proc;
}

async function metric(p: Proc, name: string): Promise<string[]> {
  const text = await (await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith(name));
}

async function holder(): Promise<string | undefined> {
  const lease = await h.kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'blockfeed-controller', namespace: ns });
  return lease.spec?.holderIdentity ?? undefined;
}

const pidOf = (identity: string) => Number(identity.split('_')[1]);

beforeAll(async () => {
  await feed.start();
  feed.lines = ['203.0.113.10', '203.0.113.11'];
  ns = await freshNamespace('bls-leader');
  h = await startController(await freshNamespace('bls-leader-idle'));
});

afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await h?.stop();
  await feed.stop();
});

describe('leader election', () => {
  it('lets only the leader write, and hands over when the leader dies', async () => {
    const a = await startProcess();
    const b = await startProcess();
    const first = await eventually(holder, 30_000, 'a lease holder');
    const leader = pidOf(first) === a.child.pid ? a : b;
    const follower = leader === a ? b : a;
    expect(pidOf(first)).toBe(leader.child.pid);

    await applySubscription(h, ns, 'shared', {
      feed: { url: feed.url, endpoint: 'scan-export' },
      interval: '1h',
      targets: [{ configMap: { name: 'shared', formats: ['txt'] } }],
    });
    await eventually(async () => (condition(await getSubscription(h, ns, 'shared'), 'Ready')?.status === 'True' ? true : undefined), 30_000, 'Ready');
    const synced = (await events(h, ns, 'shared')).filter((e) => e.reason === 'Synced');
    expect(synced.length).toBeGreaterThan(0);
    expect(new Set(synced.map((e) => e.instance))).toEqual(new Set([first]));
    expect(await metric(leader, 'blockfeed_controller_leader')).toContain('blockfeed_controller_leader{program="controller"} 1');
    expect(await metric(follower, 'blockfeed_controller_leader')).toContain('blockfeed_controller_leader{program="controller"} 0');
    expect((await metric(follower, 'blockfeed_pull_total')).filter((l) => !l.startsWith('#'))).toEqual([]);
    expect((await metric(leader, 'blockfeed_pull_total')).filter((l) => !l.startsWith('#')).length).toBeGreaterThan(0);

    leader.child.kill('SIGKILL');
    const second = await eventually(async () => {
      const id = await holder();
      return id && id !== first ? id : undefined;
    }, 30_000, 'the follower to take the lease');
    expect(pidOf(second)).toBe(follower.child.pid);

    feed.lines = ['203.0.113.10', '203.0.113.11', '203.0.113.12'];
    const sub = await syncNow(h, ns, 'shared');
    expect(sub.status?.entries).toBe(3);
    const cm = await h.core.readNamespacedConfigMap({ name: 'shared', namespace: ns });
    expect(cm.data!['list.txt']).toBe('203.0.113.10/31\n203.0.113.12/32\n');
    expect((await events(h, ns, 'shared')).some((e) => e.reason === 'Synced' && e.instance === second)).toBe(true);
  });
});

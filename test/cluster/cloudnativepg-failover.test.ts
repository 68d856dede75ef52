// The chart's production database on a real node: CloudNativePG's operator (built from its Go module,
// installed from its published manifest), the chart with database.type=cloudnativepg — a Cluster of two
// instances in synchronous replication, the api-server (over TLS, lists read from the standby through the -ro
// Service) and the controller on it — and the primary's pod deleted while sensors push events, subscribers pull
// lists and anonymous clients read statistics. Printed: the failover's timeline, the time until writes succeed
// again, the events acknowledged before, during and after, the lists served meanwhile and which server they
// were read from, and every status seen. Asserted: every acknowledged event is in the database afterwards (on
// the new primary and on the instance that rejoined), lists are served while the primary is away, every 503
// says when to retry, the api-server pods stayed ready and were neither restarted nor replaced.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/cli.ts';
import { installCloudNativePg } from '../support/cloudnativepg.ts';
import { execInPod, podReady, podReport, splitImage, startCluster, type Cluster } from '../support/cluster.ts';
import { CHART, helmWithValues } from '../support/helm.ts';
import { eventually } from '../support/k8s.ts';
import { pushOneEvent, startLoad, type Answer, type Load } from '../support/load.ts';
import { forward, type Forward } from '../support/namespaces.ts';
import { NODE } from '../support/node.ts';

const RELEASE = 'blockfeed';
const SYSTEM = 'blockfeed';
const DATABASE = `${RELEASE}-postgresql`;
const INGEST_TOKEN = 'cluster-tier-failover-ingest-token';
const SENSOR = 'hp-failover';
/** Load before the deletion, and after writes succeed again, so that both phases have figures. */
const STEADY_MS = 15_000;

const report = (line: string) => console.log(`[cnpg] ${line}`);

interface Reads {
  primary: number;
  standby: number;
}

interface ClusterStatus {
  phase?: string;
  currentPrimary?: string;
  targetPrimary?: string;
  readyInstances?: number;
  instances?: number;
}

describe('blockfeed on a CloudNativePG Cluster: the primary deleted under load', () => {
  let cluster: Cluster;
  let core: CoreV1Api;
  let objects: CustomObjectsApi;
  let api: Forward | undefined;
  let load: Load | undefined;

  const clusterStatus = async () =>
    ((await objects.getNamespacedCustomObject({ group: 'postgresql.cnpg.io', version: 'v1', namespace: SYSTEM, plural: 'clusters', name: DATABASE })) as { status?: ClusterStatus }).status ?? {};
  /** psql as the postgres superuser on an instance, through its local socket (peer authentication). */
  const psql = async (pod: string, sql: string, database = 'blockfeed') =>
    (await execInPod(cluster.kc, SYSTEM, pod, 'postgres', ['psql', '--no-psqlrc', '--tuples-only', '--no-align', '--dbname', database, '--command', sql])).stdout.trim();
  const apiPods = async () => (await core.listNamespacedPod({ namespace: SYSTEM, labelSelector: 'app.kubernetes.io/component=api-server' })).items;
  /** Lists the api-server pods have read from the store, by server (blockfeed_list_reads_total, from each pod). */
  const listReads = async (): Promise<Reads> => {
    const reads = { primary: 0, standby: 0 };
    for (const pod of await apiPods()) {
      const text = await cluster.node.run('curl', ['--silent', '--show-error', '--max-time', '3', `http://${pod.status?.podIP}:8080/metrics`]);
      for (const source of ['primary', 'standby'] as const) reads[source] += Number(new RegExp(`^blockfeed_list_reads_total\\{[^}]*source="${source}"[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    }
    return reads;
  };

  beforeAll(async () => {
    cluster = await startCluster({
      images: ['blockfeed', 'cnpgOperator', 'cnpgPostgresql'],
      // one per instance
      volumes: 2,
      log: (line) => process.env.CLUSTER_TEST_VERBOSE && console.error(`[cnpg] ${line}`),
    });
    report(`cluster ready in ${cluster.startMs} ms`);
    core = cluster.kc.makeApiClient(CoreV1Api);
    objects = cluster.kc.makeApiClient(CustomObjectsApi);
  });

  afterAll(async () => {
    await load?.stop();
    await api?.stop();
    await cluster?.stop();
  });

  it("runs CloudNativePG's operator, built from its Go module, from its published install manifest", async () => {
    const ms = await installCloudNativePg(cluster.kc, cluster.images.cnpgOperator);
    report(`operator installed, its webhooks answering, after ${ms} ms`);
    const [operator] = (await core.listNamespacedPod({ namespace: 'cnpg-system' })).items;
    expect(operator?.spec?.containers[0]?.image).toBe(cluster.images.cnpgOperator);
    expect(podReady(operator)).toBe(true);
  });

  it('installs the chart on a two-instance Cluster with synchronous replication: api-server and controller Ready', async () => {
    const [repository, tag] = splitImage(cluster.images.blockfeed);
    const t0 = Date.now();
    const installed = await helmWithValues(['install', RELEASE, CHART, '--namespace', SYSTEM, '--create-namespace', '--kubeconfig', cluster.kubeconfigPath, '--wait', '--timeout', '8m'], {
      image: { repository, tag, pullPolicy: 'Never' },
      // Two api-server replicas: both must carry on through the failover. Anonymous callers are metered (one
      // PostgreSQL counter per request) but not refused: the load is one client address. No response cache:
      // every list is read from the store, so the figures say which server answered.
      api: { replicas: 2, anonymousPerMinute: 100000, ingest: { enabled: true, token: INGEST_TOKEN }, cache: { maxBytes: 0 } },
      database: {
        type: 'cloudnativepg',
        cloudnativepg: { instances: 2, minSyncReplicas: 1, maxSyncReplicas: 1, imageName: cluster.images.cnpgPostgresql, imagePullPolicy: 'Never', storage: { size: '1Gi' } },
      },
      controller: { clusterCidrs: [NODE.podCidr, NODE.serviceCidr] },
    });
    expect(installed.code, `${installed.stderr}\n${await podReport(core, SYSTEM)}`).toBe(0);
    report(`helm install --wait: ${Date.now() - t0} ms`);

    const status = await eventually(async () => {
      const s = await clusterStatus();
      return s.readyInstances === 2 ? s : undefined;
    }, 300_000, 'both instances ready');
    report(`Cluster ${DATABASE}: ${status.phase}; primary ${status.currentPrimary}, ${status.readyInstances}/${status.instances} instances ready`);
    const primary = status.currentPrimary ?? '';
    // A commit waits for the standby: a quorum of one, and the standby is in it.
    expect(await psql(primary, 'show synchronous_standby_names', 'postgres')).toMatch(/^ANY 1 \(/);
    const replication = await psql(primary, 'select application_name, state, sync_state from pg_stat_replication', 'postgres');
    report(`replication from ${primary}: ${replication}`);
    expect(replication).toMatch(/\|streaming\|quorum$/);

    // The api-server's sessions use TLS (verified against the Cluster's CA: a failed check would leave none).
    const sessions = await eventually(async () => {
      const [tls = '0', plain = '0', version = ''] = (
        await psql(primary, `select count(*) filter (where s.ssl), count(*) filter (where not s.ssl), max(s.version) from pg_stat_activity a join pg_stat_ssl s using (pid) where a.usename = 'blockfeed'`, 'postgres')
      ).split('|');
      return Number(tls) > 0 ? { tls: Number(tls), plain: Number(plain), version } : undefined;
    }, 60_000, "the api-server's sessions on the primary");
    report(`the api-server's sessions on the primary: ${sessions.tls} over TLS (${sessions.version}), ${sessions.plain} without`);
    expect(sessions.plain).toBe(0);

    for (const component of ['api-server', 'controller']) {
      const pods = (await core.listNamespacedPod({ namespace: SYSTEM, labelSelector: `app.kubernetes.io/component=${component}` })).items;
      expect(pods.length, component).toBeGreaterThan(0);
      for (const p of pods) expect(podReady(p), p.metadata?.name).toBe(true);
    }
  });

  it('keeps every acknowledged event through the deletion of the primary pod, and carries on without restarting the api-server', async () => {
    const service = await core.readNamespacedService({ name: `${RELEASE}-api`, namespace: SYSTEM });
    // Every request a new connection through the Service (kube-proxy), as clients that come and go make them.
    api = await forward(cluster.node, service.spec?.clusterIP ?? '', 8080, cluster.dir, await freePort());
    const base = `http://127.0.0.1:${api.port}`;
    const apiPod = (await apiPods())[0]?.metadata?.name ?? '';
    const key = async (tier: string) => (await execInPod(cluster.kc, SYSTEM, apiPod, 'api-server', ['blockfeed', 'keys', 'create', '--tier', tier, '--name', `failover-${tier}`])).stdout.trim().split('\n').at(-1) ?? '';
    const enterpriseKey = await key('enterprise');
    const proKey = await key('pro');
    // Today's partitions first (ingest creating them while other requests read can deadlock: not under test).
    const warmUp = await fetch(`${base}${pushOneEvent(1 << 23, INGEST_TOKEN, 'hp-warm-up').path}`, pushOneEvent(1 << 23, INGEST_TOKEN, 'hp-warm-up').init);
    expect(warmUp.status).toBe(200);

    const before = new Map((await apiPods()).map((p) => [p.metadata?.uid ?? '', restarts(p)]));
    load = startLoad(
      base,
      [
        (n) => pushOneEvent(n, INGEST_TOKEN, SENSOR),
        (n) => ({ what: 'list (enterprise key)', path: `/api/export?hours=${1 + (n % 24)}&format=json`, init: { headers: { 'x-api-key': enterpriseKey } } }),
        (n) => ({ what: 'list (pro key, metered)', path: `/api/export?hours=${1 + (n % 24)}&format=json`, init: { headers: { 'x-api-key': proKey } } }),
        (n) => ({ what: 'stats (anonymous, metered)', path: `/api/stats?hours=${1 + (n % 24)}` }),
      ],
      // Longer than the api-server takes to give up a connection (5 s): every request is answered.
      { newConnections: true, timeoutMs: 10_000 },
    );
    await new Promise((r) => setTimeout(r, STEADY_MS));
    expect(load.acknowledged.length, 'pushes acknowledged before the deletion').toBeGreaterThan(0);
    // Lists are read on the standby (DATABASE_READ_URL, the -ro Service), over TLS as well.
    const [standby = ''] = (await core.listNamespacedPod({ namespace: SYSTEM, labelSelector: `cnpg.io/cluster=${DATABASE},cnpg.io/instanceRole=replica` })).items.map((p) => p.metadata?.name ?? '');
    const readSessions = await psql(standby, `select count(*) filter (where s.ssl) || '|' || count(*) from pg_stat_activity a join pg_stat_ssl s using (pid) where a.application_name = 'blockfeed-serve-read'`, 'postgres');
    report(`the api-server's read sessions on the standby ${standby}: ${readSessions.replace('|', ' over TLS, of ')}`);
    const readsBefore = await listReads();
    report(`lists read before the deletion: ${readsBefore.standby} from the standby, ${readsBefore.primary} from the primary`);
    expect(readsBefore.standby).toBeGreaterThan(0);

    // The primary's pod deleted (as a node drain or a person does); the Cluster and the api-server pods' readiness
    // watched meanwhile.
    const primary = (await clusterStatus()).currentPrimary ?? '';
    const timeline: string[] = [];
    const deletedAt = Date.now();
    await core.deleteNamespacedPod({ name: primary, namespace: SYSTEM });
    const since = (t: number) => `+${((t - deletedAt) / 1000).toFixed(1)} s`;
    timeline.push(`+0.0 s  pod ${primary} (the primary) deleted`);
    let last = '';
    let promotedAt = 0;
    let newPrimary = '';
    // The api-servers' list reads by server, sampled through the failover.
    const samples: { at: number; reads: Reads }[] = [{ at: deletedAt, reads: readsBefore }];
    const sampling = (async () => {
      while (Date.now() - deletedAt < 600_000 && (!promotedAt || Date.now() - promotedAt < STEADY_MS * 2)) {
        const reads = await listReads().catch(() => undefined);
        if (reads) samples.push({ at: Date.now(), reads });
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    const watching = (async () => {
      while (Date.now() - deletedAt < 600_000) {
        const [s, pods] = await Promise.all([clusterStatus().catch(() => undefined), apiPods().catch(() => undefined)]);
        const now = s && pods ? `${s.phase}; primary ${s.currentPrimary} (target ${s.targetPrimary}); ${s.readyInstances}/${s.instances} instances ready; api-server pods ready: ${pods.filter(podReady).length}/${pods.length}` : last;
        if (now !== last) timeline.push(`${since(Date.now())}  ${(last = now)}`);
        if (s?.currentPrimary && s.currentPrimary !== primary && s.currentPrimary === s.targetPrimary && !promotedAt) {
          promotedAt = Date.now();
          newPrimary = s.currentPrimary;
        }
        if (promotedAt && s?.readyInstances === 2 && pods?.every(podReady)) return;
        await new Promise((r) => setTimeout(r, 250));
      }
    })();

    // Writes succeed again: a push acknowledged after the last failed one, once the standby is promoted.
    const failedPushes = () => load!.answers.filter((a) => a.what === 'push' && a.at > deletedAt && a.status !== 200);
    const resumedAt = await eventually(
      async () => {
        const lastFailed = Math.max(deletedAt, ...failedPushes().map((a) => a.at));
        const ack = load!.acknowledged.find((a) => a.at > lastFailed);
        return promotedAt && ack ? ack.at : undefined;
      },
      600_000,
      'pushes acknowledged again after the failover',
    );
    await new Promise((r) => setTimeout(r, STEADY_MS));
    await load.stop();
    await watching;
    await sampling;
    const after = new Map((await apiPods()).map((p) => [p.metadata?.uid ?? '', restarts(p)]));

    // Figures. The outage: from the first request of any kind that failed after the deletion to writes
    // succeeding again; before it, the deleted primary still serves the connections it has (its smart shutdown).
    const outageFrom = Math.min(resumedAt, ...load.answers.filter((a) => a.at > deletedAt && a.status !== 200).map((a) => a.at));
    report('the failover:');
    for (const line of timeline) report(`  ${line}`);
    report(`first failed request ${since(outageFrom)}; ${newPrimary} promoted ${since(promotedAt)}; writes succeed again ${since(resumedAt)} (${resumedAt - deletedAt} ms after the deletion, ${resumedAt - outageFrom} ms after the first failure)`);
    const phases = ['before', 'outage', 'after'] as const;
    const phase = (t: number): (typeof phases)[number] => (t < outageFrom ? 'before' : t < resumedAt ? 'outage' : 'after');
    const acknowledged = { before: 0, outage: 0, after: 0 };
    for (const a of load.acknowledged) acknowledged[phase(a.at)]++;
    report(`events acknowledged (200): ${acknowledged.before} before the outage (${load.acknowledged.filter((a) => a.at < deletedAt).length} of them before the deletion), ${acknowledged.outage} during it, ${acknowledged.after} after`);
    report('answers, by request and phase:');
    for (const what of [...new Set(load.answers.map((a) => a.what))]) {
      for (const p of phases) report(`  ${what.padEnd(27)} ${p.padEnd(6)} ${describeStatuses(load.answers.filter((a) => a.what === what && phase(a.at) === p))}`);
    }
    const listsDuring = load.answers.filter((a) => a.what.startsWith('list') && phase(a.at) === 'outage' && a.status === 200 && !a.error);
    report(`lists served (200) during the outage: ${listsDuring.length}`);
    // Reads between the samples around the outage: the last before its start and the first after its end.
    const at = (t: number, side: 'before' | 'after') =>
      (side === 'before' ? samples.filter((x) => x.at <= t).at(-1) : samples.find((x) => x.at >= t))?.reads ?? { primary: 0, standby: 0 };
    const fromOutage = at(outageFrom, 'before');
    const toResumed = at(resumedAt, 'after');
    report(`lists read from the store during the outage (give or take the 1 s between samples): ${toResumed.standby - fromOutage.standby} from the standby, ${toResumed.primary - fromOutage.primary} from the primary`);
    const end = samples.at(-1)?.reads ?? fromOutage;
    report(`lists read after writes resumed: ${end.standby - toResumed.standby} from the standby (or the -ro Service's new members), ${end.primary - toResumed.primary} from the primary`);
    expect(listsDuring.length, 'lists served while the primary was away').toBeGreaterThan(0);
    report('why requests failed after the deletion:');
    for (const [reason, count] of countBy(load.answers.filter((a) => a.at > deletedAt && a.status !== 200), (a) => `${a.what}: ${a.status || 'no answer'} ${a.detail ?? a.error ?? ''}`)) report(`  ${count}× ${reason}`);
    report("the api-server's warnings and errors after the deletion:");
    for (const [message, count] of await apiServerComplaints(cluster.podLogsDir, deletedAt)) report(`  ${count}× ${message}`);

    // Every acknowledged event is in the database: on the new primary, and on the former primary once it has
    // rejoined as a standby.
    const stored = new Set((await psql(newPrimary, `select host(src_ip) from events where sensor = '${SENSOR}'`)).split('\n'));
    const missing = load.acknowledged.filter((a) => !stored.has(a.event));
    const acknowledgedEvents = new Set(load.acknowledged.map((a) => a.event));
    report(`acknowledged events on the new primary ${newPrimary}: ${load.acknowledged.length - missing.length} of ${load.acknowledged.length}; stored besides them (pushes whose answer was lost): ${[...stored].filter((e) => !acknowledgedEvents.has(e)).length}`);
    expect(missing, 'acknowledged events missing after the failover').toEqual([]);
    const onStandby = await eventually(async () => {
      const count = Number(await psql(primary, `select count(*) from events where sensor = '${SENSOR}'`));
      return count >= stored.size ? count : undefined;
    }, 120_000, `the former primary ${primary} caught up as a standby`);
    report(`events on ${primary}, now a standby: ${onStandby} (the new primary has ${stored.size})`);

    // Every request is answered (200, or 503 saying when to retry): none waits on a connection that goes nowhere.
    expect(load.answers.filter((a) => a.error?.startsWith('TimeoutError')).map((a) => `${a.what} at ${since(a.at)}`), 'requests without an answer within 10 s').toEqual([]);
    // A 503 always says when to retry.
    const unavailable = load.answers.filter((a) => a.status === 503);
    for (const a of unavailable) expect(a.retryAfter, `${a.what} 503 at ${a.at - deletedAt} ms`).toMatch(/^\d+$/);
    // The api-server carried on by itself: the same pods, no container restarted, never out of the Service.
    expect(after).toEqual(before);
    expect(timeline.filter((line) => /api-server pods ready: [01]\//.test(line)), 'api-server pods not ready during the failover').toEqual([]);
    report(`api-server pods: the same ${after.size}, restarts ${[...after.values()].join(', ')} (unchanged)`);
  });
});

function describeStatuses(answers: Answer[]): string {
  if (answers.length === 0) return 'no requests';
  const counts = new Map<string, number>();
  for (const a of answers) {
    const label = a.status === 0 ? `no answer (${a.error ?? 'failed'})` : a.status === 503 ? `503 (Retry-After ${a.retryAfter ?? 'missing'})` : a.error ? `${a.status}, body cut off` : String(a.status);
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  return `${[...counts].map(([label, count]) => `${count}× ${label}`).join(', ')}; median ${ms[Math.floor(ms.length / 2)]} ms, slowest ${ms.at(-1)} ms`;
}

function countBy<T>(items: T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return new Map([...counts].sort((a, b) => b[1] - a[1]));
}

/** The api-server pods' log entries of level warn and above since `since`, counted by message and error. */
async function apiServerComplaints(podLogsDir: string, since: number): Promise<Map<string, number>> {
  const entries: string[] = [];
  for (const pod of (await readdir(podLogsDir)).filter((d) => d.startsWith(`${SYSTEM}_${RELEASE}-api-`))) {
    const dir = path.join(podLogsDir, pod, 'api-server');
    for (const file of await readdir(dir)) {
      for (const line of (await readFile(path.join(dir, file), 'utf8')).split('\n')) {
        // CRI log lines: <time> <stream> <P|F> <the program's line>
        const [time = '', , , ...rest] = line.split(' ');
        if (Date.parse(time) < since) continue;
        let entry: { level?: string; msg?: string; err?: { message?: string; code?: string } };
        try {
          entry = JSON.parse(rest.join(' ')) as typeof entry;
        } catch {
          continue;
        }
        if (!['warn', 'error', 'fatal'].includes(entry.level ?? '')) continue;
        entries.push(`${entry.level} ${entry.msg ?? ''}${entry.err ? ` (${[entry.err.code, entry.err.message].filter(Boolean).join(' ')})` : ''}`.slice(0, 200));
      }
    }
  }
  return countBy(entries, (e) => e);
}

function restarts(pod: V1Pod): number {
  return (pod.status?.containerStatuses ?? []).reduce((sum, c) => sum + c.restartCount, 0);
}

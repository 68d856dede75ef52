// Live blocking against real parts: `blockfeed serve` on its embedded PostgreSQL, the controller on the test
// control plane, a NetworkPolicy target. A live subscription whose schedule would sync once a day applies an
// attacker pushed through the push route within seconds; reconcile.fluxcd.io/requestedAt syncs now and is
// recorded in the status, the annotation left in place; suspending the subscription closes its long poll on
// the api-server and resuming opens it again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlocklistSubscription } from '../../../api/v1alpha1/blocklist-subscription.ts';
import { mergePatch } from '../../../controller/runtime/k8s.ts';
import { BLOCKFEED, cliEnv, freePort, runCli, tempDataDir } from '../../support/cli.ts';
import { eventually, freshNamespace } from '../../support/k8s.ts';
import { answers200, startManaged, waitUntilReady, type ManagedProcess } from '../../support/processes.ts';
import { applySubscription, condition, getSubscription, patchSubscription, startController, type Harness } from '../../support/controller-harness.ts';

const TOKEN = 'k8s-live-test-ingest-token';
const NAME = 'live-attackers';

let api: ManagedProcess;
let base: string;
let h: Harness;
let home: string;
let guarded: string;

/** The api-server's gauge of long polls it holds now. */
async function heldPolls(): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^blockfeed_long_polls(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? NaN);
}

async function push(ip: string): Promise<number> {
  const line = JSON.stringify({ ts: new Date(Date.now() - 30_000).toISOString(), src_ip: ip, dst_port: 22, service: 'ssh', source: 'honeypot', sensor: 'hp-k8s-live', username: 'root' });
  const res = await fetch(`${base}/internal/v1/events?format=native`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-ndjson' }, body: line });
  expect(res.status, await res.text()).toBe(200);
  return Date.now();
}

/** The CIDRs the blocking NetworkPolicy of the guarded namespace excepts (none while it does not exist). */
async function blocked(): Promise<string[]> {
  const policies = (await h.net.listNamespacedNetworkPolicy({ namespace: guarded })).items;
  // Read as the apiserver wrote it: the client's model names the field `_except`, the object it returns `except`.
  const except = (block: object | undefined) => (block as { except?: string[] } | undefined)?.except ?? [];
  return policies.flatMap((p) => p.spec?.ingress?.flatMap((rule) => rule._from?.flatMap((peer) => except(peer.ipBlock)) ?? []) ?? []);
}

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const env = cliEnv({ BLOCKFEED_DATA_DIR: await tempDataDir(), PORT: String(port), HOST: '127.0.0.1', BLOCKFEED_INGEST_TOKEN: TOKEN, LOG_LEVEL: 'warn' });
  // Before serve: the embedded PostgreSQL is the data dir's one process.
  const created = await runCli(['keys', 'create', '--tier', 'enterprise', '--name', 'k8s-live'], env);
  expect(created.code, created.stderr).toBe(0);
  const key = created.stdout.trim().split('\n').at(-1) ?? '';
  api = startManaged('blockfeed serve', BLOCKFEED, ['serve'], { env });
  await waitUntilReady(api, () => answers200(`${base}/readyz`), 90_000);

  home = await freshNamespace('live-home');
  guarded = await freshNamespace('live-guarded');
  h = await startController(home);
  await h.core.patchNamespace({ name: guarded, body: { metadata: { labels: { 'blockfeed.dev/protect': home } } } }, mergePatch);
  await h.core.createNamespacedSecret({ namespace: home, body: { metadata: { name: 'feed-key' }, stringData: { apiKey: key } } });
  await push('198.51.100.60');
  await applySubscription(h, home, NAME, {
    feed: { url: base, endpoint: 'dedup', filters: { hours: 1 }, credentials: { secretRef: { name: 'feed-key', key: 'apiKey' } }, live: { enabled: true, minIntervalSeconds: 1 } },
    // Without live blocking, nothing pushed now would be applied before tomorrow.
    interval: '24h',
    targets: [{ networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': home } }, direction: 'Ingress' } }],
  });
  await eventually(async () => ((await blocked()).includes('198.51.100.60/32') ? true : undefined), 60_000, 'the first sync');
  await eventually(async () => (condition(await getSubscription(h, home, NAME), 'Live')?.status === 'True' ? true : undefined), 60_000, 'Live True');
}, 180_000);

afterAll(async () => {
  await h?.stop();
  await api?.stop();
});

describe('a live subscription', () => {
  it('applies an attacker pushed to the api-server within seconds, though its schedule syncs daily', async () => {
    await eventually(async () => ((await heldPolls()) === 1 ? true : undefined), 30_000, 'the long poll held');
    const acknowledged = await push('198.51.100.71');
    // Polled closely to print the time; the bound only has to fail without live blocking (the next sync is a day away).
    const deadline = acknowledged + 60_000;
    while (!(await blocked()).includes('198.51.100.71/32')) {
      if (Date.now() > deadline) throw new Error('the pushed attacker was not applied within 60 s');
      await new Promise((r) => setTimeout(r, 25));
    }
    console.log(`pushed attacker in the NetworkPolicy ${Date.now() - acknowledged} ms after the push was acknowledged`);
    const metrics = await h.metrics.registry.metrics();
    expect(metrics).toMatch(/^blockfeed_live_wakeups_total\{[^}]*name="live-attackers"[^}]*\} [1-9]/m);
    expect(metrics).toMatch(/^blockfeed_live_connected\{[^}]*name="live-attackers"[^}]*\} 1/m);
    expect(metrics).toMatch(/^blockfeed_applied_data_age_seconds_count\{[^}]*name="live-attackers"[^}]*\} [1-9]/m);
  });

  it('syncs when reconcile.fluxcd.io/requestedAt gets a new value, records it as handled and leaves it', async () => {
    const syncs = h.controller.syncs;
    const asked = String(Math.floor(Date.now() / 1000));
    await patchSubscription(h, home, NAME, { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': asked } } });
    const handled = await eventually(async () => {
      const sub = await getSubscription(h, home, NAME);
      return sub.status?.lastHandledReconcileAt === asked ? sub : undefined;
    }, 30_000, 'lastHandledReconcileAt');
    expect(h.controller.syncs).toBeGreaterThan(syncs);
    expect(handled.metadata.annotations?.['reconcile.fluxcd.io/requestedAt']).toBe(asked);
    // The next value is another request.
    const again = `${asked}-2`;
    await patchSubscription(h, home, NAME, { metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': again } } });
    await eventually(async () => ((await getSubscription(h, home, NAME)).status?.lastHandledReconcileAt === again ? true : undefined), 30_000, 'the second request');
  });

  it('closes its long poll while suspended and opens it again when resumed', async () => {
    await patchSubscription(h, home, NAME, { spec: { suspend: true } });
    await eventually(async () => ((await heldPolls()) === 0 ? true : undefined), 30_000, 'the long poll closed');
    expect(h.controller.liveWatches).toBe(0);
    const suspended: BlocklistSubscription = await eventually(async () => {
      const sub = await getSubscription(h, home, NAME);
      return condition(sub, 'Live')?.reason === 'Suspended' ? sub : undefined;
    }, 30_000, 'Live Suspended');
    expect(condition(suspended, 'Live')?.status).toBe('False');
    await patchSubscription(h, home, NAME, { spec: { suspend: false } });
    await eventually(async () => ((await heldPolls()) === 1 ? true : undefined), 30_000, 'the long poll open again');
    await eventually(async () => (condition(await getSubscription(h, home, NAME), 'Live')?.status === 'True' ? true : undefined), 30_000, 'Live True');
  });
});

// Time to block (make bench-live): how long an attacker's login attempt, once a honeypot has written it to its
// log, takes to be in a NetworkPolicy written by a live subscription — on real processes: `blockfeed ship`
// following a Cowrie JSON log, `blockfeed serve` on an embedded PostgreSQL holding ADDRESSES generated addresses
// (so every pull reads and applies a list of that size), `blockfeed controller` against a real control plane,
// and a subscription with `feed.live` and a 24-hour interval (nothing but the live path could apply the
// address within the run). Each of RUNS trials appends one failed login from a new address, with the long poll
// held and idle, and cuts the time into stages (bench/stages.ts), each named by the instant that ends it:
//   sent          ship: the shipper saw the line, waited its linger for more and sent the batch (the shipper's
//                 "batch shipped" log line, less the request's own time)
//   written       ingest: the push route parsed and enriched the event and wrote it (list_data_version's
//                 changed_at: the end of the last statement that wrote addresses, just before the commit)
//   notified      notification: the commit, and NOTIFY on it waking the controller's held HEAD (its debug log
//                 "live: the feed has new data"); the shipper's answer goes out alongside, not before it
//   pulled        pull: the sync fetched and sanitised the whole new list (its debug log "pulled")
//   applied       apply: the NetworkPolicy holding the address was written (seen by a watch on the apiserver)
// Prints the median, p90 and max of each stage and of the whole, and the same as one JSON line. The enforcer's
// stage needs a node that drops packets: the cluster tier's whole-loop test follows the same path to the first
// refused connection. PostgreSQL keeps its durable defaults (a commit waits for its flush to disk).
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '../api/v1alpha1/blocklist-subscription.ts';
import { startControlPlane } from '../test/support/control-plane.ts';
import { BLOCKFEED } from '../test/support/cli.ts';
import { benchStore, startServeChild } from './harness.ts';
import { report, type Trial } from './stages.ts';

const RUNS = Number(process.env.RUNS ?? 15);
const ADDRESSES = Number(process.env.ADDRESSES ?? 20_000);
const TOKEN = 'bench-live-ingest-token';
const HOME = 'bench-live';
const GUARDED = 'bench-live-guarded';
const NAME = 'live';
/** The subscription's minIntervalSeconds; trials are spaced further apart, so that each finds the poll idle and held. */
const MIN_INTERVAL_SECONDS = 1;

const log = (line: string) => process.stderr.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 120_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(20)) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

/** A program's log lines (pino JSON on stderr), as they arrive. */
interface LogLine {
  at: number;
  msg: string;
  subscription?: string;
  result?: string;
  /** The shipper's "batch shipped": the request's own time. */
  ms?: number;
  text: string;
}

/** Starts a blockfeed command at debug level, keeping its log lines in `lines`; errors and non-JSON also go to stderr. */
function spawnLogged(name: string, args: string[], lines: LogLine[]): ChildProcess {
  const child = spawn(BLOCKFEED, args, { env: { ...process.env, LOG_LEVEL: 'debug' }, stdio: ['ignore', 'ignore', 'pipe'] });
  createInterface({ input: child.stderr }).on('line', (text) => {
    try {
      const line = JSON.parse(text) as { time: string; msg: string; subscription?: string; result?: string; ms?: number; level: string };
      lines.push({ at: Date.parse(line.time), msg: line.msg, subscription: line.subscription, result: line.result, ms: line.ms, text });
      if (line.level === 'error' || line.level === 'warn') log(`${name}: ${text}`);
    } catch {
      log(`${name}: ${text}`);
    }
  });
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** A failed login as Cowrie 3 writes it (every line repeats the address, port and protocol). */
function cowrieFailedLogin(ip: string, session: string, at: Date): string {
  const ts = at.toISOString().replace('Z', '123Z');
  return `${JSON.stringify({ eventid: 'cowrie.login.failed', timestamp: ts, src_ip: ip, src_port: 40000, dst_ip: '10.0.0.5', dst_port: 22, session, protocol: 'ssh', username: 'root', password: 'hunter2', message: 'login attempt [root/hunter2] failed', sensor: 'hp-bench' })}\n`;
}

async function main(): Promise<void> {
  log(`time to block: ${RUNS} trials, lists of ${ADDRESSES} addresses`);
  const store = await benchStore(ADDRESSES, 20, { durable: true });
  const serve = await startServeChild(store.url, { BLOCKFEED_INGEST_TOKEN: TOKEN });
  const plane = await startControlPlane({ enforcementPoints: false });
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-bench-live-'));
  await chmod(dir, 0o755);
  const cowrieLog = path.join(dir, 'cowrie.json');
  await writeFile(cowrieLog, '');
  await writeFile(path.join(dir, 'token'), TOKEN);
  const shipped: LogLine[] = [];
  const shipper = spawnLogged('ship', ['ship', cowrieLog, '--format', 'cowrie', '--url', serve.base, '--token-file', path.join(dir, 'token'), '--state-file', path.join(dir, 'ship-state.json')], shipped);
  const lines: LogLine[] = [];
  const controller = spawnLogged('controller', ['controller', '--kubeconfig', plane.kubeconfigPath, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--namespace', HOME], lines);
  const stopWatch: (() => void)[] = [];
  try {
    await core.createNamespace({ body: { metadata: { name: HOME } } });
    await core.createNamespace({ body: { metadata: { name: GUARDED, labels: { 'blockfeed.dev/protect': 'bench' } } } });
    await core.createNamespacedSecret({ namespace: HOME, body: { metadata: { name: 'feed-key' }, stringData: { apiKey: store.key } } });

    // When each address first appears in the guarded namespace's NetworkPolicy, as the apiserver tells watchers.
    const appeared = new Map<string, number>();
    // A watch hands over the objects as the apiserver sent them (JSON, not the client's models).
    type Policy = { spec?: { ingress?: { from?: { ipBlock?: { except?: string[] } }[] }[] } };
    const watching = await new Watch(kc).watch(`/apis/networking.k8s.io/v1/namespaces/${GUARDED}/networkpolicies`, {}, (_type: string, policy: Policy) => {
      const at = Date.now();
      for (const rule of policy.spec?.ingress ?? []) {
        for (const peer of rule.from ?? []) for (const cidr of peer.ipBlock?.except ?? []) if (!appeared.has(cidr)) appeared.set(cidr, at);
      }
    }, () => undefined);
    stopWatch.push(() => watching.abort());

    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: HOME,
      plural: PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'BlocklistSubscription',
        metadata: { name: NAME, namespace: HOME },
        spec: {
          feed: { url: serve.base, endpoint: 'dedup', filters: { hours: 24 }, credentials: { secretRef: { name: 'feed-key' } }, live: { enabled: true, minIntervalSeconds: MIN_INTERVAL_SECONDS } },
          interval: '24h',
          safety: { maxEntries: ADDRESSES + RUNS + 10 },
          targets: [{ networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': 'bench' } }, direction: 'Ingress' } }],
        },
      },
    });
    const heldPolls = async () => Number(/^blockfeed_long_polls(?:\{[^}]*\})? (\d+)/m.exec(await (await fetch(`${serve.base}/metrics`)).text())?.[1] ?? 0);
    await until('the first sync', () => (appeared.size > 0 ? true : undefined)).catch((err: unknown) => {
      log(lines.map((l) => l.text).join('\n'));
      throw err;
    });
    // The api-server's first retention run writes too (and so wakes the poll): let it pass.
    await sleep(8000);

    const subscription = `${HOME}/${NAME}`;
    const trials: Trial[] = [];
    for (let run = 0; run < RUNS; run++) {
      await sleep(MIN_INTERVAL_SECONDS * 1000 + 500);
      await until('the long poll held', async () => ((await heldPolls()) >= 1 ? true : undefined));
      // Documentation addresses: global enough to be listed (TEST-NET-2 is not on the never-block table).
      const ip = `198.51.100.${10 + run * 2}`;
      const batchesBefore = shipped.filter((l) => l.msg === 'batch shipped').length;
      await appendFile(cowrieLog, cowrieFailedLogin(ip, `bench${String(run).padStart(8, '0')}`, new Date()));
      const appended = Date.now();
      const applied = await until(`${ip} applied`, () => appeared.get(`${ip}/32`), 60_000);
      const batch = await until('the batch logged', () => shipped.filter((l) => l.msg === 'batch shipped')[batchesBefore], 10_000);
      const sent = batch.at - (batch.ms ?? 0);
      // Nothing else writes during a trial: the version's time is this event's write.
      const written = (await store.pool.query<{ changed_at: Date }>('select changed_at from list_data_version')).rows[0]!.changed_at.getTime();
      const mine = (l: LogLine) => l.subscription === subscription;
      // Log times are whole milliseconds from three processes on one clock: an instant of the same millisecond counts as after.
      const notified = await until('the wake-up logged', () => lines.find((l) => mine(l) && l.msg === 'live: the feed has new data' && l.at >= Math.floor(written))?.at, 10_000);
      const pulled = await until('the pull logged', () => lines.find((l) => mine(l) && l.msg === 'pulled' && l.result === 'changed' && l.at >= notified)?.at, 10_000);
      trials.push({ marks: [['appended', appended], ['sent', sent], ['written', written], ['notified', notified], ['pulled', pulled], ['applied', applied]] });
      log(`trial ${run + 1}: ${applied - appended} ms`);
    }
    process.stdout.write(
      report('time-to-block', trials, {
        sent: 'ship: the shipper sees the line, lingers, sends',
        written: 'ingest: the push route parses, enriches, writes',
        notified: 'notification: commit, NOTIFY wakes the held HEAD',
        pulled: `pull: fresh GET of ${ADDRESSES}+ addresses, sanitised`,
        applied: 'apply: the NetworkPolicy written, seen by a watch',
      }),
    );
    process.stdout.write('the enforcer, after these, needs a node: the cluster tier; target for the whole loop: a median of at most 10 s\n');
  } finally {
    for (const stop of stopWatch) stop();
    await stopChild(controller);
    await stopChild(shipper);
    await rm(dir, { recursive: true, force: true });
    await serve.stop();
    await plane.stop();
    await store.close();
  }
}

await main();

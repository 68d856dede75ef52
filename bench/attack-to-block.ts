// Time to block: from an attacker's first failed login on Cowrie to its first refused connection at a protected
// workload, and where that time goes, on the cluster tier's node with the chart (test/support/attack-loop.ts:
// the scenario test/cluster/attack-to-block.test.ts checks). Needs root, like the cluster tier.
//
//   node bench/attack-to-block.ts [--attackers N] [--min-interval S]     (make bench-attack-to-block; N = 5)
//
// N attackers, one after another, each brute-forcing Cowrie's SSH with hydra while it asks the workload for its
// page every 150 ms; the subscription's spec.feed.live.minIntervalSeconds is S (the CRD's default, 5, without
// it). Every stage is read from what the real processes record, and named, as in bench/stages.ts, by the
// instant it ends with:
//   ship      Cowrie logs the failed login (its JSON log's timestamp) → the api-server receives the push that
//             carries the line (its access log: the request's end less its duration; the shipper's "batch
//             shipped" lines say which push held which lines of the file)
//   commit    → the push is answered, its events committed (the access log)
//   throttle  → the controller's next long poll starts, when none was open at the commit (the access log: the
//             answering poll's end less its duration). Cowrie logs the connection before the failed login, and
//             every event moves the data version: that push answers the open poll, the next starts at once,
//             the next push answers that one, and a third may start only minIntervalSeconds after the second.
//   notify    → the controller's long poll on the list is answered with the new data (the access log: the
//             first wait= request of the controller to end after the push was received; the commit, before
//             the push's answer and the poll's, is the earlier of the two)
//   pull      → the controller has the new list (its next pull of the list ends; nothing when the long poll
//             brought the list itself)
//   apply     → the NetworkPolicy of the protected namespace holds the attacker (a watch on NetworkPolicies)
//   enforce   → the first refused request (the prober; the one before it was answered, at most 150 ms earlier)
// Prints each attacker's stages, then each stage's median, p90 and maximum (bench/stages.ts), and the median
// total against the target: 10 s.
import { setTimeout as sleep } from 'node:timers/promises';
import { Watch } from '@kubernetes/client-node';
import { attack, cowrieEvents, firstFailedLogin, PROTECTED, startAttackLoop, SYSTEM, COWRIE_POD, type Attack, type AttackLoop, type CowrieEvent } from '../test/support/attack-loop.ts';
import { median } from './harness.ts';
import { report, type Trial } from './stages.ts';

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : undefined);
const ATTACKERS = option('--attackers') ?? 5;
const MIN_INTERVAL_SECONDS = option('--min-interval');
const TARGET_MS = 10_000;
/** Documentation addresses, one per attacker (TEST-NET-1, -2, -3 in turn). */
const addresses = Array.from({ length: ATTACKERS }, (_, i) => `${['192.0.2', '198.51.100', '203.0.113'][i % 3]}.${50 + i}`);
/** What each stage is, for the table. */
const STAGES: Record<string, string> = {
  ship: "Cowrie's log line to the push received: the shipper's linger and the request",
  commit: 'the push route parses, enriches and commits the events',
  throttle: "waiting for the controller's next long poll (minIntervalSeconds), when none was open",
  notify: "the commit's NOTIFY answering the controller's long poll",
  pull: 'the sync pulls the new list',
  apply: 'the NetworkPolicy written, as a watch sees it',
  enforce: "kube-router's rules, to the first refused request (at most 150 ms late)",
};

const say = (line: string) => console.log(line);

/** A pino line of a pod's log: its time (ms) and fields. */
interface LogLine {
  time: number;
  msg?: string;
  [field: string]: unknown;
}

async function podLog(loop: AttackLoop, namespace: string, labelSelector: string, container: string): Promise<LogLine[]> {
  const pod = (await loop.core.listNamespacedPod({ namespace, labelSelector })).items[0];
  const text = await loop.core.readNamespacedPodLog({ name: pod?.metadata?.name ?? '', namespace, container });
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine & { time: string | number })
    .map((l) => ({ ...l, time: typeof l.time === 'string' ? Date.parse(l.time) : l.time }));
}

interface RawPolicy {
  spec?: { ingress?: { from?: { ipBlock?: { except?: string[] } }[] }[] };
}

/** The NetworkPolicies of the protected namespace as they change: when each was seen and whom it excepts. */
async function watchPolicies(loop: AttackLoop): Promise<{ seen: { at: number; except: string[] }[]; stop: () => void }> {
  const seen: { at: number; except: string[] }[] = [];
  // A watch hands over the objects as the apiserver wrote them (JSON field names: from, except).
  const request = await new Watch(loop.cluster.kc).watch(`/apis/networking.k8s.io/v1/namespaces/${PROTECTED}/networkpolicies`, {}, (type: string, policy: RawPolicy) => {
    if (type !== 'ADDED' && type !== 'MODIFIED') return;
    const except = (policy.spec?.ingress ?? []).flatMap((rule) => (rule.from ?? []).flatMap((peer) => peer.ipBlock?.except ?? []));
    seen.push({ at: Date.now(), except });
  }, () => undefined);
  return { seen, stop: () => request.abort() };
}

/** The instants of one attack, from the records of Cowrie, the shipper, the api-server, the watch and the prober. */
function trialOf(a: Attack, failed: CowrieEvent, shipper: LogLine[], api: LogLine[], policies: { at: number; except: string[] }[]): Trial {
  // The shipper's batches in order, each with the file lines it held (the shipper starts at the file's first line).
  let next = 1;
  const batch = shipper
    .filter((l) => l.msg === 'batch shipped')
    .map((l) => {
      const first = next;
      next += Number(l.lines);
      return { first, last: next - 1, at: l.time };
    })
    .find((b) => failed.line >= b.first && failed.line <= b.last);
  if (!batch) throw new Error(`no batch of the shipper held line ${failed.line} of Cowrie's log`);
  const requests = api.filter((l) => l.msg === 'request') as (LogLine & { req: { method: string; url: string; userAgent?: string }; ms: number })[];
  // The push the shipper logged: the one the api-server answered closest to then (it may write its access line
  // a moment after the shipper has read the answer; the shipper sends one push at a time).
  const pushes = requests.filter((r) => r.req.method === 'POST' && r.req.url.startsWith('/internal/v1/events'));
  const push = pushes.reduce<(typeof pushes)[number] | undefined>((best, r) => (!best || Math.abs(r.time - batch.at) < Math.abs(best.time - batch.at) ? r : best), undefined);
  if (!push) throw new Error(`no push in the api-server's log for the shipper's batch at ${new Date(batch.at).toISOString()}`);
  // The commit comes before the push's answer and wakes the long poll at once: the poll's access line may come
  // first. The shipper sends one push at a time, so what answers a poll after this push was received is its commit.
  const received = push.time - push.ms;
  const fromController = requests.filter((r) => r.req.userAgent === 'blockfeed-controller' && r.req.url.startsWith('/api/') && r.time >= received);
  const notified = fromController.find((r) => /[?&]wait=/.test(r.req.url) && r.statusCode === 200);
  if (!notified) throw new Error(`no long poll of the controller answered 200 after the push received at ${new Date(received).toISOString()}`);
  // A HEAD tells of the new list; the GET that follows pulls it. A GET long poll brings it itself.
  const pulled = notified.req.method === 'GET' ? notified : fromController.find((r) => r.req.method === 'GET' && r.time >= notified.time && r.statusCode === 200);
  if (!pulled) throw new Error(`no pull of the list after the long poll answered at ${new Date(notified.time).toISOString()}`);
  const applied = policies.find((p) => p.except.includes(`${a.attacker}/32`));
  if (!applied) throw new Error(`no NetworkPolicy excepting ${a.attacker} seen`);
  // The commit: before both the push's answer and the poll's.
  const committed = Math.min(push.time, notified.time);
  return {
    marks: [
      ['failed login', Date.parse(failed.timestamp)],
      ['ship', received],
      ['commit', committed],
      ['throttle', Math.max(committed, notified.time - notified.ms)],
      ['notify', notified.time],
      ['pull', pulled.time],
      ['apply', applied.at],
      ['enforce', a.refusedAtMs],
    ],
  };
}

const s = (ms: number) => (ms / 1000).toFixed(2).padStart(6);

if (process.getuid?.() !== 0) throw new Error('the benchmark runs the cluster tier\'s node: run it as root');
const interval = MIN_INTERVAL_SECONDS === undefined ? "the CRD's default minIntervalSeconds" : `minIntervalSeconds ${MIN_INTERVAL_SECONDS}`;
say(`time to block: ${ATTACKERS} attackers on Cowrie (hydra over SSH), a live BlocklistSubscription (${interval}), kube-router enforcing`);
const loop = await startAttackLoop(addresses, (line) => say(`  ${line}`), { minIntervalSeconds: MIN_INTERVAL_SECONDS });
const watch = await watchPolicies(loop);
try {
  const attacks: Attack[] = [];
  for (const address of addresses) attacks.push(await attack(loop, address));
  // The last lines reach the logs a moment after the refusal.
  await sleep(1000);
  const events = cowrieEvents(loop);
  const shipper = await podLog(loop, SYSTEM, `statefulset.kubernetes.io/pod-name=${COWRIE_POD}`, 'shipper');
  const api = await podLog(loop, SYSTEM, 'app.kubernetes.io/component=api-server', 'api-server');
  const trials = attacks.map((a) => {
    const failed = firstFailedLogin(events, a.attacker);
    if (!failed) throw new Error(`no failed login from ${a.attacker} in Cowrie's log`);
    return trialOf(a, failed, shipper, api, watch.seen);
  });
  const stages = Object.keys(STAGES);
  say('');
  say(`${'seconds'.padEnd(16)}${stages.map((st) => st.padStart(9)).join('')}    total`);
  trials.forEach(({ marks }, i) => {
    const times = marks.slice(1).map(([, at], j) => s(at - marks[j]![1]).padStart(9));
    say(`${addresses[i]!.padEnd(16)}${times.join('')}   ${s(marks.at(-1)![1] - marks[0]![1])}`);
  });
  say('');
  say(report('attack-to-block', trials, STAGES));
  const medianTotal = median(trials.map(({ marks }) => marks.at(-1)![1] - marks[0]![1]));
  say(`median from the first failed login to the first refused connection: ${s(medianTotal).trim()} s (target <= ${TARGET_MS / 1000} s: ${medianTotal <= TARGET_MS ? 'met' : 'MISSED'})`);
} finally {
  watch.stop();
  await loop.stop();
}

// One subscription, two ways:
//   - a sync: pull, sanitise, judge, apply to every target, report (status, Event, metrics);
//   - a repair: the last applied list applied again, without pulling (drift, or a restarted process checking
//     every target against the list it recorded, runtime/applied-record.ts).
// Whatever fails, what was applied before stays in force (fail-static) and the status says why.
import { createHash } from 'node:crypto';
import type { Logger } from '../common/logging.ts';
import {
  API_VERSION,
  GROUP,
  KIND,
  LIVE_DEFAULTS,
  PLURAL,
  RECONCILE_REQUEST_ANNOTATION,
  SAFETY_DEFAULTS,
  VERSION,
  type BlocklistSubscription,
  type BlocklistSubscriptionStatus,
  type Condition,
  type TargetStatus,
} from '../api/v1alpha1/blocklist-subscription.ts';
import { deleteRecord, listHash, readRecord, writeRecord } from './runtime/applied-record.ts';
import { cidrStrings } from './cidr.ts';
import { listUrl } from '../common/list-filters.ts';
import { FEED_FAILURE_REASONS, FeedError, pullFeed } from './feed.ts';
import { apiRequest, getObject, keyOf, sameJson, type Apis } from './runtime/k8s.ts';
import { CONFIG_MAP, collectionPath, objectPath, type ResourceType } from './runtime/resources.ts';
import { PULL_RESULTS, type ControllerMetrics } from './metrics.ts';
import { DROP_REASONS, Sanitiser, judge, type SafetyLimits } from './safety.ts';
import { nextSyncTime } from './schedule.ts';
import { TARGET_KINDS, applyTarget, kindByField, kindOf, lookupsOf } from './targets/index.ts';
import { ObjectTaken, ResourceNotServed, prefetchLists, type Prefetched } from './runtime/objects.ts';
import { splitFamilies, type AppliedList, type TargetField, type TargetOutcome, type TargetProblem } from './targets/types.ts';

/** The last list applied for a subscription, and what it came from. */
export interface AppliedState {
  /** hash of the inputs besides the feed body (URL, allowlist, limits, cluster CIDRs): inputsHash() */
  inputsHash: string;
  etag?: string;
  list: AppliedList;
  entries: number;
}

export interface ReconcileDeps {
  apis: Apis;
  log: Logger;
  metrics: ControllerMetrics;
  clusterCidrs: readonly string[];
  /** the last list applied per subscription uid: a 304 re-applies it, a repair applies it again */
  applied: Map<string, AppliedState>;
  /** which process reports Events */
  instance: string;
  now?: () => Date;
  /** The Live condition a subscription's status should hold now (live.ts); undefined: none. */
  liveCondition?: (sub: BlocklistSubscription) => LiveConditionValue | undefined;
}

/** A condition's value, as the Live condition is computed (live.ts liveCondition). */
export type LiveConditionValue = Pick<Condition, 'status' | 'reason' | 'message'>;

interface ReconcileResult {
  ok: boolean;
  nextSyncTime?: Date;
  /** Some target waits for the cluster (WAITING_REASONS): worth applying again before the next sync. */
  targetsWaiting: boolean;
  /** the status the sync left (written, or the same as the stored one but for its sync times) */
  status: BlocklistSubscriptionStatus;
}

/**
 * A status that changes nothing but its sync times is written at most this often: the write load of many
 * unchanged subscriptions stays flat, and lastSuccessfulSyncTime stays within this of the truth (the metric
 * blockfeed_last_success_timestamp_seconds has every sync).
 */
export const STATUS_REFRESH_MS = 3_600_000;

type PullOutcome =
  | { kind: 'list'; state: AppliedState; changed: boolean; dropped: Record<string, number>; dataChanged?: Date }
  | { kind: 'refused' | 'failed'; reason: string; message: string };

/** What every target holds after an apply. */
interface Applied {
  /** Per target: what this apply did, and the CIDRs the target holds after it. */
  targets: { field: TargetField; outcome: TargetOutcome; held: { cidrs: number; objects: TargetOutcome['objects'] } }[];
  writes: number;
  problems: TargetProblem[];
}

/** Degraded reasons a repair can clear: they are about the targets, not the feed. */
const TARGET_REASONS = new Set(['TargetTooLarge', 'TargetNotInstalled', 'TargetNotFound', 'TargetConflict', 'TargetNotEnforced', 'TargetUnsafe', 'TargetContested', 'ApplyFailed']);

/**
 * Of those, the ones the cluster may fix with no change to the subscription: someone installs the enforcement
 * point, creates the object the target names, frees the name, or changes the enforcement point's
 * configuration. (The same list stays too large; a failed write is retried by the work queue. An enforcement
 * point that stops refusing an object says so in its status, which the drift watch reports.)
 */
const WAITING_REASONS: ReadonlySet<string> = new Set(['TargetNotInstalled', 'TargetNotFound', 'TargetConflict', 'TargetUnsafe']);
const waitsForCluster = (applied: Applied | undefined) => applied?.problems.some((p) => WAITING_REASONS.has(p.reason)) ?? false;

const stateKey = (sub: BlocklistSubscription) => sub.metadata.uid ?? keyOf(sub);
const seriesOf = (sub: BlocklistSubscription) => ({ namespace: sub.metadata.namespace, name: sub.metadata.name });

function limitsOf(sub: BlocklistSubscription): SafetyLimits {
  return { ...SAFETY_DEFAULTS, ...sub.spec.safety };
}

/** Everything besides the feed body that shapes the applied list: a 304 or a record is only reusable if these are equal. */
function inputsHash(sub: BlocklistSubscription, clusterCidrs: readonly string[]): string {
  return createHash('sha256')
    .update(JSON.stringify([listUrl(sub.spec.feed).toString(), sub.spec.allowlist ?? [], limitsOf(sub), clusterCidrs]))
    .digest('hex');
}

/** Held on a subscription until finalize() has removed what it wrote (objects elsewhere have no owner reference). */
const FINALIZER = 'blockfeed.dev/cleanup';

const SECRET: ResourceType = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
const EVENT: ResourceType = { group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true };
const SUBSCRIPTION: ResourceType = { group: GROUP, version: VERSION, kind: KIND, plural: PLURAL, namespaced: true };

export async function readApiKey(apis: Apis, sub: BlocklistSubscription): Promise<string | undefined> {
  const ref = sub.spec.feed.credentials?.secretRef;
  if (!ref) return undefined;
  const secret = await getObject<{ data?: Record<string, string> }>(apis, SECRET, sub.metadata.namespace, ref.name);
  const encoded = secret?.data?.[ref.key ?? 'apiKey'];
  if (encoded === undefined) throw new FeedError('Unreachable', `Secret ${sub.metadata.namespace}/${ref.name} has no key "${ref.key ?? 'apiKey'}"`);
  return Buffer.from(encoded, 'base64').toString('utf8').trim();
}

/** Series that exist from a subscription's first minute, at 0: increase() (the pull-failure alert) sees the first failure. */
function initPullSeries(metrics: ControllerMetrics, sub: BlocklistSubscription): void {
  for (const result of PULL_RESULTS) metrics.pullTotal.inc({ ...seriesOf(sub), result }, 0);
}

async function pull(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<PullOutcome> {
  const { apis, metrics } = deps;
  const labels = seriesOf(sub);
  const inputs = inputsHash(sub, deps.clusterCidrs);
  const previous = deps.applied.get(stateKey(sub));
  const reusable = previous && previous.inputsHash === inputs ? previous : undefined;
  const limits = limitsOf(sub);
  const sanitiser = new Sanitiser({ clusterCidrs: deps.clusterCidrs, allowlist: sub.spec.allowlist, limits });
  initPullSeries(metrics, sub);
  const stopTimer = metrics.pullDuration.startTimer(labels);
  let pulled;
  try {
    const apiKey = await readApiKey(apis, sub);
    // A live subscription asks for the feed's current data: a copy the feed cached before the change it was told
    // of (or, behind a load balancer, another replica's older copy) must not be applied over a newer list.
    const fresh = sub.spec.feed.live?.enabled ?? LIVE_DEFAULTS.enabled;
    pulled = await pullFeed({ feed: sub.spec.feed, apiKey, etag: reusable?.etag, fresh }, { chunk: (buf) => sanitiser.write(buf), end: () => sanitiser.end() });
  } catch (err) {
    stopTimer();
    metrics.pullTotal.inc({ ...labels, result: 'failed' });
    if (err instanceof FeedError) return { kind: 'failed', reason: FEED_FAILURE_REASONS[err.reason], message: err.message };
    throw err;
  }
  if (!pulled.changed) {
    stopTimer();
    metrics.pullTotal.inc({ ...labels, result: 'unchanged' });
    deps.log.debug({ subscription: keyOf(sub), result: 'unchanged' }, 'pulled');
    return { kind: 'list', state: reusable!, changed: false, dropped: {} };
  }
  const result = sanitiser.finish();
  stopTimer();
  deps.log.debug({ subscription: keyOf(sub), result: 'changed', bytes: pulled.bytes, lines: pulled.lines }, 'pulled');
  for (const reason of DROP_REASONS) if (result.dropped[reason]) metrics.droppedEntries.inc({ ...labels, reason }, result.dropped[reason]);
  const considered = result.entries + Object.values(result.dropped).reduce((a, b) => a + b, 0);
  if (result.dropped.invalid > 0 && result.dropped.invalid * 2 > considered) {
    metrics.pullTotal.inc({ ...labels, result: 'refused' });
    const examples = (result.examples.invalid ?? []).map((e) => JSON.stringify(e)).join(', ');
    return {
      kind: 'refused',
      reason: 'FeedUnparseable',
      message: `${result.dropped.invalid} of ${considered} feed lines are not addresses (e.g. ${examples}); the feed is not a list`,
    };
  }
  const verdict = judge(result, sub.status?.entries, limits);
  if (!verdict.ok) {
    metrics.pullTotal.inc({ ...labels, result: 'refused' });
    return { kind: 'refused', reason: verdict.reason, message: verdict.message };
  }
  metrics.pullTotal.inc({ ...labels, result: 'changed' });
  const state: AppliedState = { inputsHash: inputs, etag: pulled.etag, list: splitFamilies(cidrStrings(result.set)), entries: result.entries };
  return { kind: 'list', state, changed: true, dropped: result.dropped, dataChanged: pulled.dataChanged };
}

/**
 * Applies a state to every target of the spec, and records it (runtime/applied-record.ts); targets are independent
 * objects, applied side by side, and the first failure is thrown. A target whose enforcement point is not
 * installed, or whose object name is taken, is Degraded, not failed: retrying would change nothing.
 */
async function applyAll(deps: ReconcileDeps, sub: BlocklistSubscription, state: AppliedState, repair: boolean, prefetched = prefetch(deps, sub)): Promise<Applied> {
  const { apis, metrics, log } = deps;
  const labels = seriesOf(sub);
  const ctx = { apis, sub, list: state.list, log, prefetched };
  // Kinds the last status shows but the spec no longer has: their objects go.
  const inSpec = new Set(sub.spec.targets.map((t) => kindOf(t).field));
  const left = new Set((sub.status?.targets ?? []).map((t) => t.target).filter((f) => !inSpec.has(f as TargetField)));
  const cleaned = await Promise.all([...left].map((f) => kindByField(f)?.cleanup(ctx) ?? Promise.resolve(0)));
  forgetTargetSeries(metrics, labels, [...left].flatMap((f) => kindByField(f)?.metricKind ?? []));

  const applyOne = async (target: BlocklistSubscription['spec']['targets'][number]) => {
    const kind = kindOf(target);
    let outcome: TargetOutcome;
    try {
      outcome = await applyTarget(ctx, target);
    } catch (err) {
      // Not failures to retry: nothing changes until someone installs the enforcement point or frees the name.
      const reason = err instanceof ResourceNotServed ? 'TargetNotInstalled' : err instanceof ObjectTaken ? 'TargetConflict' : undefined;
      if (!reason) {
        metrics.targetApply.inc({ ...labels, kind: kind.metricKind, result: 'failed' });
        throw new Error(`applying to ${kind.field} failed: ${(err as Error).message}`, { cause: err });
      }
      outcome = { kind: kind.metricKind, objects: [], writes: 0, problems: [{ reason, message: `${kind.field}: ${(err as Error).message}` }] };
    }
    const degraded = outcome.problems.length > 0;
    // A list too large for the target leaves the last one in force (fail-static): the target still holds what
    // the last status said. A contested target holds the list (it is another's object that is refused). Any
    // other problem means the target holds nothing of this subscription.
    const before = sub.status?.targets?.find((t) => t.target === kind.field);
    const only = (reason: TargetProblem['reason']) => degraded && outcome.problems.every((p) => p.reason === reason);
    const held =
      !degraded || only('TargetContested')
        ? { cidrs: state.list.all.length, objects: outcome.objects }
        : only('TargetTooLarge') ? { cidrs: before?.cidrs ?? 0, objects: before?.objects ?? [] } : { cidrs: 0, objects: outcome.objects };
    metrics.targetApply.inc({ ...labels, kind: outcome.kind, result: degraded ? 'degraded' : outcome.writes ? 'written' : 'unchanged' });
    metrics.targetCidrs.set({ ...labels, kind: outcome.kind }, held.cidrs);
    // From the first apply on, at 0, like the pull series: increase() sees the first repair.
    metrics.driftRepairs.inc({ ...labels, kind: outcome.kind }, repair ? outcome.writes : 0);
    return { field: kind.field, outcome, held };
  };
  const [recorded, ...settled] = await Promise.allSettled([writeRecord(ctx, { lines: state.list.all, inputsHash: state.inputsHash, entries: state.entries }), ...sub.spec.targets.map(applyOne)]);
  for (const result of [recorded, ...settled]) if (result.status === 'rejected') throw result.reason;
  const targets = settled.map((r) => (r as PromiseFulfilledResult<Applied['targets'][number]>).value);
  return {
    targets,
    writes: targets.reduce((n, t) => n + t.outcome.writes, 0) + cleaned.reduce((a, b) => a + b, 0),
    problems: targets.flatMap((t) => t.outcome.problems),
  };
}

/** Lists what applying reads: the objects the targets and the record own, one request per kind of object, and the targets' lookups. */
function prefetch(deps: ReconcileDeps, sub: BlocklistSubscription): Prefetched {
  const owned = [CONFIG_MAP, ...sub.spec.targets.flatMap((t) => kindOf(t).resources)];
  return prefetchLists({ apis: deps.apis, sub, log: deps.log }, owned, sub.spec.targets.flatMap(lookupsOf));
}

function targetStatuses(applied: Applied): TargetStatus[] {
  return applied.targets.map(({ field, outcome, held }) => {
    const [first] = outcome.problems;
    return {
      target: field,
      state: first ? 'Degraded' : 'Applied',
      ...(first ? { reason: first.reason, message: outcome.problems.map((p) => p.message).join('; ') } : {}),
      cidrs: held.cidrs,
      objects: held.objects,
    };
  });
}

const APPLY_RESULTS = ['written', 'unchanged', 'degraded', 'failed'] as const;

/** Drops a subscription's series of these kinds of target: a target no longer applied reports nothing. */
function forgetTargetSeries(metrics: ControllerMetrics, series: { namespace: string; name: string }, kinds: readonly string[]): void {
  for (const kind of kinds) {
    metrics.targetCidrs.remove({ ...series, kind });
    metrics.driftRepairs.remove({ ...series, kind });
    for (const result of APPLY_RESULTS) metrics.targetApply.remove({ ...series, kind, result });
  }
}

function setCondition(conditions: Condition[], next: Omit<Condition, 'lastTransitionTime'>, now: string): Condition[] {
  const old = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : now;
  return [...conditions.filter((c) => c.type !== next.type), { ...next, lastTransitionTime }].sort((a, b) => a.type.localeCompare(b.type));
}

/** The status without its sync times: what must be written as soon as it changes. */
function essential(status: BlocklistSubscriptionStatus | undefined): Omit<BlocklistSubscriptionStatus, 'lastSyncTime' | 'nextSyncTime' | 'lastSuccessfulSyncTime'> {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { lastSyncTime, nextSyncTime, lastSuccessfulSyncTime, ...rest } = status ?? {};
  return rest;
}

/**
 * Whether a sync's status must be written: when anything but the sync times changed, when someone asked for
 * the sync (requestedAt: they are waiting to see it), or when the recorded sync times are older than
 * STATUS_REFRESH_MS.
 */
export function statusWriteNeeded(before: BlocklistSubscriptionStatus | undefined, after: BlocklistSubscriptionStatus, now: Date, requested: boolean): boolean {
  if (requested || !sameJson(essential(before), essential(after))) return true;
  const last = before?.lastSyncTime ? Date.parse(before.lastSyncTime) : 0;
  return now.getTime() - last >= STATUS_REFRESH_MS;
}

async function recordEvent(deps: ReconcileDeps, sub: BlocklistSubscription, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
  const now = (deps.now?.() ?? new Date()).toISOString();
  const { namespace, name, uid } = sub.metadata;
  const event = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { generateName: `${name}.`, namespace },
    involvedObject: { apiVersion: API_VERSION, kind: KIND, name, namespace, uid },
    type,
    reason,
    message: message.slice(0, 1024),
    source: { component: 'blockfeed-controller' },
    reportingComponent: 'blockfeed.dev/controller',
    reportingInstance: deps.instance,
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
  try {
    await apiRequest(deps.apis, 'POST', collectionPath(EVENT, namespace), { json: JSON.stringify(event) });
    deps.apis.writes.count('Event');
  } catch (err) {
    deps.log.warn({ err, subscription: keyOf(sub) }, 'could not record Event');
  }
}

/** A JSON merge patch of the subscription (`status`: of its status subresource). */
async function patchSubscription(apis: Apis, sub: BlocklistSubscription, patch: Record<string, unknown>, status = false): Promise<void> {
  const path = `${objectPath(SUBSCRIPTION, sub.metadata.namespace, sub.metadata.name)}${status ? '/status' : ''}`;
  await apiRequest(apis, 'PATCH', path, { json: JSON.stringify(patch), contentType: 'application/merge-patch+json' });
  apis.writes.count(status ? 'BlocklistSubscriptionStatus' : 'BlocklistSubscription');
}

const patchStatus = (apis: Apis, sub: BlocklistSubscription, status: BlocklistSubscriptionStatus) => patchSubscription(apis, sub, { status }, true);
const patchMetadata = (apis: Apis, sub: BlocklistSubscription, metadata: Record<string, unknown>) => patchSubscription(apis, sub, { metadata });

/** Removes everything the subscription wrote, then lets the object go. */
export async function finalize(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<void> {
  if (!sub.metadata.finalizers?.includes(FINALIZER)) return;
  const ctx = { apis: deps.apis, sub, log: deps.log };
  for (const kind of TARGET_KINDS) await kind.cleanup(ctx);
  await deleteRecord(ctx);
  await patchMetadata(deps.apis, sub, {
    finalizers: sub.metadata.finalizers.filter((f) => f !== FINALIZER),
    resourceVersion: sub.metadata.resourceVersion,
  });
  deps.applied.delete(stateKey(sub));
  deps.apis.ledger.forgetOwner(keyOf(sub));
  for (const m of [deps.metrics.listEntries, deps.metrics.lastSuccess, deps.metrics.degraded, deps.metrics.appliedDataAge]) m.remove(seriesOf(sub));
  forgetTargetSeries(deps.metrics, seriesOf(sub), TARGET_KINDS.map((k) => k.metricKind));
  deps.log.info({ subscription: keyOf(sub) }, 'subscription deleted; cleaned up');
}

export async function ensureFinalizer(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<void> {
  if (sub.metadata.finalizers?.includes(FINALIZER)) return;
  await patchMetadata(deps.apis, sub, { finalizers: [...(sub.metadata.finalizers ?? []), FINALIZER], resourceVersion: sub.metadata.resourceVersion });
}

/** A one-line summary of an applied list, for the status and Events. */
function summary(state: AppliedState, applied: Applied, dropped: Record<string, number>): string {
  const droppedTotal = Object.values(dropped).reduce((a, b) => a + b, 0);
  const objects = applied.targets.reduce((n, t) => n + t.outcome.objects.length, 0);
  const reasons = Object.entries(dropped).filter(([, n]) => n).map(([r, n]) => `${r} ${n}`).join(', ');
  return `${state.list.all.length} CIDRs from ${state.entries} entries${droppedTotal ? ` (${droppedTotal} dropped: ${reasons})` : ''} applied to ${objects} objects`;
}

/** An Event a run records. */
interface RunEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/**
 * What a run (a sync or a repair) reports, built as it goes: the status it leads to, conditions included, and the
 * Event that says what happened. endRun() writes them, one way for both kinds of run.
 */
class Report {
  readonly status: BlocklistSubscriptionStatus & { conditions: Condition[] };
  event?: RunEvent;
  readonly #generation: number | undefined;
  readonly #now: string;

  constructor(sub: BlocklistSubscription, now: Date, live: LiveConditionValue | undefined) {
    this.status = { ...sub.status, conditions: sub.status?.conditions ?? [] };
    this.#generation = sub.metadata.generation;
    this.#now = now.toISOString();
    // The Live condition is the long poll's state, which every write of the status carries as it is now.
    if (live) this.condition('Live', live.status, live.reason, live.message);
    else this.status.conditions = this.status.conditions.filter((c) => c.type !== 'Live');
  }

  /** Sets a condition; its transition time stays while its status does. */
  condition(type: string, status: Condition['status'], reason: string, message: string): void {
    this.status.conditions = setCondition(this.status.conditions, { type, status, reason, message, observedGeneration: this.#generation }, this.#now);
  }

  /**
   * What the targets hold after an apply: their status, and Degraded True naming the first problem, with a
   * Warning, or else Degraded False. A repair clears only a Degraded about the targets: a feed's failure stays
   * until a pull succeeds.
   */
  targetsApplied(applied: Applied, run: 'sync' | 'repair'): void {
    this.status.targets = targetStatuses(applied);
    const degraded = this.status.conditions.find((c) => c.type === 'Degraded');
    if (applied.problems.length) {
      const message = applied.problems.map((p) => p.message).join('; ');
      this.condition('Degraded', 'True', applied.problems[0]!.reason, message);
      this.event = { type: 'Warning', reason: applied.problems[0]!.reason, message };
    } else if (run === 'sync' || !degraded || TARGET_REASONS.has(degraded.reason)) {
      this.condition('Degraded', 'False', 'AsExpected', 'all targets hold the list');
    }
  }
}

/**
 * How every run ends, a sync or a repair: the Degraded gauge; then, side by side, the status and the Event
 * (recordEvent never throws); and a log line.
 * - The status is written when anything in it but the sync times changed, when the run was asked for
 *   (requestedAt: someone is waiting to see it), and, for a sync, when the recorded sync times are older than
 *   STATUS_REFRESH_MS (statusWriteNeeded). A repair sets no sync times.
 * - The Event is recorded when the status changed, when the run was asked for, or when objects were written:
 *   one that would only repeat what the status says is not (a failing pull retried, a target waiting for the
 *   cluster checked again).
 */
async function endRun(deps: ReconcileDeps, sub: BlocklistSubscription, report: Report, run: { kind: 'sync' | 'repair'; now: Date; requested: boolean; writes: number }): Promise<void> {
  deps.metrics.degraded.set(seriesOf(sub), report.status.conditions.some((c) => c.type === 'Degraded' && c.status === 'True') ? 1 : 0);
  const changed = !sameJson(essential(sub.status), essential(report.status));
  const writeStatus = run.kind === 'sync' ? statusWriteNeeded(sub.status, report.status, run.now, run.requested) : changed;
  const { event } = report;
  const record = event !== undefined && (changed || run.requested || run.writes > 0);
  await Promise.all([writeStatus ? patchStatus(deps.apis, sub, report.status) : undefined, record ? recordEvent(deps, sub, event.type, event.reason, event.message) : undefined]);
  if (event && (record || run.kind === 'sync')) deps.log.info({ subscription: keyOf(sub), outcome: event.reason, message: event.message }, run.kind);
}

/**
 * The value of reconcile.fluxcd.io/requestedAt when it asks for a sync not handled yet (it differs from
 * status.lastHandledReconcileAt), as Flux's controllers read it; undefined otherwise. Pure.
 */
export function pendingRequest(sub: Pick<BlocklistSubscription, 'metadata' | 'status'>): string | undefined {
  const asked = sub.metadata.annotations?.[RECONCILE_REQUEST_ANNOTATION];
  return asked !== undefined && asked !== sub.status?.lastHandledReconcileAt ? asked : undefined;
}

/** Whether a status's Live condition says what `want` says (no condition for undefined). Pure. */
export function sameLiveCondition(held: Condition | undefined, want: LiveConditionValue | undefined): boolean {
  if (!held || !want) return held === want || (!held && !want);
  return held.status === want.status && held.reason === want.reason && held.message === want.message;
}

/**
 * Writes the Live condition alone, when the long poll's state changed and no run wrote it: read from the
 * apiserver (the informer's copy may not have the last status written yet), written only if it differs.
 */
export async function writeLiveCondition(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<void> {
  const want = deps.liveCondition?.(sub);
  const held = (s: BlocklistSubscription) => s.status?.conditions?.find((c) => c.type === 'Live');
  if (sameLiveCondition(held(sub), want)) return;
  const latest = await getObject<BlocklistSubscription>(deps.apis, SUBSCRIPTION, sub.metadata.namespace, sub.metadata.name);
  if (!latest || latest.metadata.deletionTimestamp || sameLiveCondition(held(latest), want)) return;
  const report = new Report(latest, deps.now?.() ?? new Date(), want);
  await patchStatus(deps.apis, latest, report.status);
}

/** Pulls and applies now, then reports (endRun()): status, Event, metrics. */
export async function syncSubscription(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<ReconcileResult> {
  const now = deps.now?.() ?? new Date();
  const generation = sub.metadata.generation;
  const labels = seriesOf(sub);
  const report = new Report(sub, now, deps.liveCondition?.(sub));
  const { status } = report;

  // Asked for with reconcile.fluxcd.io/requestedAt: the value is recorded as handled, the annotation stays.
  const requestedAt = pendingRequest(sub);
  const requested = requestedAt !== undefined;
  if (requested) status.lastHandledReconcileAt = requestedAt;

  let next: Date | undefined;
  try {
    next = nextSyncTime(sub, now);
  } catch (err) {
    next = undefined;
    deps.log.warn({ err, subscription: keyOf(sub) }, 'unusable schedule');
  }

  if (sub.spec.suspend) {
    report.condition('Synced', 'False', 'Suspended', 'spec.suspend is true; the last applied list stays in force');
    // null removes the field in a merge patch: a suspended subscription has no next sync.
    const suspended = { ...status, observedGeneration: generation, nextSyncTime: null as unknown as undefined };
    if (statusWriteNeeded(sub.status, suspended, now, requested)) await patchStatus(deps.apis, sub, suspended);
    return { ok: true, targetsWaiting: false, status: suspended };
  }

  let failure: { reason: string; message: string } | undefined;
  let pulled: PullOutcome | undefined;
  let applied: Applied | undefined;
  try {
    // What the targets hold is listed while the feed is pulled.
    const prefetched = prefetch(deps, sub);
    pulled = await pull(deps, sub);
    if (pulled.kind !== 'list') failure = pulled;
    else {
      try {
        applied = await applyAll(deps, sub, pulled.state, false, prefetched);
      } catch (err) {
        failure = { reason: 'ApplyFailed', message: (err as Error).message };
      }
    }
  } catch (err) {
    failure = { reason: 'SyncError', message: (err as Error).message };
  }

  const nowText = now.toISOString();
  status.observedGeneration = generation;
  status.lastSyncTime = nowText;
  status.nextSyncTime = next?.toISOString();
  if (pulled?.kind === 'list' && applied) {
    const { state } = pulled;
    deps.applied.set(stateKey(sub), state);
    status.entries = state.entries;
    status.cidrs = state.list.all.length;
    status.lastSuccessfulSyncTime = nowText;
    status.feedETag = state.etag;
    status.listHash = listHash(state.list.all);
    status.message = summary(state, applied, pulled.dropped);
    // The condition reads the same after an unchanged sync (no status write); the Event tells the two apart.
    report.event = { type: 'Normal', reason: pulled.changed ? 'Synced' : 'Unchanged', message: `${status.message}; ${applied.writes} written` };
    report.condition('Ready', 'True', 'ListApplied', status.message);
    report.condition('Synced', 'True', 'Synced', status.message);
    report.targetsApplied(applied, 'sync');
    deps.metrics.listEntries.set(labels, state.entries);
    deps.metrics.lastSuccess.set(labels, Math.floor(now.getTime() / 1000));
    if (pulled.changed && pulled.dataChanged) deps.metrics.appliedDataAge.observe(labels, Math.max(0, Date.now() - pulled.dataChanged.getTime()) / 1000);
  } else {
    const { reason, message } = failure!;
    report.event = { type: 'Warning', reason, message: `${message}; the last applied list stays in force` };
    status.message = report.event.message;
    report.condition('Synced', 'False', reason, report.event.message);
    report.condition('Degraded', 'True', reason, report.event.message);
    if (!status.lastSuccessfulSyncTime) report.condition('Ready', 'False', 'NeverApplied', 'no list has been applied yet');
  }
  await endRun(deps, sub, report, { kind: 'sync', now, requested, writes: applied?.writes ?? 0 });
  return { ok: !failure, nextSyncTime: next, targetsWaiting: waitsForCluster(applied), status };
}

/**
 * Applies the last applied list again, without a pull: from memory, or after a restart from the record.
 * Answers needsPull when there is no trustworthy list to apply (no record, or the inputs changed since): the
 * caller then syncs. Reports as a sync does (endRun()), with no sync times. `drift`: objects may have been
 * changed by someone (a drift event, a start-up check), as opposed to a target that was waiting for the
 * cluster; only the former count as drift repairs.
 */
export async function repairSubscription(
  deps: ReconcileDeps,
  sub: BlocklistSubscription,
  why: string,
  drift = true,
): Promise<{ ok: boolean; needsPull: boolean; targetsWaiting: boolean }> {
  const labels = seriesOf(sub);
  let state = deps.applied.get(stateKey(sub));
  const restored = !state;
  if (!state) {
    const recorded = await readRecord(deps.apis, sub);
    if (!recorded) return { ok: true, needsPull: true, targetsWaiting: false };
    state = { inputsHash: recorded.inputsHash, etag: sub.status?.feedETag, list: splitFamilies(recorded.lines), entries: recorded.entries };
  }
  if (state.inputsHash !== inputsHash(sub, deps.clusterCidrs)) return { ok: true, needsPull: true, targetsWaiting: false };
  const now = deps.now?.() ?? new Date();
  if (restored) {
    deps.applied.set(stateKey(sub), state);
    // A restarted process exposes every subscription from its first minute, not from its next pull.
    initPullSeries(deps.metrics, sub);
    deps.metrics.listEntries.set(labels, state.entries);
    const last = sub.status?.lastSuccessfulSyncTime;
    if (last) deps.metrics.lastSuccess.set(labels, Math.floor(Date.parse(last) / 1000));
  }
  const report = new Report(sub, now, deps.liveCondition?.(sub));
  let applied: Applied | undefined;
  try {
    applied = await applyAll(deps, sub, state, drift);
    report.targetsApplied(applied, 'repair');
    if (!report.event && applied.writes) {
      const message = `${why}: applied the last applied list again (${state.list.all.length} CIDRs); ${applied.writes} written`;
      report.event = { type: 'Normal', reason: drift ? 'DriftRepaired' : 'TargetsApplied', message };
    }
  } catch (err) {
    const message = `repairing (${why}) failed: ${(err as Error).message}; what the targets hold stays`;
    report.condition('Degraded', 'True', 'ApplyFailed', message);
    report.event = { type: 'Warning', reason: 'ApplyFailed', message };
  }
  await endRun(deps, sub, report, { kind: 'repair', now, requested: false, writes: applied?.writes ?? 0 });
  return { ok: applied !== undefined, needsPull: false, targetsWaiting: waitsForCluster(applied) };
}

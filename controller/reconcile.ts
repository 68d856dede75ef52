// One sync of one subscription: pull, sanitise, judge, apply to every target, report (status, Event, metrics).
// Whatever fails, what was applied before stays in force (fail-static) and the status says why.
import { createHash } from 'node:crypto';
import type { Logger } from '../common/logging.ts';
import {
  API_VERSION,
  GROUP,
  KIND,
  PLURAL,
  VERSION,
  type BlocklistSubscription,
  type BlocklistSubscriptionStatus,
  type Condition,
  type TargetStatus,
} from './api/v1alpha1.ts';
import { cidrStrings } from './cidr.ts';
import { FeedError, feedUrl, pullFeed } from './feed.ts';
import { FINALIZER, SYNC_NOW_ANNOTATION, mergePatch, readOptional, type Apis } from './k8s.ts';
import { PULL_RESULTS, type ControllerMetrics } from './metrics.ts';
import { DEFAULT_LIMITS, DROP_REASONS, Sanitiser, judge, type SafetyLimits } from './safety.ts';
import { nextSyncTime } from './schedule.ts';
import { applyConfigMaps, cleanupConfigMaps } from './targets/configmap.ts';
import { applyIngressNginx, cleanupIngressNginx } from './targets/ingress-nginx.ts';
import { applyNetworkPolicies, cleanupNetworkPolicies } from './targets/networkpolicy.ts';
import { splitFamilies, type AppliedList, type TargetContext, type TargetOutcome } from './targets/types.ts';

/** The last list this process applied per subscription, so a 304 can still (re)apply it to new targets. */
export interface AppliedState {
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
  applied: Map<string, AppliedState>;
  /** which process reports Events */
  instance: string;
  now?: () => Date;
  /** for the bench and tests: ConfigMap shard size */
  shardBudget?: number;
}

interface ReconcileResult {
  ok: boolean;
  nextSyncTime?: Date;
}

type Outcome =
  | { kind: 'applied'; unchanged: boolean; entries: number; list: AppliedList; outcomes: TargetOutcome[]; etag?: string; dropped: Record<string, number> }
  | { kind: 'refused' | 'failed'; reason: string; message: string };

const FEED_REASONS: Record<FeedError['reason'], string> = {
  HttpError: 'FeedHttpError',
  Timeout: 'FeedTimeout',
  TooLarge: 'FeedTooLarge',
  Unreachable: 'FeedUnreachable',
  NotAList: 'FeedNotAList',
};

const keyOf = (sub: BlocklistSubscription) => `${sub.metadata.namespace}/${sub.metadata.name}`;

function limitsOf(sub: BlocklistSubscription): SafetyLimits {
  return { ...DEFAULT_LIMITS, ...sub.spec.safety };
}

/** Everything besides the feed body that shapes the applied list: a 304 is only reusable if these are equal. */
function inputsHash(sub: BlocklistSubscription, clusterCidrs: readonly string[]): string {
  return createHash('sha256')
    .update(JSON.stringify([feedUrl(sub.spec.feed).toString(), sub.spec.allowlist ?? [], limitsOf(sub), clusterCidrs]))
    .digest('hex');
}

async function readApiKey(apis: Apis, sub: BlocklistSubscription): Promise<string | undefined> {
  const ref = sub.spec.feed.credentials?.secretRef;
  if (!ref) return undefined;
  const secret = await readOptional(() => apis.core.readNamespacedSecret({ name: ref.name, namespace: sub.metadata.namespace }));
  const encoded = secret?.data?.[ref.key ?? 'apiKey'];
  if (encoded === undefined) throw new FeedError('Unreachable', `Secret ${sub.metadata.namespace}/${ref.name} has no key "${ref.key ?? 'apiKey'}"`);
  return Buffer.from(encoded, 'base64').toString('utf8').trim();
}

async function pullAndApply(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<Outcome> {
  const { apis, metrics, log } = deps;
  const labels = { namespace: sub.metadata.namespace, name: sub.metadata.name };
  const inputs = inputsHash(sub, deps.clusterCidrs);
  const previous = deps.applied.get(sub.metadata.uid ?? keyOf(sub));
  const reusable = previous && previous.inputsHash === inputs ? previous : undefined;
  const limits = limitsOf(sub);
  const sanitiser = new Sanitiser({ clusterCidrs: deps.clusterCidrs, allowlist: sub.spec.allowlist, limits });
  // Series that exist from the first pull on, at 0: increase() (the pull-failure alert) sees the first failure.
  for (const result of PULL_RESULTS) metrics.pullTotal.inc({ ...labels, result }, 0);
  const stopTimer = metrics.pullDuration.startTimer(labels);
  let pulled;
  try {
    const apiKey = await readApiKey(apis, sub);
    pulled = await pullFeed({ feed: sub.spec.feed, apiKey, etag: reusable?.etag }, { chunk: (buf) => sanitiser.write(buf), end: () => sanitiser.end() });
  } catch (err) {
    stopTimer();
    metrics.pullTotal.inc({ ...labels, result: 'failed' });
    if (err instanceof FeedError) return { kind: 'failed', reason: FEED_REASONS[err.reason], message: err.message };
    throw err;
  }

  let list: AppliedList;
  let entries: number;
  let etag: string | undefined;
  let dropped: Record<string, number> = {};
  if (!pulled.changed) {
    stopTimer();
    metrics.pullTotal.inc({ ...labels, result: 'unchanged' });
    list = reusable!.list;
    entries = reusable!.entries;
    etag = reusable!.etag;
  } else {
    const result = sanitiser.finish();
    stopTimer();
    dropped = result.dropped;
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
    list = splitFamilies(cidrStrings(result.set));
    entries = result.entries;
    etag = pulled.etag;
  }

  const ctx: TargetContext = { apis, sub, list, log };
  // Targets are independent objects: applied side by side; the first failure is reported.
  const settled = await Promise.allSettled(
    sub.spec.targets.map(async (target): Promise<TargetOutcome> => {
      const kind = target.networkPolicy ? 'NetworkPolicy' : target.ingressNginx ? 'Ingress' : 'ConfigMap';
      let outcome: TargetOutcome;
      try {
        if (target.networkPolicy) outcome = await applyNetworkPolicies(ctx, target.networkPolicy);
        else if (target.ingressNginx) outcome = await applyIngressNginx(ctx, target.ingressNginx);
        else outcome = await applyConfigMaps(ctx, target.configMap!, deps.shardBudget);
      } catch (err) {
        metrics.targetApply.inc({ ...labels, kind, result: 'failed' });
        throw new Error(`applying to ${kind} failed: ${(err as Error).message}`, { cause: err });
      }
      metrics.targetApply.inc({ ...labels, kind, result: outcome.problems.length ? 'degraded' : outcome.writes ? 'written' : 'unchanged' });
      metrics.targetCidrs.set({ ...labels, kind: outcome.kind }, outcome.problems.length ? 0 : list.all.length);
      return outcome;
    }),
  );
  const outcomes: TargetOutcome[] = [];
  for (const result of settled) {
    if (result.status === 'rejected') return { kind: 'failed', reason: 'ApplyFailed', message: (result.reason as Error).message };
    outcomes.push(result.value);
  }
  deps.applied.set(sub.metadata.uid ?? keyOf(sub), { inputsHash: inputs, etag, list, entries });
  const unchanged = outcomes.every((o) => o.writes === 0);
  return { kind: 'applied', unchanged, entries, list, outcomes, etag, dropped };
}

function setCondition(conditions: Condition[], next: Omit<Condition, 'lastTransitionTime'>, now: string): Condition[] {
  const old = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : now;
  return [...conditions.filter((c) => c.type !== next.type), { ...next, lastTransitionTime }].sort((a, b) => a.type.localeCompare(b.type));
}

async function recordEvent(deps: ReconcileDeps, sub: BlocklistSubscription, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
  const now = (deps.now?.() ?? new Date()).toISOString();
  try {
    await deps.apis.core.createNamespacedEvent({
      namespace: sub.metadata.namespace,
      body: {
        metadata: { generateName: `${sub.metadata.name}.`, namespace: sub.metadata.namespace },
        involvedObject: { apiVersion: API_VERSION, kind: KIND, name: sub.metadata.name, namespace: sub.metadata.namespace, uid: sub.metadata.uid },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: 'blockfeed-controller' },
        reportingComponent: 'blockfeed.dev/controller',
        reportingInstance: deps.instance,
        firstTimestamp: now as unknown as Date,
        lastTimestamp: now as unknown as Date,
        count: 1,
      },
    });
  } catch (err) {
    deps.log.warn({ err, subscription: keyOf(sub) }, 'could not record Event');
  }
}

async function patchStatus(apis: Apis, sub: BlocklistSubscription, status: BlocklistSubscriptionStatus): Promise<void> {
  await apis.custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace: sub.metadata.namespace, plural: PLURAL, name: sub.metadata.name, body: { status } },
    mergePatch,
  );
  apis.writes.count('BlocklistSubscriptionStatus');
}

async function patchMetadata(apis: Apis, sub: BlocklistSubscription, metadata: Record<string, unknown>): Promise<void> {
  await apis.custom.patchNamespacedCustomObject(
    { group: GROUP, version: VERSION, namespace: sub.metadata.namespace, plural: PLURAL, name: sub.metadata.name, body: { metadata } },
    mergePatch,
  );
  apis.writes.count('BlocklistSubscription');
}

/** Removes what the subscription wrote outside owner-reference reach, then lets the object go. */
export async function finalize(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<void> {
  if (!sub.metadata.finalizers?.includes(FINALIZER)) return;
  const ctx = { apis: deps.apis, sub, log: deps.log };
  await cleanupNetworkPolicies(ctx);
  await cleanupIngressNginx(ctx);
  await cleanupConfigMaps(ctx);
  await patchMetadata(deps.apis, sub, {
    finalizers: sub.metadata.finalizers.filter((f) => f !== FINALIZER),
    resourceVersion: sub.metadata.resourceVersion,
  });
  deps.applied.delete(sub.metadata.uid ?? keyOf(sub));
  for (const m of [deps.metrics.listEntries, deps.metrics.lastSuccess, deps.metrics.degraded]) m.remove({ namespace: sub.metadata.namespace, name: sub.metadata.name });
  deps.log.info({ subscription: keyOf(sub) }, 'subscription deleted; cleaned up');
}

export async function ensureFinalizer(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<void> {
  if (sub.metadata.finalizers?.includes(FINALIZER)) return;
  await patchMetadata(deps.apis, sub, { finalizers: [...(sub.metadata.finalizers ?? []), FINALIZER], resourceVersion: sub.metadata.resourceVersion });
}

/** Pulls and applies now, then writes status, an Event and metrics. */
export async function syncSubscription(deps: ReconcileDeps, sub: BlocklistSubscription): Promise<ReconcileResult> {
  const now = deps.now?.() ?? new Date();
  const nowText = now.toISOString();
  const generation = sub.metadata.generation;
  const labels = { namespace: sub.metadata.namespace, name: sub.metadata.name };
  const status: BlocklistSubscriptionStatus = { ...sub.status };
  let conditions = status.conditions ?? [];
  const cond = (type: string, s: Condition['status'], reason: string, message: string) => {
    conditions = setCondition(conditions, { type, status: s, reason, message, observedGeneration: generation }, nowText);
  };

  if (sub.metadata.annotations?.[SYNC_NOW_ANNOTATION] !== undefined) {
    await patchMetadata(deps.apis, sub, { annotations: { [SYNC_NOW_ANNOTATION]: null } });
  }

  let next: Date | undefined;
  try {
    next = nextSyncTime(sub, now);
  } catch (err) {
    next = undefined;
    deps.log.warn({ err, subscription: keyOf(sub) }, 'unusable schedule');
  }

  if (sub.spec.suspend) {
    cond('Synced', 'False', 'Suspended', 'spec.suspend is true; the last applied list stays in force');
    // null removes the field in a merge patch: a suspended subscription has no next sync.
    await patchStatus(deps.apis, sub, { ...status, observedGeneration: generation, conditions, nextSyncTime: null as unknown as undefined });
    return { ok: true };
  }

  let outcome: Outcome;
  try {
    outcome = await pullAndApply(deps, sub);
  } catch (err) {
    outcome = { kind: 'failed', reason: 'SyncError', message: (err as Error).message };
  }

  status.observedGeneration = generation;
  status.lastSyncTime = nowText;
  status.nextSyncTime = next?.toISOString();
  let eventType: 'Normal' | 'Warning' = 'Normal';
  let eventReason: string;
  let eventMessage: string;
  if (outcome.kind === 'applied') {
    const problems = outcome.outcomes.flatMap((o) => o.problems);
    const targets: TargetStatus[] = outcome.outcomes.flatMap((o) => o.objects);
    const writes = outcome.outcomes.reduce((n, o) => n + o.writes, 0);
    const droppedTotal = Object.values(outcome.dropped).reduce((a, b) => a + b, 0);
    status.entries = outcome.entries;
    status.cidrs = outcome.list.all.length;
    status.lastSuccessfulSyncTime = nowText;
    status.feedETag = outcome.etag;
    status.listHash = createHash('sha256').update(outcome.list.all.join('\n')).digest('hex');
    status.targets = targets;
    eventReason = outcome.unchanged ? 'Unchanged' : 'Synced';
    status.message = `${outcome.list.all.length} CIDRs from ${outcome.entries} entries${droppedTotal ? ` (${droppedTotal} dropped: ${Object.entries(outcome.dropped).filter(([, n]) => n).map(([r, n]) => `${r} ${n}`).join(', ')})` : ''} applied to ${targets.length} objects; ${writes} written`;
    eventMessage = status.message;
    cond('Ready', 'True', 'ListApplied', status.message);
    cond('Synced', 'True', eventReason, status.message);
    if (problems.length) {
      cond('Degraded', 'True', 'TargetTooLarge', problems.join('; '));
      eventType = 'Warning';
      eventReason = 'TargetTooLarge';
      eventMessage = problems.join('; ');
    } else {
      cond('Degraded', 'False', 'AsExpected', 'all targets hold the list');
    }
    deps.metrics.listEntries.set(labels, outcome.entries);
    deps.metrics.lastSuccess.set(labels, Math.floor(now.getTime() / 1000));
  } else {
    eventType = 'Warning';
    eventReason = outcome.reason;
    eventMessage = `${outcome.message}; the last applied list stays in force`;
    status.message = eventMessage;
    cond('Synced', 'False', outcome.reason, eventMessage);
    cond('Degraded', 'True', outcome.reason, eventMessage);
    if (!status.lastSuccessfulSyncTime) cond('Ready', 'False', 'NeverApplied', 'no list has been applied yet');
  }
  status.conditions = conditions;
  deps.metrics.degraded.set(labels, conditions.some((c) => c.type === 'Degraded' && c.status === 'True') ? 1 : 0);
  // Independent requests: side by side (recordEvent never throws).
  await Promise.all([patchStatus(deps.apis, sub, status), recordEvent(deps, sub, eventType, eventReason, eventMessage)]);
  deps.log.info({ subscription: keyOf(sub), outcome: eventReason, message: eventMessage }, 'sync');
  return { ok: outcome.kind !== 'failed', nextSyncTime: next };
}

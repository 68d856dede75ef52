// What the targets share when they apply: how an enforcement point's status conditions are read, the
// refusals the ledger keeps for a target's objects as its problems, and the apply of a target whose list may
// be cut into several objects.
import { ledgerKey } from '../runtime/ledger.ts';
import type { ResourceType } from '../runtime/resources.ts';
import { syncObjects, targetSelector, type DesiredObject, type Refusal, type WriteContext } from '../runtime/objects.ts';
import { shardList, type Shard } from './shards.ts';
import type { TargetContext, TargetOutcome, TargetProblem } from './types.ts';

/** A condition in an enforcement point's status (Istio writes observedGeneration as an int-or-string). */
export interface StatusCondition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  observedGeneration?: number | string;
}

/** Whether a condition is about this generation of its object (one that does not say is taken as current). */
export const aboutGeneration = (c: StatusCondition, generation: number | undefined) =>
  c.observedGeneration === undefined || Number(c.observedGeneration) === generation;

/** A condition as a refusal quotes it: `Accepted False (Conflicted): message`. */
export const conditionText = (c: StatusCondition) => `${c.type} ${c.status}${c.reason ? ` (${c.reason})` : ''}: ${c.message ?? ''}`.trimEnd();

/** The refusals the ledger holds for these objects, as their status said when last read, as target problems. */
export function refusalProblems(ctx: WriteContext, resource: ResourceType, objects: readonly DesiredObject[], field: string): TargetProblem[] {
  const problems: TargetProblem[] = [];
  for (const o of objects) {
    const refusal = ctx.apis.ledger.get(ledgerKey(resource, resource.namespaced ? o.namespace : undefined, o.name))?.refusal;
    const where = `${resource.kind} ${resource.namespaced ? `${o.namespace}/` : ''}${o.name}`;
    if (refusal !== undefined) problems.push({ reason: 'TargetNotEnforced', message: `${field}: ${where} is not enforced: ${refusal}` });
  }
  return problems;
}

/** Objects of one kind a sharded target writes, and the CIDRs each holds (for its status). */
export interface ObjectGroup {
  resource: ResourceType;
  objects: readonly DesiredObject[];
  cidrs: (index: number) => number;
  /** what the enforcement point says about these objects in their status */
  refusal?: Refusal;
}

/**
 * The apply of a target whose deny rules add up, so that the list may be cut into several objects (Istio,
 * Cilium, Calico): cut within the target's maxCIDRs (beyond it the target is Degraded and keeps what it held),
 * then every group of objects written side by side, each group's stale objects deleted.
 */
export async function applyCut(
  ctx: TargetContext,
  target: { field: string; metricKind: string },
  maxCidrs: number,
  build: (shards: readonly Shard[]) => ObjectGroup[],
): Promise<TargetOutcome> {
  const { field } = target;
  const cut = shardList(ctx.list.all, maxCidrs, field);
  const groups = 'shards' in cut ? build(cut.shards) : [];
  const outcome: TargetOutcome = { kind: target.metricKind, objects: [], writes: 0, problems: 'problem' in cut ? [cut.problem] : [] };
  const selector = targetSelector(ctx.sub, field);
  const settled = await Promise.allSettled(groups.map((g) => syncObjects(ctx, g.resource, g.objects, { selector }, g.refusal)));
  // The first failure in the groups' order, not in time: the status says the same thing every time.
  const results = settled.map((r) => {
    if (r.status === 'rejected') throw r.reason;
    return r.value;
  });
  outcome.writes = results.reduce((n, r) => n + r.written + r.deleted, 0);
  for (const g of groups) if (g.refusal) outcome.problems.push(...refusalProblems(ctx, g.resource, g.objects, field));
  outcome.objects = groups.flatMap((g) => g.objects.map((o, i) => ({ kind: g.resource.kind, ...(o.namespace ? { namespace: o.namespace } : {}), name: o.name, cidrs: g.cidrs(i) })));
  return outcome;
}

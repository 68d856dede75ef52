// The subscription loop: an informer feeds a per-key work queue; each subscription syncs (pulls) when its spec
// changes, when `reconcile.fluxcd.io/requestedAt` gets a new value, when its schedule fires, when the long poll
// of a live subscription hears of new data (live.ts), or (after a failure) when its back-off ends; it is repaired (the last applied list applied again, no pull) when the drift watch sees one
// of its objects changed or deleted, with back-off while a target waits for the cluster, and once when this
// process starts. A repair never waits for the feed: while pulls fail it runs between them, and what brings
// a key here early (a drift) does not hasten the next pull. Status writes by the controller itself trigger
// nothing.
import { makeInformer, type Informer, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from '../common/logging.ts';
import { GROUP, PLURAL, VERSION, type BlocklistSubscription } from '../api/v1alpha1/blocklist-subscription.ts';
import { keyOf, type Apis } from './runtime/k8s.ts';
import type { ResourceType } from './runtime/resources.ts';
import { DriftWatch } from './runtime/drift.ts';
import type { ControllerMetrics } from './metrics.ts';
import { WorkQueue } from './runtime/queue.ts';
import { LiveWatches, liveCondition } from './live.ts';
import {
  ensureFinalizer,
  finalize,
  pendingRequest,
  readApiKey,
  repairSubscription,
  sameLiveCondition,
  syncSubscription,
  writeLiveCondition,
  type AppliedState,
  type ReconcileDeps,
} from './reconcile.ts';
import { TARGET_APIS, TARGET_KINDS } from './targets/index.ts';

const CONTESTED = TARGET_KINDS.flatMap((k) => k.contested ?? []);

interface ControllerOptions {
  apis: Apis;
  log: Logger;
  metrics: ControllerMetrics;
  clusterCidrs?: readonly string[];
  concurrency?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  instance?: string;
  /** watch one namespace only (default: all) */
  namespace?: string;
  /** long polls of live subscriptions held at once at most (default 1000) */
  maxLiveWatches?: number;
}

interface Seen {
  generation?: number;
  /** reconcile.fluxcd.io/requestedAt as last seen */
  requestedAt?: string;
}

export class SubscriptionController {
  private readonly informer: Informer<BlocklistSubscription> & ObjectCache<BlocklistSubscription>;
  private readonly queue: WorkQueue;
  private readonly deps: ReconcileDeps;
  private readonly seen = new Map<string, Seen>();
  /** keys that must pull on their next run (spec change, requestedAt, schedule, live news, failed attempt) */
  private readonly wanted = new Set<string>();
  /** keys whose objects drifted, with what happened: applied again on their next run */
  private readonly drifted = new Map<string, string>();
  /** when each key syncs next, as this process scheduled it (the status may hold an older time: see STATUS_REFRESH_MS) */
  private readonly nextSync = new Map<string, Date>();
  /** keys with a target waiting for the cluster, and how often it has been checked again since (armNext()) */
  private readonly targetChecks = new Map<string, number>();
  /** keys whose last pull failed: failures in a row, and when the next pull may go out (the queue's back-off) */
  private readonly pullRetries = new Map<string, { failures: number; at: number }>();
  /** keys whose Live condition is to be written (their long poll changed state) */
  private readonly liveDirty = new Set<string>();
  private readonly drift: DriftWatch;
  private readonly live: LiveWatches;
  private started = false;
  /** pulls run so far */
  syncs = 0;
  /** repairs run so far (start-up checks included) */
  repairs = 0;

  constructor(options: ControllerOptions) {
    const { apis, log, metrics } = options;
    this.live = new LiveWatches({
      log,
      metrics,
      maxWatches: options.maxLiveWatches ?? 1000,
      apiKey: (sub) => readApiKey(apis, sub),
      // The feed has new data: pull now, whatever a failed pull's back-off said (the feed answers again).
      changed: (key) => {
        if (this.current(key)) this.pullNow(key);
      },
      stateChanged: (key) => {
        const sub = this.current(key);
        if (sub) this.noteLive(key, sub);
      },
    });
    this.deps = {
      apis,
      log,
      metrics,
      clusterCidrs: options.clusterCidrs ?? [],
      applied: new Map<string, AppliedState>(),
      instance: options.instance ?? 'blockfeed-controller',
      liveCondition: (sub) => liveCondition(sub, this.live.state(keyOf(sub))),
    };
    this.drift = new DriftWatch({
      apis,
      log,
      onDrift: (key, what) => {
        if (!this.current(key)) return; // another process's, or gone
        log.info({ subscription: key, what }, 'drift: repairing');
        this.drifted.set(key, [this.drifted.get(key), what].filter(Boolean).join(', '));
        this.queue.add(key);
      },
    });
    // A kind is watched from the first object of it recorded: the controller's own, and others' that contest them.
    const watchKind = (resource: ResourceType) => {
      this.drift.watch(resource);
      for (const listing of CONTESTED) if (listing.resource.group === resource.group && listing.resource.plural === resource.plural) this.drift.watchContested(listing);
    };
    apis.ledger.onNewResource = watchKind;
    for (const resource of apis.ledger.knownResources()) watchKind(resource);
    this.queue = new WorkQueue({
      concurrency: options.concurrency ?? 4,
      backoffBaseMs: options.backoffBaseMs ?? 5000,
      backoffMaxMs: options.backoffMaxMs ?? 600_000,
      work: (key) => this.work(key),
      onError: (key, err) => log.error({ err, subscription: key }, 'reconcile failed'),
    });
    const ns = options.namespace;
    const path = ns ? `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}` : `/apis/${GROUP}/${VERSION}/${PLURAL}`;
    type List = { items: BlocklistSubscription[]; metadata: { resourceVersion: string } };
    this.informer = makeInformer<BlocklistSubscription>(apis.kubeConfig, path, async () =>
      ns
        ? ((await apis.custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: PLURAL })) as List)
        : ((await apis.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as List),
    );
    this.informer.on('add', (sub) => this.observe(sub, true));
    this.informer.on('update', (sub) => this.observe(sub, false));
    this.informer.on('delete', (sub) => {
      const key = keyOf(sub);
      this.live.forget(key, sub, { deleted: true });
      this.liveDirty.delete(key);
      this.seen.delete(key);
      this.wanted.delete(key);
      this.drifted.delete(key);
      this.nextSync.delete(key);
      this.targetChecks.delete(key);
      this.pullRetries.delete(key);
      this.queue.forget(key);
    });
    this.informer.on('error', (err: unknown) => {
      if (!this.started) return; // stop() aborted it
      log.warn({ err }, 'subscription watch failed; restarting');
      setTimeout(() => {
        if (this.started) this.informer.start().catch((e: unknown) => log.error({ err: e }, 'watch restart failed'));
      }, 2000).unref();
    });
  }

  async start(): Promise<void> {
    this.started = true;
    this.drift.watchInstalls(TARGET_APIS, (crd) => this.installed(crd));
    await this.informer.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.live.stop();
    this.queue.stop();
    this.deps.apis.ledger.onNewResource = undefined;
    await Promise.all([this.informer.stop(), this.drift.stop()]);
  }

  /** Resolves when no sync is queued or running. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** Asks for a sync of every known subscription now (used by the bench for a forced resync). */
  resyncAll(): void {
    for (const sub of this.informer.list()) this.pullNow(keyOf(sub));
  }

  /** Long polls of live subscriptions open now. */
  get liveWatches(): number {
    return this.live.size;
  }

  /** A pull asked for now (a spec change, requestedAt, live news): it does not wait for a failed pull's back-off. */
  private pullNow(key: string): void {
    this.wanted.add(key);
    this.pullRetries.delete(key);
    this.queue.add(key);
  }

  private observe(sub: BlocklistSubscription, added: boolean): void {
    const key = keyOf(sub);
    const before = this.seen.get(key);
    const requestedAt = pendingRequest(sub);
    const now: Seen = { generation: sub.metadata.generation, requestedAt };
    this.seen.set(key, now);
    this.live.update(key, sub);
    if (sub.metadata.deletionTimestamp) return this.queue.add(key);
    this.noteLive(key, sub);
    const specChanged = sub.status?.observedGeneration !== sub.metadata.generation && (added || before?.generation !== now.generation);
    // A value not handled yet (status.lastHandledReconcileAt) and not already seen by this process (its sync may run now).
    const requested = requestedAt !== undefined && requestedAt !== before?.requestedAt;
    if (specChanged || requested) return this.pullNow(key);
    // Never synced: pull (only on add: our own first writes come back as updates before the status does).
    if (added && !sub.status?.lastSyncTime) this.wanted.add(key);
    if (added) this.queue.add(key);
  }

  /** The subscription as the informer has it now (it may have changed while a run awaited something). */
  private current(key: string): BlocklistSubscription | undefined {
    return this.informer.get(key.split('/')[1]!, key.split('/')[0]);
  }

  /** Queues a write of the Live condition when the status does not say what the long poll's state is. */
  private noteLive(key: string, sub: BlocklistSubscription): void {
    const want = liveCondition(sub, this.live.state(key));
    if (sameLiveCondition(sub.status?.conditions?.find((c) => c.type === 'Live'), want)) return;
    this.liveDirty.add(key);
    this.queue.add(key);
  }

  private async work(key: string): Promise<boolean> {
    const ok = await this.run(key);
    // Whatever the run wrote, the Live condition is written if it still differs (runs write it too: Report).
    if (this.liveDirty.delete(key)) {
      const sub = this.current(key);
      if (sub && !sub.metadata.deletionTimestamp) await writeLiveCondition(this.deps, sub);
    }
    return ok;
  }

  private async run(key: string): Promise<boolean> {
    const sub = this.current(key);
    if (!sub) return true;
    if (sub.metadata.deletionTimestamp) {
      await finalize(this.deps, sub);
      return true;
    }
    await ensureFinalizer(this.deps, sub);
    // Suspended: no pulls and no repairs; what was applied stays as it is.
    if (sub.spec.suspend && !this.wanted.has(key)) return true;
    // A pull that failed goes out again when its back-off ends, not sooner for whatever else brings the key here.
    const retryAt = this.pullRetries.get(key)?.at ?? 0;
    if (!this.wanted.has(key) || retryAt > Date.now()) {
      if (!(await this.repairIfDue(key, sub))) return false;
    }
    const now = new Date();
    if (!this.wanted.has(key)) {
      // Sync when the schedule says (immediately if a due time passed while nobody led).
      const due = this.nextSync.get(key) ?? (sub.status?.nextSyncTime ? new Date(sub.status.nextSyncTime) : undefined);
      if (due && due > now && !sub.spec.suspend) {
        this.armNext(key, due);
        return true;
      }
      if (sub.spec.suspend) return true;
    } else if (retryAt > now.getTime()) {
      this.armNext(key, new Date(retryAt));
      return true;
    }
    this.wanted.delete(key);
    // A spec change that arrived during the repair above is in the informer's copy, not in `sub`.
    const latest = this.current(key);
    if (!latest || latest.metadata.deletionTimestamp) return true; // its own run follows
    this.syncs++;
    const result = await syncSubscription(this.deps, latest);
    this.noteTargets(key, result.targetsWaiting);
    if (!result.ok) {
      this.wanted.add(key);
      const failures = (this.pullRetries.get(key)?.failures ?? 0) + 1;
      const at = Date.now() + this.queue.backoffMs(failures);
      this.pullRetries.set(key, { failures, at });
      // The targets still hold the last applied list: what waited for this run (a drift, the start-up check)
      // is repaired now, not once the feed is back, from the status the failed sync left (the informer's copy
      // may not have it yet).
      if (!(await this.repairIfDue(key, { ...latest, status: result.status }))) return false;
      this.armNext(key, new Date(at));
      return true;
    }
    this.pullRetries.delete(key);
    if (result.nextSyncTime && !latest.spec.suspend) {
      this.nextSync.set(key, result.nextSyncTime);
      this.armNext(key, result.nextSyncTime);
    }
    return true;
  }

  /**
   * Makes the targets hold the last applied list again, without a pull, when this process has not checked them
   * yet (it just started, or just became leader), one of them drifted, or one waits for the cluster. Answers
   * false when the check failed (a new CRD's storage still initialising answers 429): the key then waits for the
   * work queue's back-off. A repair that finds no list it can trust asks for a pull.
   */
  private async repairIfDue(key: string, sub: BlocklistSubscription): Promise<boolean> {
    const drifted = this.drifted.get(key);
    const startUp = !this.deps.applied.has(sub.metadata.uid ?? key);
    if (drifted === undefined && !startUp && !this.targetChecks.has(key)) return true;
    this.drifted.delete(key);
    this.repairs++;
    const why = drifted ?? (startUp ? 'start-up check' : 'a target was waiting for the cluster');
    const repair = await repairSubscription(this.deps, sub, why, drifted !== undefined || startUp);
    if (repair.ok) this.noteTargets(key, repair.targetsWaiting);
    if (repair.needsPull) this.wanted.add(key);
    return repair.ok || repair.needsPull;
  }

  /**
   * An API some target uses was installed (or its CRD changed): every subscription with a target waiting for
   * the cluster is checked now, and its back-off starts again from the beginning, rather than waiting for a
   * check that may be ten minutes away.
   */
  private installed(crd: string): void {
    if (!this.targetChecks.size) return;
    this.deps.log.info({ crd, subscriptions: this.targetChecks.size }, 'an API targets use was installed: checking the waiting targets');
    for (const key of this.targetChecks.keys()) {
      this.targetChecks.set(key, 0);
      this.queue.add(key);
    }
  }

  private noteTargets(key: string, waiting: boolean): void {
    if (waiting) this.targetChecks.set(key, (this.targetChecks.get(key) ?? 0) + 1);
    else this.targetChecks.delete(key);
  }

  /**
   * Arms the key's next run for its due sync, or sooner while a target waits for the cluster (an enforcement
   * point not installed yet, an object it names not created yet, a name someone else holds): then the run is a
   * repair, the last list applied again without a pull, with the queue's back-off between checks (5 s doubling
   * to 10 min). An enforcement point's API appearing ends the wait at once (installed()).
   */
  private armNext(key: string, due: Date): void {
    const untilDue = Math.max(0, due.getTime() - Date.now());
    const checks = this.targetChecks.get(key);
    this.queue.addAfter(key, checks === undefined ? untilDue : Math.min(untilDue, this.queue.backoffMs(checks)));
  }
}


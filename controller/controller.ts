// The subscription loop: an informer feeds a per-key work queue; each subscription syncs when its spec
// changes, when `blockfeed.dev/sync-now` is set, when its schedule fires, or (after a failure) when its
// back-off ends. Status writes by the controller itself trigger nothing.
import { makeInformer, type Informer, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from '../common/logging.ts';
import { GROUP, PLURAL, VERSION, type BlocklistSubscription } from './api/v1alpha1.ts';
import { SYNC_NOW_ANNOTATION, type Apis } from './k8s.ts';
import type { ControllerMetrics } from './metrics.ts';
import { WorkQueue } from './queue.ts';
import { ensureFinalizer, finalize, syncSubscription, type AppliedState, type ReconcileDeps } from './reconcile.ts';

interface ControllerOptions {
  apis: Apis;
  log: Logger;
  metrics: ControllerMetrics;
  clusterCidrs?: readonly string[];
  concurrency?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  instance?: string;
  shardBudget?: number;
  /** watch one namespace only (default: all) */
  namespace?: string;
}

interface Seen {
  generation?: number;
  syncNow?: string;
}

export class SubscriptionController {
  private readonly informer: Informer<BlocklistSubscription> & ObjectCache<BlocklistSubscription>;
  private readonly queue: WorkQueue;
  private readonly deps: ReconcileDeps;
  private readonly seen = new Map<string, Seen>();
  /** keys that must pull on their next run (spec change, sync-now, schedule, failed attempt) */
  private readonly wanted = new Set<string>();
  private started = false;
  syncs = 0;

  constructor(options: ControllerOptions) {
    const { apis, log, metrics } = options;
    this.deps = {
      apis,
      log,
      metrics,
      clusterCidrs: options.clusterCidrs ?? [],
      applied: new Map<string, AppliedState>(),
      instance: options.instance ?? 'blockfeed-controller',
      shardBudget: options.shardBudget,
    };
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
      this.seen.delete(key);
      this.wanted.delete(key);
      this.queue.forget(key);
    });
    this.informer.on('error', (err: unknown) => {
      log.warn({ err }, 'subscription watch failed; restarting');
      setTimeout(() => {
        if (this.started) this.informer.start().catch((e: unknown) => log.error({ err: e }, 'watch restart failed'));
      }, 2000).unref();
    });
  }

  async start(): Promise<void> {
    this.started = true;
    await this.informer.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.queue.stop();
    await this.informer.stop();
  }

  /** Resolves when no sync is queued or running. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** Asks for a sync of every known subscription now (used by the bench for a forced resync). */
  resyncAll(): void {
    for (const sub of this.informer.list()) {
      this.wanted.add(keyOf(sub));
      this.queue.add(keyOf(sub));
    }
  }

  private observe(sub: BlocklistSubscription, added: boolean): void {
    const key = keyOf(sub);
    const before = this.seen.get(key);
    const now: Seen = { generation: sub.metadata.generation, syncNow: sub.metadata.annotations?.[SYNC_NOW_ANNOTATION] };
    this.seen.set(key, now);
    if (sub.metadata.deletionTimestamp) return this.queue.add(key);
    const specChanged = sub.status?.observedGeneration !== sub.metadata.generation && (added || before?.generation !== now.generation);
    const syncNow = now.syncNow !== undefined && now.syncNow !== before?.syncNow;
    if (specChanged || syncNow || !sub.status?.lastSyncTime) this.wanted.add(key);
    if (added || specChanged || syncNow) this.queue.add(key);
  }

  private async work(key: string): Promise<boolean> {
    const sub = this.informer.get(key.split('/')[1]!, key.split('/')[0]);
    if (!sub) return true;
    if (sub.metadata.deletionTimestamp) {
      await finalize(this.deps, sub);
      return true;
    }
    await ensureFinalizer(this.deps, sub);
    const now = new Date();
    if (!this.wanted.has(key)) {
      // Not asked for: sync when the schedule says (immediately if a due time passed while nobody led).
      const due = sub.status?.nextSyncTime ? new Date(sub.status.nextSyncTime) : undefined;
      if (due && due > now && !sub.spec.suspend) {
        this.queue.addAfter(key, due.getTime() - now.getTime());
        return true;
      }
      if (sub.spec.suspend) return true;
    }
    this.wanted.delete(key);
    this.syncs++;
    const result = await syncSubscription(this.deps, sub);
    if (!result.ok) {
      this.wanted.add(key);
      return false;
    }
    if (result.nextSyncTime && !sub.spec.suspend) {
      this.queue.addAfter(key, Math.max(0, result.nextSyncTime.getTime() - Date.now()));
    }
    return true;
  }
}

function keyOf(sub: BlocklistSubscription): string {
  return `${sub.metadata.namespace}/${sub.metadata.name}`;
}

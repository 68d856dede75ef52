// Drift: the objects the controller writes are watched, as controller-runtime's Owns() watches a Go operator's,
// so that a deletion or an edit by anyone else is repaired within seconds rather than at the next scheduled
// sync. One watch per kind of object, cluster-wide, on the managed-by label, metadata only (list objects can be
// megabytes; their resourceVersion says enough). An event for an object the ledger knows, at a version other
// than the one this process left it at, or its deletion, asks for a repair of the subscription that owns it:
// the last applied list applied again, without pulling the feed (reconcile.ts).
// The same kind of watch on others' objects that contest the place of ours (watchContested(): Envoy Gateway
// enforces one SecurityPolicy per target) asks for a check of the subscriptions with objects beside them; on
// CustomResourceDefinitions (watchInstalls()) it tells when an enforcement point's API appears, so that a target
// waiting for it is applied at once rather than at its next check.
import { ListWatch, Watch, type KubeConfig, type KubernetesObject, type RequestContext } from '@kubernetes/client-node';
import type { Logger } from '../../common/logging.ts';
import { METADATA_ONLY, MANAGED_SELECTOR, OBJECT_METADATA_ONLY, apiRequest, type Apis, type ObjectMeta } from './k8s.ts';
import { collectionPath, type ResourceType } from './resources.ts';
import { ledgerKey } from './ledger.ts';
import type { Listing } from './objects.ts';

interface DriftOptions {
  apis: Apis;
  log: Logger;
  /** the subscription ("namespace/name") whose object drifted, and what happened to it */
  onDrift: (subscription: string, what: string) => void;
}

/** The kind that installs an enforcement point's API (watchInstalls()). */
const CRD: ResourceType = { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', namespaced: false };

/** Our own writes also come back as events, sometimes before the write's answer: judged after this delay. */
const SETTLE_MS = 300;
const RETRY_MIN_MS = 2000;
const RETRY_MAX_MS = 300_000;

type MetaObject = KubernetesObject & { metadata: ObjectMeta };
type Handler = (obj: MetaObject) => void;

const kindId = (r: ResourceType) => `${r.group}/${r.version}/${r.plural}`;

/** A Watch whose requests ask for metadata only (PartialObjectMetadata). */
function metadataWatch(kc: KubeConfig): Watch {
  const config = {
    getCurrentCluster: () => kc.getCurrentCluster(),
    applySecurityAuthentication: async (ctx: RequestContext) => {
      await kc.applySecurityAuthentication(ctx);
      ctx.setHeaderParam('Accept', OBJECT_METADATA_ONLY);
    },
  };
  // Watch only calls these two methods of its configuration.
  return new Watch(config as unknown as KubeConfig);
}

export class DriftWatch {
  private readonly informers = new Map<string, ListWatch<MetaObject>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  private readonly o: DriftOptions;

  constructor(options: DriftOptions) {
    this.o = options;
  }

  /**
   * Starts watching a kind of object; once per kind (the ledger asks when it records the first one). The watch's
   * first list can already hold a newer version than the one recorded (an enforcement point that writes its
   * status at once): what it lists is judged like a change.
   */
  watch(resource: ResourceType): void {
    const changed = (obj: MetaObject) => this.later(() => this.seen(resource, obj, 'changed'));
    this.start(kindId(resource), resource, MANAGED_SELECTOR, {
      add: changed,
      update: changed,
      delete: (obj) => this.seen(resource, obj, 'deleted'),
    });
  }

  /**
   * Starts watching CustomResourceDefinitions (metadata only, every one: a field selector takes one name) and
   * calls `onInstalled` with the name (`<plural>.<group>`) of one of `names` that is created or changes. A
   * CRD is served once its names are accepted and changes again when it is Established, so the last event
   * of an install comes after its API is served.
   */
  watchInstalls(names: ReadonlySet<string>, onInstalled: (crd: string) => void): void {
    const heard = (obj: MetaObject) => {
      if (names.has(obj.metadata.name)) onInstalled(obj.metadata.name);
    };
    this.start(kindId(CRD), CRD, undefined, { add: heard, update: heard });
  }

  /**
   * Starts watching others' objects that contest the place of ours at the enforcement point (TargetKind.contested);
   * once per listing. One created, changed or deleted asks for a check (onDrift) of every subscription with an
   * object of the same kind in its namespace.
   */
  watchContested({ resource, selector }: Listing): void {
    const on = (what: string) => (obj: MetaObject) => this.later(() => this.contested(resource, obj, what));
    this.start(`${kindId(resource)}?${selector}`, resource, selector, { add: on('created'), update: on('changed'), delete: on('deleted') });
  }

  /** One metadata-only informer per id, restarted with back-off after errors. */
  private start(id: string, resource: ResourceType, selector: string | undefined, on: { add?: Handler; update?: Handler; delete?: Handler }): void {
    if (this.stopped || this.informers.has(id)) return;
    const { apis, log } = this.o;
    const path = collectionPath(resource);
    const query = selector === undefined ? '' : `?labelSelector=${encodeURIComponent(selector)}`;
    const list = async () => {
      const text = await apiRequest(apis, 'GET', `${path}${query}`, { accept: METADATA_ONLY });
      const body = JSON.parse(text) as { items?: MetaObject[] | null; metadata: { resourceVersion: string } };
      return { items: body.items ?? [], metadata: body.metadata };
    };
    const informer = new ListWatch<MetaObject>(path, metadataWatch(apis.kubeConfig), list, false, selector);
    for (const verb of ['add', 'update', 'delete'] as const) {
      const handler = on[verb];
      if (handler) informer.on(verb, handler);
    }
    let delay = RETRY_MIN_MS;
    let lastError = 0;
    informer.on('error', (err: unknown) => {
      if (this.stopped) return; // stop() aborted it
      // Errors in a row back off (a kind whose CRD was removed answers 404 until it is back).
      delay = Date.now() - lastError < RETRY_MAX_MS ? Math.min(delay * 2, RETRY_MAX_MS) : RETRY_MIN_MS;
      lastError = Date.now();
      log.warn({ err, resource: `${resource.kind}.${resource.group}`, retryInMs: delay }, 'watch failed; restarting');
      this.later(() => void informer.start().catch((e: unknown) => log.warn({ err: e }, 'watch restart failed')), delay);
    });
    this.informers.set(id, informer);
    informer.start().catch((err: unknown) => log.warn({ err }, 'watch failed to start'));
    log.debug({ resource: `${resource.kind}.${resource.group}` }, 'watching');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.informers.clear();
  }

  private later(fn: () => void, ms = SETTLE_MS): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.stopped) fn();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  private contested(resource: ResourceType, obj: MetaObject, what: string): void {
    const { namespace, name } = obj.metadata;
    for (const owner of this.o.apis.ledger.ownersIn(resource, namespace)) {
      this.o.onDrift(owner, `${resource.kind} ${namespace ? `${namespace}/` : ''}${name} (not blockfeed's) ${what}`);
    }
  }

  private seen(resource: ResourceType, obj: MetaObject, what: 'changed' | 'deleted'): void {
    const { namespace, name, resourceVersion } = obj.metadata;
    const key = ledgerKey(resource, namespace, name);
    const entry = this.o.apis.ledger.get(key);
    // Not ours (another controller's process, or already forgotten: we deleted it), or the version we wrote.
    if (!entry || (what === 'changed' && entry.resourceVersion === resourceVersion)) return;
    if (what === 'deleted') this.o.apis.ledger.forget(key);
    this.o.onDrift(entry.owner, `${resource.kind} ${namespace ? `${namespace}/` : ''}${name} ${what}`);
  }
}

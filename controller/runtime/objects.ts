// The one way the controller writes the objects a subscription owns: a pure desired state (the objects a target
// or the record of the applied list should hold) is made true in the API, writing only what differs and
// deleting what is no longer wanted.
//
// Every object carries a content-hash annotation over what the controller sets. One metadata-only list shows
// which objects exist, at which version and with which hash: an object whose hash matches and that this
// process left at that very version (the ledger) is not read at all; one whose hash matches at another
// version (a restart, or someone edited it) is read and compared for real; everything else is written.
// Server-side apply was measured as the alternative and kept out: docs/controller.md "Writing objects".
import type { V1OwnerReference } from '@kubernetes/client-node';
import type { BlocklistSubscription } from '../../api/v1alpha1/blocklist-subscription.ts';
import type { Logger } from '../../common/logging.ts';
import {
  CONTENT_HASH_ANNOTATION,
  MANAGED_SELECTOR,
  SUBSCRIPTION_ANNOTATION,
  apiRequest,
  contentHash,
  deleteObject,
  getObject,
  isConflict,
  isNotFound,
  keyOf,
  listMeta,
  mapLimit,
  ownedLabels,
  ownedSelector,
  ownerReference,
  sameJson,
  sameStringMap,
  sendJson,
  type Apis,
  type ObjectMeta,
} from './k8s.ts';
import { ledgerKey } from './ledger.ts';
import { apiVersionOf, collectionPath, objectPath, type ResourceType } from './resources.ts';

/**
 * The label naming which writer of a subscription wrote an object: a target (its spec field, e.g.
 * ciliumCIDRGroup) or the record of the applied list.
 */
export const TARGET_LABEL = 'blockfeed.dev/target';

/** The subscription whose objects are written, and how to reach the API. */
export interface WriteContext {
  apis: Apis;
  sub: BlocklistSubscription;
  log: Logger;
  /** the subscription's objects, listed ahead (prefetchLists()) */
  prefetched?: Prefetched;
}

/** A metadata-only list of one kind of object by label selector (lookup()). */
export interface Listing {
  resource: ResourceType;
  selector: string;
}

/** Objects blockfeed did not write (no subscription's, in no process): a target's `contested` objects. */
export const UNMANAGED_SELECTOR = MANAGED_SELECTOR.replace('=', '!=');

/** An object as its writer (a target, the record) wants it. */
export interface DesiredObject {
  namespace?: string;
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  ownerReferences?: V1OwnerReference[];
  /** the top-level fields besides apiVersion, kind and metadata, e.g. { spec } or { data } */
  content: Record<string, unknown>;
}

/** Metadata-only lists started ahead of need (prefetchLists()), by listingKey(). */
export type Prefetched = Map<string, Promise<ObjectMeta[]>>;

/** Which existing objects a call owns: these labels, in one namespace or everywhere. */
export interface OwnedScope {
  selector: string;
  namespace?: string;
}

/**
 * For an enforcement point that reports on the objects it is given, in their status: why it does not enforce
 * one at its current generation, or undefined (it does, or has not said yet). Pure. syncObjects reads it
 * whenever it reads a whole object (an enforcement point's status write changes the object's resourceVersion,
 * which the drift watch reports), and the ledger keeps it until the object is read again.
 */
export type Refusal = (object: Record<string, unknown>) => string | undefined;

export interface SyncResult {
  /** objects created or replaced */
  written: number;
  /** objects of the scope deleted because no longer desired */
  deleted: number;
}

/** The enforcement point's API is not served (404 on its collection): its CRD is not installed. */
export class ResourceNotServed extends Error {
  readonly resource: ResourceType;
  constructor(resource: ResourceType, cause: unknown) {
    super(`the ${resource.kind} API (${apiVersionOf(resource)}) is not served by this cluster: its CRD is not installed`, { cause });
    this.name = 'ResourceNotServed';
    this.resource = resource;
  }
}

/** An object the target would write exists and belongs to someone else: it is left alone. */
export class ObjectTaken extends Error {
  constructor(resource: ResourceType, namespace: string | undefined, name: string, claimedBy: string | undefined) {
    const what = `${resource.kind} ${namespace ? `${namespace}/` : ''}${name}`;
    super(`${what} exists and ${claimedBy ? `belongs to BlocklistSubscription ${claimedBy}` : 'is not managed by blockfeed'}: it is left as it is`);
    this.name = 'ObjectTaken';
  }
}

/** Labels and annotations every object of `target` of `sub` carries. */
export function ownedMetadata(sub: BlocklistSubscription, target: string): Pick<DesiredObject, 'labels' | 'annotations'> {
  return {
    labels: { ...ownedLabels(sub), [TARGET_LABEL]: target },
    annotations: { [SUBSCRIPTION_ANNOTATION]: keyOf(sub) },
  };
}

/** The selector of every object `target` of `sub` wrote. */
export function targetSelector(sub: BlocklistSubscription, target: string): string {
  return `${ownedSelector(sub)},${TARGET_LABEL}=${target}`;
}

/**
 * Owner references for an object in `namespace`: only an object in the subscription's own namespace can be
 * owned by it (garbage collection then removes it); others, and cluster-scoped objects, rely on the finalizer.
 */
export function ownerReferencesIn(sub: BlocklistSubscription, namespace: string | undefined): V1OwnerReference[] | undefined {
  return namespace === sub.metadata.namespace ? [ownerReference(sub)] : undefined;
}

// Content objects are often shared (one NetworkPolicy spec for every namespace): serialised once.
const serialised = new WeakMap<object, string>();
function jsonOf(content: Record<string, unknown>): string {
  let json = serialised.get(content);
  if (json === undefined) {
    json = JSON.stringify(content);
    serialised.set(content, json);
  }
  return json;
}

const isStringMap = (v: unknown): v is Record<string, string> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');

/** Whether an object read from the API holds exactly the desired content and at least the desired metadata. */
function holdsDesired(current: Record<string, unknown> & { metadata?: ObjectMeta }, want: DesiredObject, annotations: Record<string, string>): boolean {
  for (const [field, value] of Object.entries(want.content)) {
    const have = current[field];
    // String maps (ConfigMap data) are compared without serialising megabytes.
    if (isStringMap(value) ? !(isStringMap(have) && sameStringMap(have, value)) : !sameJson(have, value)) return false;
  }
  const meta = current.metadata ?? { name: want.name };
  const includes = (have: Record<string, string> | undefined, need: Record<string, string>) => Object.entries(need).every(([k, v]) => have?.[k] === v);
  return includes(meta.labels, want.labels) && includes(meta.annotations, annotations) && sameJson(meta.ownerReferences ?? [], want.ownerReferences ?? []);
}

const listingKey = (r: ResourceType, selector: string) => `${r.group}/${r.version}/${r.plural}?${selector}`;

async function listScope(ctx: WriteContext, resource: ResourceType, scope: OwnedScope): Promise<ObjectMeta[]> {
  try {
    return await listMeta(ctx.apis, resource, scope.selector, { namespace: scope.namespace });
  } catch (err) {
    if (isNotFound(err)) throw new ResourceNotServed(resource, err);
    throw err;
  }
}

/**
 * Starts, at once, the lists applying will need, to be answered before anyone asks: every object of the
 * subscription of the `owned` kinds, and the targets' lookups. A sync starts them while the feed is pulled, so
 * that applying waits for no list round trip of its own.
 */
export function prefetchLists(ctx: WriteContext, owned: readonly ResourceType[], lookups: readonly Listing[]): Prefetched {
  const prefetched: Prefetched = new Map();
  for (const { resource, selector } of [...owned.map((resource) => ({ resource, selector: ownedSelector(ctx.sub) })), ...lookups]) {
    const key = listingKey(resource, selector);
    if (prefetched.has(key)) continue;
    const listing = listScope(ctx, resource, { selector });
    listing.catch(() => undefined); // handled by whoever awaits it; unused when the pull fails
    prefetched.set(key, listing);
  }
  return prefetched;
}

/** The objects of a kind matching a label selector (metadata only): the prefetched answer when there is one. */
export function lookup(ctx: WriteContext, { resource, selector }: Listing): Promise<ObjectMeta[]> {
  return ctx.prefetched?.get(listingKey(resource, selector)) ?? listScope(ctx, resource, { selector });
}

/** The whole objects of a listing in one namespace (everywhere without one): for their status, which metadata lacks. */
export async function listWhole<T>(ctx: WriteContext, { resource, selector }: Listing, namespace?: string): Promise<T[]> {
  const text = await apiRequest(ctx.apis, 'GET', `${collectionPath(resource, namespace)}?labelSelector=${encodeURIComponent(selector)}`);
  return (JSON.parse(text) as { items?: T[] | null }).items ?? [];
}

/** Whether an object is in a scope: our selectors are `key=value` and `key` terms, joined by commas. */
function inScope(m: ObjectMeta, scope: OwnedScope): boolean {
  if (scope.namespace !== undefined && m.namespace !== scope.namespace) return false;
  return scope.selector.split(',').every((term) => {
    const eq = term.indexOf('=');
    return eq === -1 ? m.labels?.[term] !== undefined : m.labels?.[term.slice(0, eq)] === term.slice(eq + 1);
  });
}

async function listOwned(ctx: WriteContext, resource: ResourceType, scope: OwnedScope): Promise<ObjectMeta[]> {
  const prefetched = ctx.prefetched?.get(listingKey(resource, ownedSelector(ctx.sub)));
  return prefetched ? (await prefetched).filter((m) => inScope(m, scope)) : listScope(ctx, resource, scope);
}

/**
 * Makes `desired` true for one kind of object and deletes the objects of `scope` that are not desired.
 * Objects are independent, so they are written side by side. Throws ResourceNotServed when the kind is not
 * served at all.
 */
export async function syncObjects(
  ctx: WriteContext,
  resource: ResourceType,
  desiredState: readonly DesiredObject[] | (() => readonly DesiredObject[] | Promise<readonly DesiredObject[]>),
  scope: OwnedScope,
  refusal?: Refusal,
): Promise<SyncResult> {
  const { apis, sub } = ctx;
  const owner = keyOf(sub);
  // The list request goes out first; a desired state given as a function is computed while it is answered.
  const listing = listOwned(ctx, resource, scope);
  listing.catch(() => undefined); // awaited below: a failure is not lost, only not reported twice
  const desired = typeof desiredState === 'function' ? await desiredState() : desiredState;
  const existing = await listing;
  const listed = new Map(existing.map((m) => [`${m.namespace ?? ''}/${m.name}`, m]));
  const prefix = `{"apiVersion":${JSON.stringify(apiVersionOf(resource))},"kind":${JSON.stringify(resource.kind)},"metadata":`;

  const writes = await mapLimit(desired, 4, async (want): Promise<number> => {
    const namespace = resource.namespaced ? want.namespace : undefined;
    const contentJson = jsonOf(want.content);
    const hash = contentHash([contentJson, want.labels, want.annotations, want.ownerReferences]);
    const annotations = { ...want.annotations, [CONTENT_HASH_ANNOTATION]: hash };
    const key = ledgerKey(resource, namespace, want.name);
    const meta = listed.get(`${namespace ?? ''}/${want.name}`);
    let resourceVersion = meta?.resourceVersion;
    if (meta && meta.annotations?.[CONTENT_HASH_ANNOTATION] === hash) {
      if (apis.ledger.holds(key, resourceVersion)) return 0;
      // Our hash at a version this process has not seen (a restart, or an edit): compare for real.
      const current = await getObject<Record<string, unknown> & { metadata?: ObjectMeta }>(apis, resource, namespace, want.name);
      if (current && holdsDesired(current, want, annotations)) {
        apis.ledger.record(resource, namespace, want.name, current.metadata!.resourceVersion!, owner, refusal?.(current));
        return 0;
      }
      resourceVersion = current?.metadata?.resourceVersion;
    }
    const metadata = {
      name: want.name,
      ...(namespace ? { namespace } : {}),
      labels: want.labels,
      annotations,
      ...(want.ownerReferences ? { ownerReferences: want.ownerReferences } : {}),
      ...(resourceVersion ? { resourceVersion } : {}),
    };
    // The content is spliced in as text: serialised once, however many objects share it.
    const json = `${prefix}${JSON.stringify(metadata)},${contentJson.slice(1)}`;
    let answer: { resourceVersion?: string };
    if (resourceVersion) answer = await sendJson(apis, 'PUT', objectPath(resource, namespace, want.name), json);
    else {
      try {
        answer = await sendJson(apis, 'POST', collectionPath(resource, namespace), json);
      } catch (err) {
        if (!isConflict(err)) throw err;
        // It exists but was not listed as ours: taken back when it says it is this subscription's (someone
        // removed its labels), never when it is anyone else's.
        const current = await getObject<{ metadata?: ObjectMeta }>(apis, resource, namespace, want.name);
        const claimedBy = current?.metadata?.annotations?.[SUBSCRIPTION_ANNOTATION];
        if (claimedBy !== owner) throw new ObjectTaken(resource, namespace, want.name, claimedBy);
        const taken = { ...metadata, resourceVersion: current?.metadata?.resourceVersion };
        answer = await sendJson(apis, 'PUT', objectPath(resource, namespace, want.name), `${prefix}${JSON.stringify(taken)},${contentJson.slice(1)}`);
      }
    }
    // A refusal outlives the write: what made the enforcement point refuse the object (another policy, say) is
    // likely still there, and its next status write says whether it is.
    if (answer.resourceVersion) apis.ledger.record(resource, namespace, want.name, answer.resourceVersion, owner, apis.ledger.get(key)?.refusal);
    apis.writes.count(resource.kind);
    return 1;
  });

  const wanted = new Set(desired.map((d) => `${resource.namespaced ? (d.namespace ?? '') : ''}/${d.name}`));
  let deleted = 0;
  for (const m of existing) {
    if (wanted.has(`${m.namespace ?? ''}/${m.name}`)) continue;
    deleted += await removeObject(ctx, resource, m);
  }
  return { written: writes.reduce((a, b) => a + b, 0), deleted };
}

async function removeObject(ctx: WriteContext, resource: ResourceType, m: ObjectMeta): Promise<number> {
  ctx.apis.ledger.forget(ledgerKey(resource, m.namespace, m.name));
  if (!(await deleteObject(ctx.apis, resource, m.namespace, m.name))) return 0;
  ctx.apis.writes.count(resource.kind);
  return 1;
}

/** Deletes every object of these kinds in `scope` (clean-up); a kind that is not served holds nothing. */
export async function deleteOwned(ctx: WriteContext, resources: readonly ResourceType[], scope: OwnedScope): Promise<number> {
  let deleted = 0;
  for (const resource of resources) {
    let existing: ObjectMeta[];
    try {
      existing = await listOwned(ctx, resource, scope);
    } catch (err) {
      if (err instanceof ResourceNotServed) continue;
      throw err;
    }
    for (const m of existing) deleted += await removeObject(ctx, resource, m);
  }
  return deleted;
}

// The Kubernetes API clients the controller uses, and small helpers shared by the targets. Every write goes
// through `writes` so tests and the bench can prove that an unchanged list writes nothing.
import { createHash } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  NetworkingV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1LabelSelector,
  type V1OwnerReference,
} from '@kubernetes/client-node';
import { API_VERSION, KIND, type BlocklistSubscription } from './api/v1alpha1.ts';
import { Ledger } from './ledger.ts';

export interface Apis {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  networking: NetworkingV1Api;
  custom: CustomObjectsApi;
  coordination: CoordinationV1Api;
  /** counts create/replace/patch/delete calls by the targets and status */
  writes: WriteCounter;
  /** what this process wrote or verified, object by object (see ledger.ts) */
  ledger: Ledger;
  /** kept-alive connections for apiRequest(), one per TLS configuration */
  agents: Map<string, HttpAgent>;
  /** apiRequest()'s resolved credentials, refreshed every minute */
  connection?: Connection;
}

export class WriteCounter {
  total = 0;
  byKind = new Map<string, number>();
  count(kind: string): void {
    this.total++;
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
  }
}

/**
 * client-node 2.x builds a new undici Agent for every request, so every API call pays a TLS handshake and
 * certificate parsing — most of a sync's time against a real apiserver. Reuse one dispatcher per distinct
 * TLS configuration (a rotated certificate gets a new one).
 */
function reuseConnections(kubeConfig: KubeConfig): void {
  const target = kubeConfig as unknown as { createDispatcher: (cluster: unknown, options: Record<string, unknown>) => unknown };
  const original = target.createDispatcher.bind(kubeConfig);
  const cache = new Map<string, unknown>();
  target.createDispatcher = (cluster, options) => {
    const key = createHash('sha256').update(JSON.stringify([cluster, options])).digest('hex');
    let dispatcher = cache.get(key);
    if (dispatcher === undefined) {
      dispatcher = original(cluster, options);
      cache.set(key, dispatcher);
    }
    return dispatcher;
  };
}

export function makeApis(kubeConfig: KubeConfig): Apis {
  reuseConnections(kubeConfig);
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(CoreV1Api),
    networking: kubeConfig.makeApiClient(NetworkingV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
    writes: new WriteCounter(),
    ledger: new Ledger(),
    agents: new Map(),
  };
}

/** The annotation holding a hash of everything the controller sets on a large object (data, spec, metadata). */
export const CONTENT_HASH_ANNOTATION = 'blockfeed.dev/content-hash';

export function contentHash(parts: readonly unknown[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(typeof part === 'string' ? part : JSON.stringify(part ?? null)).update('\0');
  return hash.digest('hex').slice(0, 32);
}

/** An apiserver answer other than 2xx from apiRequest(), shaped like client-node's errors for statusCode(). */
class ApiRequestError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = 'ApiRequestError';
    this.code = code;
  }
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

const MAX_RETRIES_429 = 5;

/**
 * What requests to the apiserver need, resolved from the kubeconfig at most once a minute: reading the
 * certificate files (and the service-account token) for every request costs more than many requests do, and a
 * minute is soon enough to pick up a rotated credential.
 */
interface Connection {
  server: string;
  tls: boolean;
  agent: HttpAgent;
  headers: Record<string, string>;
  until: number;
}
const CONNECTION_TTL_MS = 60_000;

async function connection(apis: Apis): Promise<Connection> {
  const cached = apis.connection;
  if (cached && cached.until > Date.now()) return cached;
  const kc = apis.kubeConfig;
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig names no current cluster');
  const o: RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(o);
  const tls = new URL(server).protocol === 'https:';
  const key = createHash('sha256').update(JSON.stringify([server, o.ca, o.cert, o.key, o.rejectUnauthorized, o.servername])).digest('hex');
  let agent = apis.agents.get(key);
  if (!agent) {
    agent = tls ? new HttpsAgent({ keepAlive: true, ca: o.ca, cert: o.cert, key: o.key, rejectUnauthorized: o.rejectUnauthorized, servername: o.servername }) : new HttpAgent({ keepAlive: true });
    apis.agents.set(key, agent);
  }
  apis.connection = { server, tls, agent, headers: { ...(o.headers as Record<string, string>) }, until: Date.now() + CONNECTION_TTL_MS };
  return apis.connection;
}

/**
 * One request to the apiserver with the body already serialised, answering the body text. client-node's typed
 * ObjectSerializer walks every field of the object on the way out and of the answer on the way back, which for
 * a list of tens of thousands of CIDRs costs more than the request itself; here the JSON is built once, and
 * every resource (core, built-in groups, third-party CRDs) is addressed the same way.
 */
export async function apiRequest(
  apis: Apis,
  method: Method,
  path: string,
  options: { json?: string; accept?: string; contentType?: string } = {},
): Promise<string> {
  const { server, tls, agent, headers: auth } = await connection(apis);
  const url = new URL(path, server);
  const headers: Record<string, string | number> = { ...auth, accept: options.accept ?? 'application/json' };
  if (options.json !== undefined) {
    headers['content-type'] = options.contentType ?? 'application/json';
    headers['content-length'] = Buffer.byteLength(options.json);
  }
  const requestOptions: RequestOptions = { method, headers, agent };
  const send = () =>
    new Promise<{ status: number; text: string; retryAfter?: string }>((resolve, reject) => {
      const req = (tls ? httpsRequest : httpRequest)(url, requestOptions, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), retryAfter: res.headers['retry-after'] }));
        res.once('error', reject);
      });
      req.once('error', reject);
      req.end(options.json);
    });
  let body = await send();
  // 429 is the apiserver asking to come back (priority and fairness, or a resource's storage still
  // initialising, as right after its CRD is installed): retried after Retry-After, as client-go does.
  for (let attempt = 1; body.status === 429 && attempt <= MAX_RETRIES_429; attempt++) {
    await sleep(Math.min(Number(body.retryAfter) || 1, 5) * 1000);
    body = await send();
  }
  if (body.status < 200 || body.status > 299) {
    let message = body.text.slice(0, 500);
    try {
      message = (JSON.parse(body.text) as { message?: string }).message ?? message;
    } catch {
      // not a Status object: keep the text
    }
    throw new ApiRequestError(body.status, `${method} ${url.pathname}: HTTP ${body.status}: ${message}`);
  }
  return body.text;
}

/** Creates (POST to the collection) or replaces (PUT to the object) an object given as JSON; answers its new resourceVersion. */
export async function sendJson(apis: Apis, method: 'POST' | 'PUT', path: string, json: string): Promise<{ resourceVersion?: string }> {
  // Only the metadata is needed: the rest would echo what was sent, which the apiserver would encode and this
  // process parse again, a megabyte per large object.
  const text = await apiRequest(apis, method, path, { json, accept: OBJECT_METADATA_ONLY });
  return { resourceVersion: (JSON.parse(text) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion };
}

/** Closes the kept-alive connections of apiRequest(). */
export function closeAgents(apis: Apis): void {
  for (const agent of apis.agents.values()) agent.destroy();
  apis.agents.clear();
  apis.connection = undefined;
}

/** A kind of object the controller writes, as the API addresses it. */
export interface ResourceType {
  /** API group; '' for the core group */
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export const apiVersionOf = (r: ResourceType) => (r.group ? `${r.group}/${r.version}` : r.version);

/** The collection path: in one namespace, or across all namespaces (and for cluster-scoped kinds) without one. */
export function collectionPath(r: ResourceType, namespace?: string): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return r.namespaced && namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${r.plural}` : `${base}/${r.plural}`;
}

export function objectPath(r: ResourceType, namespace: string | undefined, name: string): string {
  return `${collectionPath(r, namespace)}/${encodeURIComponent(name)}`;
}

/** Object metadata as the controller reads it (lists answer only this: see METADATA_ONLY). */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  resourceVersion?: string;
  generation?: number;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: V1OwnerReference[];
}

/**
 * Lists answer with metadata only (PartialObjectMetadataList): enough to find what exists and what to delete,
 * without downloading every large list object again.
 */
export const METADATA_ONLY = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

/** The same for one object: a watch event, or the answer to a write instead of the whole object echoed back. */
export const OBJECT_METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

/**
 * The objects of a kind matching a label selector (metadata only); `namespace` narrows to one namespace, `limit`
 * answers at most that many.
 */
export async function listMeta(apis: Apis, r: ResourceType, labelSelector: string, { namespace, limit }: { namespace?: string; limit?: number } = {}): Promise<ObjectMeta[]> {
  const query = `labelSelector=${encodeURIComponent(labelSelector)}${limit ? `&limit=${limit}` : ''}`;
  const text = await apiRequest(apis, 'GET', `${collectionPath(r, namespace)}?${query}`, { accept: METADATA_ONLY });
  // items is null in an empty metadata-only list
  return ((JSON.parse(text) as { items?: { metadata: ObjectMeta }[] | null }).items ?? []).map((i) => i.metadata);
}

/** One whole object as JSON, or undefined when it does not exist. */
export async function getObject<T = Record<string, unknown>>(apis: Apis, r: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
  return readOptional(async () => JSON.parse(await apiRequest(apis, 'GET', objectPath(r, namespace, name))) as T);
}

/** Deletes an object; answers false when it was already gone. */
export async function deleteObject(apis: Apis, r: ResourceType, namespace: string | undefined, name: string): Promise<boolean> {
  try {
    await apiRequest(apis, 'DELETE', objectPath(r, namespace, name));
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

function statusCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}
export const isNotFound = (err: unknown) => statusCode(err) === 404;
export const isConflict = (err: unknown) => statusCode(err) === 409;

/** Reads an object, answering undefined for 404. */
export async function readOptional<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

const MANAGED_BY = 'app.kubernetes.io/managed-by';
const MANAGER = 'blockfeed-controller';
/** Every object the controller owns carries this label. */
export const MANAGED_SELECTOR = `${MANAGED_BY}=${MANAGER}`;
export const SUBSCRIPTION_LABEL = 'blockfeed.dev/subscription';
export const SUBSCRIPTION_ANNOTATION = 'blockfeed.dev/subscription';
export const FINALIZER = 'blockfeed.dev/cleanup';
export const SYNC_NOW_ANNOTATION = 'blockfeed.dev/sync-now';

/** A short stable id of a subscription, usable as a label value and in names. */
export function subscriptionKey(sub: Pick<BlocklistSubscription, 'metadata'>): string {
  return createHash('sha256').update(`${sub.metadata.namespace}/${sub.metadata.name}`).digest('hex').slice(0, 16);
}

export function ownedLabels(sub: BlocklistSubscription): Record<string, string> {
  return { [MANAGED_BY]: MANAGER, [SUBSCRIPTION_LABEL]: subscriptionKey(sub) };
}

export function ownedSelector(sub: BlocklistSubscription): string {
  return `${MANAGED_SELECTOR},${SUBSCRIPTION_LABEL}=${subscriptionKey(sub)}`;
}

export function ownerReference(sub: BlocklistSubscription): V1OwnerReference {
  return { apiVersion: API_VERSION, kind: KIND, name: sub.metadata.name, uid: sub.metadata.uid!, controller: true, blockOwnerDeletion: false };
}

/** metav1.LabelSelector to the query-string form; undefined selects everything. */
export function labelSelectorString(selector: V1LabelSelector | undefined): string {
  if (!selector) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(selector.matchLabels ?? {}).sort()) parts.push(`${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.join(',');
}

/** Kubernetes object names: DNS-1123, at most 253 (we keep 63 so they also fit labels). */
export function objectName(prefix: string, sub: BlocklistSubscription): string {
  const base = `${prefix}-${sub.metadata.name}`.slice(0, 45).replace(/[-.]+$/, '');
  return `${base}-${subscriptionKey(sub).slice(0, 8)}`;
}

/** Compares two JSON-like values structurally (key order ignored). */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}

/** Runs fn over items, at most `limit` at a time (independent API writes), results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Equal string maps (ConfigMap data): no serialisation of megabytes just to compare them. */
export function sameStringMap(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const ak = Object.keys(a ?? {});
  if (ak.length !== Object.keys(b).length) return false;
  return ak.every((k) => a![k] === b[k]);
}

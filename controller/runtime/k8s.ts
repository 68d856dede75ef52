// The Kubernetes API client the controller uses, and small helpers shared by the targets. Every write goes
// through `writes` so tests and the bench can prove that an unchanged list writes nothing.
//
// One connection to the apiserver for the whole process (ApiConnection): credentials resolved from the
// kubeconfig by client-node's public applyToHTTPSOptions (client certificates, bearer tokens, the in-cluster
// service-account token re-read as the kubelet rotates it, exec plugins), and one undici Agent per TLS
// configuration that keeps its connections alive. Everything goes out through it: raw JSON requests
// (apiRequest), client-node's typed APIs (given it as their HttpLibrary), and client-node's watches and
// informers (given a KubeConfig whose public applySecurityAuthentication hands them its credentials and its
// Agent). client-node 2.x alone would build a new Agent, and so a new TLS connection, for every request.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  NetworkingV1Api,
  PatchStrategy,
  ResponseContext,
  ServerConfiguration,
  createConfiguration,
  setHeaderOptions,
  wrapHttpLibrary,
  type RequestContext,
  type V1LabelSelector,
  type V1OwnerReference,
} from '@kubernetes/client-node';
import { Agent, request, type Dispatcher } from 'undici';
import { API_VERSION, KIND, type BlocklistSubscription } from '../../api/v1alpha1/blocklist-subscription.ts';
import { Ledger } from './ledger.ts';
import { collectionPath, objectPath, type ResourceType } from './resources.ts';

export interface Apis {
  /** the kubeconfig for client-node's watches and informers: their requests go out on `connection` */
  kubeConfig: KubeConfig;
  /** every request to the apiserver goes out on it */
  connection: ApiConnection;
  core: CoreV1Api;
  networking: NetworkingV1Api;
  custom: CustomObjectsApi;
  coordination: CoordinationV1Api;
  /** counts create/replace/patch/delete calls by the targets and status */
  writes: WriteCounter;
  /** what this process wrote or verified, object by object (see ledger.ts) */
  ledger: Ledger;
}

export class WriteCounter {
  total = 0;
  byKind = new Map<string, number>();
  count(kind: string): void {
    this.total++;
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
  }
}

/** What a request to the apiserver needs: where, with which headers, on which connections. */
interface Credentials {
  /** the server's URL without a trailing slash: paths are appended (it may have a path of its own, behind a proxy) */
  server: string;
  headers: Record<string, string>;
  dispatcher: Agent;
}

/**
 * Credentials are resolved from the kubeconfig at most once a minute: reading the certificate files (and the
 * service-account token) for every request costs more than many requests do, and a minute is soon enough for a
 * rotated credential (client-node re-reads a token file once a minute too; the kubelet rotates it long before
 * it expires).
 */
const CREDENTIALS_TTL_MS = 60_000;
/** Idle connections are closed after this long: below the idle timeouts of apiservers and load balancers. */
const KEEP_ALIVE_MS = 30_000;

/** The apiserver of one kubeconfig context, and the kept-alive connections every request of the process shares. */
export class ApiConnection {
  readonly #kubeConfig: KubeConfig;
  /** one Agent per TLS configuration: a rotated client certificate gets a new one */
  readonly #agents = new Map<string, Agent>();
  #credentials?: { value: Promise<Credentials>; until: number };

  constructor(kubeConfig: KubeConfig) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig names no current cluster');
    // client-node would tunnel through it; one path that silently did not would be worse than none.
    if (cluster.proxyUrl) throw new Error(`the kubeconfig's cluster ${cluster.name} sets proxy-url, which the controller does not support`);
    this.#kubeConfig = kubeConfig;
  }

  credentials(): Promise<Credentials> {
    const cached = this.#credentials;
    if (cached && cached.until > Date.now()) return cached.value;
    const value = this.#resolve();
    this.#credentials = { value, until: Date.now() + CREDENTIALS_TTL_MS };
    // a failure is not cached: the next request tries again
    value.catch(() => {
      if (this.#credentials?.value === value) this.#credentials = undefined;
    });
    return value;
  }

  /**
   * The server's URL, which every request's path is appended to: in WHATWG form, as client-node's typed APIs
   * write the URLs they hand to send() — an in-cluster configuration's https://10.96.0.1:443 is
   * https://10.96.0.1, without the scheme's default port.
   */
  get server(): string {
    const url = new URL(this.#kubeConfig.getCurrentCluster()!.server);
    return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
  }

  async #resolve(): Promise<Credentials> {
    const server = this.server;
    const options: { headers?: Record<string, string | string[] | number | undefined>; auth?: string; ca?: unknown; cert?: unknown; key?: unknown; rejectUnauthorized?: boolean; servername?: string } = {};
    await this.#kubeConfig.applyToHTTPSOptions(options);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.headers ?? {})) if (value !== undefined) headers[name.toLowerCase()] = String(value);
    if (options.auth) headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    const tls = { ca: options.ca, cert: options.cert, key: options.key, rejectUnauthorized: options.rejectUnauthorized, servername: options.servername };
    const key = createHash('sha256').update(JSON.stringify([server, tls])).digest('hex');
    let dispatcher = this.#agents.get(key);
    if (!dispatcher) {
      // TLS verification is node's default unless the kubeconfig says insecure-skip-tls-verify.
      dispatcher = new Agent({ connect: tls as Agent.Options['connect'], keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS });
      // Connections of an older TLS configuration finish what they carry (a watch, say) and close.
      for (const old of this.#agents.values()) void old.close();
      this.#agents.clear();
      this.#agents.set(key, dispatcher);
    }
    return { server, headers, dispatcher };
  }

  /**
   * One request to `path` (from the API's root: /api/v1/...), its body already serialised, answering the status,
   * the headers and the body as text. A 429
   * (priority and fairness, or a resource's storage still initialising, as right after its CRD is installed) is
   * retried after its Retry-After, as client-go does.
   */
  async exchange(
    method: Dispatcher.HttpMethod,
    path: string,
    options: { body?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<{ status: number; headers: Record<string, string>; text: string }> {
    for (let attempt = 0; ; attempt++) {
      const { server, headers: auth, dispatcher } = await this.credentials();
      const answer = await request(`${server}${path}`, {
        method,
        dispatcher,
        headers: { 'user-agent': USER_AGENT, ...options.headers, ...auth },
        body: options.body,
        signal: options.signal,
      });
      const text = await answer.body.text();
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      if (answer.statusCode !== 429 || attempt === MAX_RETRIES_429) return { status: answer.statusCode, headers, text };
      await sleep(Math.min(Number(headers['retry-after']) || 1, 5) * 1000);
    }
  }

  /** Closes the kept-alive connections (and ends the watches on them). */
  async close(): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    this.#credentials = undefined;
    await Promise.all(agents.map((a) => a.destroy()));
  }
}

const MAX_RETRIES_429 = 5;
/** What the apiserver's audit log shows as the client. */
const USER_AGENT = 'blockfeed-controller';

/**
 * The kubeconfig client-node's Watch, ListWatch and makeInformer are given: the one method they call to
 * authenticate a request (public, the SecurityAuthentication of client-node's generated clients) hands them the
 * connection's credentials and Agent.
 */
class ConnectedKubeConfig extends KubeConfig {
  connection?: ApiConnection;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    if (!this.connection) throw new Error('ConnectedKubeConfig used before its connection was set');
    const { headers, dispatcher } = await this.connection.credentials();
    for (const [name, value] of Object.entries(headers)) context.setHeaderParam(name, value);
    context.setDispatcher(dispatcher);
  }
}

export function makeApis(source: KubeConfig): Apis {
  // A copy: the caller's KubeConfig keeps working as it did.
  const kubeConfig = new ConnectedKubeConfig();
  kubeConfig.loadFromOptions({ clusters: source.clusters, users: source.users, contexts: source.contexts, currentContext: source.currentContext });
  const connection = new ApiConnection(kubeConfig);
  kubeConfig.connection = connection;
  // client-node's typed APIs send through the same connection (serialising and parsing stay theirs).
  const httpApi = wrapHttpLibrary({
    async send(context: RequestContext): Promise<ResponseContext> {
      const body = context.getBody();
      if (body !== undefined && typeof body !== 'string') throw new Error('only JSON request bodies are supported');
      // client-node appends the path to the server it was given
      const url = context.getUrl();
      if (!url.startsWith(`${connection.server}/`)) throw new Error(`a request to ${url}, not to the apiserver ${connection.server}`);
      const path = url.slice(connection.server.length);
      const answer = await connection.exchange(context.getHttpMethod(), path, { body, headers: context.getHeaders(), signal: context.getSignal() });
      return new ResponseContext(answer.status, answer.headers, { text: async () => answer.text, binary: async () => Buffer.from(answer.text), stream: () => null });
    },
  });
  const configuration = createConfiguration({ baseServer: new ServerConfiguration(connection.server, {}), httpApi });
  return {
    kubeConfig,
    connection,
    core: new CoreV1Api(configuration),
    networking: new NetworkingV1Api(configuration),
    custom: new CustomObjectsApi(configuration),
    coordination: new CoordinationV1Api(configuration),
    writes: new WriteCounter(),
    ledger: new Ledger(),
  };
}

/** Closes the kept-alive connections of `apis`. */
export function closeConnections(apis: Apis): Promise<void> {
  return apis.connection.close();
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
  const headers: Record<string, string> = { accept: options.accept ?? 'application/json' };
  if (options.json !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const answer = await apis.connection.exchange(method, path, { body: options.json, headers });
  if (answer.status < 200 || answer.status > 299) {
    let message = answer.text.slice(0, 500);
    try {
      message = (JSON.parse(answer.text) as { message?: string }).message ?? message;
    } catch {
      // not a Status object: keep the text
    }
    throw new ApiRequestError(answer.status, `${method} ${path.split('?')[0]}: HTTP ${answer.status}: ${message}`);
  }
  return answer.text;
}

/** Creates (POST to the collection) or replaces (PUT to the object) an object given as JSON; answers its new resourceVersion. */
export async function sendJson(apis: Apis, method: 'POST' | 'PUT', path: string, json: string): Promise<{ resourceVersion?: string }> {
  // Only the metadata is needed: the rest would echo what was sent, which the apiserver would encode and this
  // process parse again, a megabyte per large object.
  const text = await apiRequest(apis, method, path, { json, accept: OBJECT_METADATA_ONLY });
  return { resourceVersion: (JSON.parse(text) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion };
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

/** A subscription's key, "namespace/name": in the work queue, the ledger, logs and the subscription annotation. */
export function keyOf(sub: Pick<BlocklistSubscription, 'metadata'>): string {
  return `${sub.metadata.namespace}/${sub.metadata.name}`;
}

/** A short stable id of a subscription, usable as a label value and in names. */
export function subscriptionKey(sub: Pick<BlocklistSubscription, 'metadata'>): string {
  return createHash('sha256').update(keyOf(sub)).digest('hex').slice(0, 16);
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

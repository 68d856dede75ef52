// A compact copy of the applied list beside the subscription, so that a restarted controller (or a new leader)
// can check and repair every target at once without pulling the feed: a pull at start-up might fail, or bring
// a list the safety stage refuses, and a daily schedule would leave a deleted policy unrepaired for up to a day.
//
// The list text, gzipped, in the binaryData of ConfigMaps in the subscription's namespace, owner-referenced (so
// they go with the subscription), cut every 768 KiB; annotations say which inputs produced it. It is trusted
// only when its hash equals status.listHash, the list the status says is applied. The feed's ETag is kept out
// of it (status.feedETag has it), so a new body with the same list writes nothing.
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { BlocklistSubscription } from '../../api/v1alpha1/blocklist-subscription.ts';
import { apiRequest, objectName, ownedSelector, type Apis } from './k8s.ts';
import { CONFIG_MAP, collectionPath } from './resources.ts';
import { deleteOwned, ownedMetadata, ownerReferencesIn, syncObjects, type DesiredObject, type WriteContext } from './objects.ts';

/** What the record holds: the applied list and what it came from. */
export interface RecordedList {
  /** the aggregated list, one CIDR a line, as status.listHash hashes it */
  lines: readonly string[];
  /** hash of the inputs besides the feed body that shaped the list (see reconcile.ts) */
  inputsHash: string;
  /** entries of the feed the list was aggregated from */
  entries: number;
}

const RECORD = 'appliedList';
const CHUNK_LABEL = 'blockfeed.dev/chunk';
const CHUNK_BYTES = 768 * 1024;
const KEY = 'list.gz';
const A = { inputs: 'blockfeed.dev/inputs-hash', entries: 'blockfeed.dev/entries', hash: 'blockfeed.dev/list-hash', chunks: 'blockfeed.dev/chunks' };

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

const hashes = new WeakMap<readonly string[], string>();

/** SHA-256 of the list as status.listHash has it (computed once per list). */
export function listHash(lines: readonly string[]): string {
  let hash = hashes.get(lines);
  if (hash === undefined) {
    hash = createHash('sha256').update(lines.join('\n')).digest('hex');
    hashes.set(lines, hash);
  }
  return hash;
}

/** The record's ConfigMaps for a state (gzip level 1: fast, and deterministic, so an unchanged list writes nothing). */
export async function desiredRecord(sub: BlocklistSubscription, record: RecordedList): Promise<DesiredObject[]> {
  const packed = await gzipAsync(record.lines.join('\n'), { level: 1 });
  const chunks: Buffer[] = [];
  for (let at = 0; at < packed.length || chunks.length === 0; at += CHUNK_BYTES) chunks.push(packed.subarray(at, at + CHUNK_BYTES));
  const owned = ownedMetadata(sub, RECORD);
  const base = objectName('blockfeed-applied', sub);
  const namespace = sub.metadata.namespace;
  return chunks.map((chunk, index) => ({
    namespace,
    name: index === 0 ? base : `${base}-${index}`,
    labels: { ...owned.labels, [CHUNK_LABEL]: String(index) },
    annotations: {
      ...owned.annotations,
      [A.inputs]: record.inputsHash,
      [A.entries]: String(record.entries),
      [A.hash]: listHash(record.lines),
      [A.chunks]: String(chunks.length),
    },
    ownerReferences: ownerReferencesIn(sub, namespace),
    content: { binaryData: { [KEY]: chunk.toString('base64') } },
  }));
}

/** Writes (or leaves as it is) the record of the applied list; answers the objects written. */
export async function writeRecord(ctx: WriteContext, record: RecordedList): Promise<number> {
  const result = await syncObjects(ctx, CONFIG_MAP, () => desiredRecord(ctx.sub, record), { selector: recordSelector(ctx.sub), namespace: ctx.sub.metadata.namespace });
  return result.written + result.deleted;
}

const recordSelector = (sub: BlocklistSubscription) => `${ownedSelector(sub)},blockfeed.dev/target=${RECORD}`;

interface RecordChunk {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  binaryData?: Record<string, string>;
}

/**
 * The recorded list of a subscription, or undefined when there is none that can be trusted: missing or
 * incomplete chunks, or a list other than the one status.listHash names.
 */
export async function readRecord(apis: Apis, sub: BlocklistSubscription): Promise<RecordedList | undefined> {
  const path = `${collectionPath(CONFIG_MAP, sub.metadata.namespace)}?labelSelector=${encodeURIComponent(recordSelector(sub))}`;
  const items = ((JSON.parse(await apiRequest(apis, 'GET', path)) as { items?: RecordChunk[] }).items ?? []).sort(
    (a, b) => Number(a.metadata.labels?.[CHUNK_LABEL]) - Number(b.metadata.labels?.[CHUNK_LABEL]),
  );
  const first = items[0]?.metadata.annotations;
  if (!first || !sub.status?.listHash) return undefined;
  const complete = items.length === Number(first[A.chunks]) && items.every((c, i) => c.metadata.labels?.[CHUNK_LABEL] === String(i) && c.metadata.annotations?.[A.hash] === first[A.hash]);
  if (!complete || first[A.hash] !== sub.status.listHash) return undefined;
  const text = (await gunzipAsync(Buffer.concat(items.map((c) => Buffer.from(c.binaryData?.[KEY] ?? '', 'base64'))))).toString('utf8');
  const lines = text === '' ? [] : text.split('\n');
  if (listHash(lines) !== first[A.hash]) return undefined;
  return { lines, inputsHash: first[A.inputs] ?? '', entries: Number(first[A.entries]) };
}

/** Removes the record (finalizer; garbage collection would too, through the owner reference). */
export async function deleteRecord(ctx: WriteContext): Promise<number> {
  return deleteOwned(ctx, [CONFIG_MAP], { selector: recordSelector(ctx.sub), namespace: ctx.sub.metadata.namespace });
}

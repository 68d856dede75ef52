// What this process wrote or verified, object by object: the resourceVersion it left each object at, the
// subscription the object belongs to, and whether its enforcement point refuses that version. Three uses:
//   - an object still at that version needs no read before an unchanged sync skips it (its content-hash
//     annotation is ours, and nobody has touched it since);
//   - a watch event for a known object at another version, or its deletion, is drift (drift.ts);
//   - a refusal read from the object's status stays until the object is read again, so a sync that reads
//     nothing still reports it, and so does one that writes a new version.
// A restarted process starts empty: the first sync reads each object once and records it.
import type { ResourceType } from './resources.ts';

interface Entry {
  resourceVersion: string;
  /** "namespace/name" of the subscription that owns the object */
  owner: string;
  /** why the enforcement point does not enforce the object, as its status said when last read (objects.ts Refusal) */
  refusal?: string;
}

export function ledgerKey(resource: ResourceType, namespace: string | undefined, name: string): string {
  return `${resource.group}/${resource.kind}/${namespace ?? ''}/${name}`;
}

export class Ledger {
  private readonly entries = new Map<string, Entry>();
  private readonly resources = new Map<string, ResourceType>();
  /** called once per kind of object, the first time one is recorded (the drift watch starts on it) */
  onNewResource?: (resource: ResourceType) => void;

  record(resource: ResourceType, namespace: string | undefined, name: string, resourceVersion: string, owner: string, refusal?: string): void {
    this.entries.set(ledgerKey(resource, namespace, name), { resourceVersion, owner, refusal });
    const kindKey = `${resource.group}/${resource.version}/${resource.plural}`;
    if (!this.resources.has(kindKey)) {
      this.resources.set(kindKey, resource);
      this.onNewResource?.(resource);
    }
  }

  /** True when this process left the object at exactly this version. */
  holds(key: string, resourceVersion: string | undefined): boolean {
    return resourceVersion !== undefined && this.entries.get(key)?.resourceVersion === resourceVersion;
  }

  get(key: string): Entry | undefined {
    return this.entries.get(key);
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  /** The subscriptions ("namespace/name") with an object of this kind in this namespace (any, for a cluster-scoped kind). */
  ownersIn(resource: ResourceType, namespace: string | undefined): Set<string> {
    const prefix = resource.namespaced ? ledgerKey(resource, namespace, '') : `${resource.group}/${resource.kind}/`;
    const owners = new Set<string>();
    for (const [key, entry] of this.entries) if (key.startsWith(prefix)) owners.add(entry.owner);
    return owners;
  }

  /** Drops every object of a subscription (it was deleted). */
  forgetOwner(owner: string): void {
    for (const [key, entry] of this.entries) if (entry.owner === owner) this.entries.delete(key);
  }

  /** Every kind of object recorded so far. */
  knownResources(): ResourceType[] {
    return [...this.resources.values()];
  }

  get size(): number {
    return this.entries.size;
  }
}

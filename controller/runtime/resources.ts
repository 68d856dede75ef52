// How the API addresses a kind of object: its group, version and plural, and the paths of its collections and
// objects. Pure.

/** A kind of object the controller writes, as the API addresses it. */
export interface ResourceType {
  /** API group; '' for the core group */
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** A built-in kind both the record of the applied list and the ConfigMap target write. */
export const CONFIG_MAP: ResourceType = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

export const apiVersionOf = (r: ResourceType) => (r.group ? `${r.group}/${r.version}` : r.version);

/** The collection path: in one namespace, or across all namespaces (and for cluster-scoped kinds) without one. */
export function collectionPath(r: ResourceType, namespace?: string): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return r.namespaced && namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${r.plural}` : `${base}/${r.plural}`;
}

export function objectPath(r: ResourceType, namespace: string | undefined, name: string): string {
  return `${collectionPath(r, namespace)}/${encodeURIComponent(name)}`;
}

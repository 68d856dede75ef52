// The filters of the three list endpoints, in one table: which endpoint takes which filter, its query
// parameter on the wire, what it accepts and what it means. Everything that speaks of filters derives from
// here: the api-server's query schemas (and so /openapi.json), the CRD's `spec.feed.filters` with its CEL
// rules, and the URL the controller pulls. A filter is named in camelCase (as in the CRD); `param` is its
// name in the query string.
import { ISPS, LEVELS, LIMITS, NETS, PRECISIONS, PROVINCES, PROVINCE_SHORT_NAMES, SERVICES, SOURCES, TYPES } from './vocabulary.ts';

export const LIST_ENDPOINTS = ['dedup', 'export', 'scan-export'] as const;
export type ListEndpoint = (typeof LIST_ENDPOINTS)[number];

/** The widest window each list endpoint serves (docs/http-api.md). */
export const MAX_HOURS: Readonly<Record<ListEndpoint, number>> = {
  dedup: LIMITS.dedupMaxHours,
  export: LIMITS.exportMaxHours,
  'scan-export': LIMITS.exportMaxHours,
};

/** What a filter accepts. */
export type FilterValues =
  /** One of a closed set of strings; `default` is what the API assumes when the parameter is absent. */
  | { kind: 'choice'; values: readonly string[]; default?: string }
  /** The window in hours: an integer from 1 to the endpoint's MAX_HOURS, 24 when absent. */
  | { kind: 'hours'; default: number }
  /** On or off: `0`/`1` on the wire, a boolean in the CRD. */
  | { kind: 'switch'; default: 0 | 1 };

export interface FilterSpec {
  param: string;
  values: FilterValues;
  description: string;
  endpoints: readonly ListEndpoint[];
}

const ALL_LISTS = LIST_ENDPOINTS;

export const LIST_FILTERS = {
  type: {
    param: 'type',
    values: { kind: 'choice', values: ['all', ...TYPES], default: 'all' },
    description: 'source type: attacker (interacted with a honeypot), scanner (only probed), research_scanner or asset_scanner (curated mapping platforms); research scanners appear only when named',
    endpoints: ['export'],
  },
  source: {
    param: 'source',
    values: { kind: 'choice', values: ['all', ...SOURCES], default: 'all' },
    description: 'capture origin: honeypot (deep capture), telescope (active scan sources only), or all',
    endpoints: ['export'],
  },
  service: {
    param: 'service',
    values: { kind: 'choice', values: ['all', ...SERVICES], default: 'all' },
    description: 'attacked service',
    endpoints: ['export'],
  },
  level: {
    param: 'level',
    values: { kind: 'choice', values: ['all', ...LEVELS], default: 'all' },
    description: 'danger level, meaning this level or worse',
    endpoints: ['export', 'scan-export'],
  },
  precision: {
    param: 'precision',
    values: { kind: 'choice', values: PRECISIONS, default: 'standard' },
    description: 'high = confirmed by at least two independent sensors, or by both the honeypot and the telescope, in the window',
    endpoints: ['export'],
  },
  hours: {
    param: 'hours',
    values: { kind: 'hours', default: 24 },
    description: `time window in hours: 1 to ${MAX_HOURS.dedup} on dedup, 1 to ${MAX_HOURS.export} on export and scan-export`,
    endpoints: ALL_LISTS,
  },
  net: {
    param: 'net',
    values: { kind: 'choice', values: NETS },
    description: 'source network type: idc (data centre and cloud), broadband, mobile, edu; unset = any',
    endpoints: ['export'],
  },
  isp: {
    param: 'isp',
    values: { kind: 'choice', values: ISPS },
    description: 'carrier: 电信 China Telecom, 联通 China Unicom, 移动 China Mobile; unset = any',
    endpoints: ['export'],
  },
  province: {
    param: 'province',
    values: { kind: 'choice', values: [...new Set<string>([...PROVINCES, ...PROVINCE_SHORT_NAMES])] },
    description: 'province of China by its Chinese name, with or without its suffix (广东 = 广东省); unset = any',
    endpoints: ['export'],
  },
  includeResearch: {
    param: 'include_research',
    values: { kind: 'switch', default: 0 },
    description: 'include research mapping platforms (Censys, Shodan, ...), which are left out by default',
    endpoints: ALL_LISTS,
  },
  includeScan: {
    param: 'include_scan',
    values: { kind: 'switch', default: 1 },
    description: 'merge the active scan sources (telescope) into the list; on by default',
    endpoints: ['dedup'],
  },
} as const satisfies Record<string, FilterSpec>;

export type FilterName = keyof typeof LIST_FILTERS;
export const FILTER_NAMES = Object.keys(LIST_FILTERS) as FilterName[];

/** The filters an endpoint takes, in table order. */
export function filtersOf(endpoint: ListEndpoint): FilterName[] {
  return FILTER_NAMES.filter((name) => (LIST_FILTERS[name].endpoints as readonly ListEndpoint[]).includes(endpoint));
}

/** A filter's value as the CRD holds it: a string of its set, a number of hours, or a boolean switch. */
export type FilterSetting = string | number | boolean;

/** Which list, from where, with which filters: a subscription's `spec.feed`, or the download page's choice. */
export interface ListFeed {
  /** the api-server's base URL */
  url: string;
  endpoint: ListEndpoint;
  filters?: Readonly<Partial<Record<FilterName, FilterSetting>>>;
}

/**
 * The URL of a feed's list as plain text: its base + /api/<endpoint>, the filters as query parameters in wire
 * form sorted by name (one URL per subscription, whatever the order in its YAML). Filters the endpoint does not
 * take are an error: the CRD's CEL rules refuse them before they get here.
 */
export function listUrl({ url: base, endpoint, filters = {} }: ListFeed): URL {
  const params: [string, string][] = [['format', 'txt']];
  for (const [name, setting] of Object.entries(filters) as [FilterName, FilterSetting | undefined][]) {
    if (setting === undefined) continue;
    const filter: FilterSpec = LIST_FILTERS[name];
    if (!filter.endpoints.includes(endpoint)) throw new Error(`endpoint ${endpoint} does not take the filter ${name}`);
    params.push([filter.param, typeof setting === 'boolean' ? (setting ? '1' : '0') : String(setting)]);
  }
  const url = new URL(`${base.replace(/\/+$/, '')}/api/${endpoint}`);
  for (const [name, value] of params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) url.searchParams.append(name, value);
  return url;
}

// --- The same table as types: what a validated query of an endpoint holds, keyed by wire name. -------------

type Filters = typeof LIST_FILTERS;
type TakenBy<E extends ListEndpoint> = { [N in FilterName]: E extends Filters[N]['endpoints'][number] ? N : never }[FilterName];
type WireValue<V> = V extends { kind: 'choice'; values: readonly (infer S)[] } ? S : V extends { kind: 'hours' } ? number : 0 | 1;
type Defaulted<N extends FilterName> = N extends FilterName ? (Filters[N]['values'] extends { default: unknown } ? N : never) : never;

/** A validated query's filters: those with an API default are always present, the others only when given. */
export type FilterQuery<E extends ListEndpoint> = {
  -readonly [N in Defaulted<TakenBy<E>> as Filters[N]['param']]: WireValue<Filters[N]['values']>;
} & {
  -readonly [N in Exclude<TakenBy<E>, Defaulted<TakenBy<E>>> as Filters[N]['param']]?: WireValue<Filters[N]['values']>;
};

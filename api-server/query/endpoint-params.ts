// The query parameters of every endpoint (docs/http-api.md): the list filters come from the one
// table in common/list-filters.ts, the rest (format, download, key, limit) are defined here. The schemas are
// what requests are validated against (validate-query.ts) and what /openapi.json shows. Every parameter is
// optional on the wire; validation fills in the defaults, which the static types reflect.
import Type, { type Static, type TSchema, type TUnsafe } from 'typebox';
import { LIST_FILTERS, MAX_HOURS, filtersOf, type FilterQuery, type FilterSpec, type ListEndpoint } from '../../common/list-filters.ts';
import { FORMATS, LIMITS, type Format } from '../../common/vocabulary.ts';

const listFormat = Type.Enum([...FORMATS], { default: 'txt', description: 'txt: one address a line; csv: RFC 4180 with a header row; json: an envelope with the records' });
const documentFormat = Type.Enum([...FORMATS], { default: 'json', description: 'json (default), csv, or txt (one address a line)' });
const statsFormat = Type.Enum(['json'], { default: 'json', description: 'statistics are JSON' });
const download = Type.Enum([0, 1], { default: 0, description: '1 = send as an attachment (Content-Disposition) with a descriptive file name' });
const limit = Type.Integer({ minimum: 1, maximum: LIMITS.recentMaxLimit, default: 50, description: 'number of most recent events' });
/** The longest a list request may be held (`wait=`); below the idle timeouts of common proxies (60 s). */
export const MAX_WAIT_SECONDS = 60;
/** `wait=`: a long poll on a list (docs/http-api.md "Live lists"); no default: without it, no waiting. */
const wait = Type.Integer({
  minimum: 1,
  maximum: MAX_WAIT_SECONDS,
  description:
    'long poll: when If-None-Match names a list of the current data (of any minute), hold the answer until the data changes (then the new list) or this many seconds pass (then 304)',
});

/** Variant B's `key=` form of the API key (temporary script use; the header X-API-Key is preferred). */
const key = Type.String({ description: 'API key (prefer the X-API-Key header: query strings end up in access logs)' });

function filterSchema(filter: FilterSpec, endpoint: ListEndpoint): TSchema {
  const { values, description } = filter;
  switch (values.kind) {
    case 'choice':
      return Type.Enum([...values.values], values.default === undefined ? { description } : { default: values.default, description });
    case 'hours':
      return Type.Integer({ minimum: 1, maximum: MAX_HOURS[endpoint], default: values.default, description: `time window in hours, 1 to ${MAX_HOURS[endpoint]}` });
    case 'switch':
      return Type.Enum([0, 1], { default: values.default, description });
  }
}

function hoursOf(endpoint: ListEndpoint): TSchema {
  return filterSchema(LIST_FILTERS.hours, endpoint);
}

/** A flat query schema; T is its static type, the parameters after validation and defaults. */
export type QuerySchema<T> = TUnsafe<T> & { properties: Record<string, TSchema> };

function querySchema<T>(properties: Record<string, TSchema>, required: readonly string[] = []): QuerySchema<T> {
  // Type.Unsafe keeps the object schema as it is (validation and OpenAPI read it) and only sets its type.
  // A parameter is optional on the wire (validation fills in its default) unless named in `required`, which is
  // what OpenAPI must say.
  const wire = Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, required.includes(name) ? schema : Type.Optional(schema)]));
  return Type.Unsafe<T>(Type.Object(wire, { additionalProperties: false })) as QuerySchema<T>;
}

interface ListOutput {
  format: Format;
  download: 0 | 1;
}

function listQuery<E extends ListEndpoint>(endpoint: E, credential: { key?: TSchema } = {}) {
  const filters = Object.fromEntries(filtersOf(endpoint).map((name) => [LIST_FILTERS[name].param, filterSchema(LIST_FILTERS[name], endpoint)]));
  return querySchema<FilterQuery<E> & ListOutput & { key?: string }>({ ...filters, format: listFormat, download, ...credential });
}

/** An endpoint's parameters and `wait=`, for the endpoints that can be long-polled (endpoints.ts). */
export function withWait<T>(schema: QuerySchema<T>): QuerySchema<T & { wait?: number }> {
  return querySchema<T & { wait?: number }>({ ...schema.properties, wait });
}

export const DedupParams = listQuery('dedup', { key });
export const ExportParams = listQuery('export', { key });
export const ScanExportParams = listQuery('scan-export', { key });
export const StatsParams = querySchema<{ hours: number; format: 'json'; key?: string }>({ hours: hoursOf('export'), format: statsFormat, key });
export const RecentParams = querySchema<{ limit: number; format: Format; key?: string }>({ limit, format: documentFormat, key });

/** The address the check is about: one IPv4 or IPv6 address, no prefix length (validate-query.ts reads the format). */
const ip = Type.String({ format: 'ip-address', description: 'the address to check: one IPv4 or IPv6 address (an IPv4-mapped IPv6 address is its IPv4 address)' });
const checkFormat = Type.Enum(['json', 'txt'], { default: 'json', description: 'json (default), or txt: one "name: value" a line' });
export type CheckFormat = 'json' | 'txt';

export const CheckParams = querySchema<{ ip: string; format: CheckFormat; key?: string }>({ ip, format: checkFormat, key }, ['ip']);

/** Variant A takes `hours`, `format`, `download` (and `limit` on recent); credentials only as a bearer token. */
export const HoneypotDedupParams = querySchema<{ hours: number } & ListOutput>({ hours: hoursOf('dedup'), format: listFormat, download });
export const HoneypotStatsParams = querySchema<{ hours: number; format: 'json' }>({ hours: hoursOf('dedup'), format: statsFormat });
export const HoneypotRecentParams = querySchema<{ limit: number; format: Format }>({ limit, format: documentFormat });
export const HoneypotCheckParams = querySchema<{ ip: string; format: CheckFormat }>({ ip, format: checkFormat }, ['ip']);

export type ExportQuery = Static<typeof ExportParams>;

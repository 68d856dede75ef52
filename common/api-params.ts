// Query parameters of the blocklist endpoints (spec §4, DESIGN.md "HTTP contract"), one TypeBox schema per
// endpoint built from the shared vocabulary. The api-server validates requests and generates /openapi.json
// from these; the controller's CRD mirrors the filters of dedup, export and scan-export from the same objects.
import Type, { type Static } from 'typebox';
import { FORMATS, ISPS, LEVELS, LIMITS, NETS, PRECISIONS, PROVINCES, PROVINCE_SHORT_NAMES, SERVICES, SOURCES, TYPES } from './vocabulary.ts';

const hours = (max: number) =>
  Type.Integer({ minimum: 1, maximum: max, default: 24, description: `time window in hours, 1 to ${max}` });

const flag = (description: string, fallback: 0 | 1) => Type.Enum([0, 1], { default: fallback, description });

const listFormat = Type.Enum([...FORMATS], { default: 'txt', description: 'txt: one address a line; csv: RFC 4180 with a header row; json: an envelope with the records' });
const download = flag('1 = send as an attachment (Content-Disposition) with a descriptive file name', 0);
const includeResearch = flag('1 = include research mapping platforms (Censys, Shodan, ...), excluded by default', 0);
const level = Type.Enum(['all', ...LEVELS], { default: 'all', description: 'danger level, "X or worse"' });

/** Variant B's `key=` form of the API key (temporary script use; the header X-API-Key is preferred). */
const keyParam = Type.Optional(Type.String({ description: 'API key (prefer the X-API-Key header: query strings end up in access logs)' }));

export const DedupParams = Type.Object(
  {
    hours: hours(LIMITS.dedupMaxHours),
    format: listFormat,
    download,
    include_scan: flag('1 = merge the active scan sources (telescope) into the list', 1),
    include_research: includeResearch,
    key: keyParam,
  },
  { additionalProperties: false },
);

export const ExportParams = Type.Object(
  {
    type: Type.Enum(['all', ...TYPES], { default: 'all', description: 'source type' }),
    source: Type.Enum(['all', ...SOURCES], { default: 'all', description: 'capture origin: honeypot (deep capture), telescope (active scan sources)' }),
    service: Type.Enum(['all', ...SERVICES], { default: 'all', description: 'target service' }),
    level,
    precision: Type.Enum([...PRECISIONS], { default: 'standard', description: 'high = confirmed by two sensors or by both sources in the window' }),
    hours: hours(LIMITS.exportMaxHours),
    net: Type.Optional(Type.Enum([...NETS], { description: 'source network type; unset = any' })),
    isp: Type.Optional(Type.Enum([...ISPS], { description: 'carrier; unset = any' })),
    province: Type.Optional(
      Type.Enum([...PROVINCES, ...PROVINCE_SHORT_NAMES.filter((n) => !(PROVINCES as readonly string[]).includes(n))], {
        description: 'province in Chinese, with or without its suffix (广东 = 广东省); unset = any',
      }),
    ),
    include_research: includeResearch,
    format: listFormat,
    download,
    key: keyParam,
  },
  { additionalProperties: false },
);

export const ScanExportParams = Type.Object(
  {
    level,
    hours: hours(LIMITS.exportMaxHours),
    include_research: includeResearch,
    format: listFormat,
    download,
    key: keyParam,
  },
  { additionalProperties: false },
);

export const StatsParams = Type.Object(
  {
    hours: hours(LIMITS.exportMaxHours),
    format: Type.Enum(['json'], { default: 'json', description: 'statistics are JSON' }),
    key: keyParam,
  },
  { additionalProperties: false },
);

export const RecentParams = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: LIMITS.recentMaxLimit, default: 50, description: 'number of most recent events' }),
    format: Type.Enum([...FORMATS], { default: 'json', description: 'json (default), csv, or txt (one address a line)' }),
    key: keyParam,
  },
  { additionalProperties: false },
);

/** Variant A takes `hours`, `format`, `download` (and `limit` on recent); credentials only as a bearer token. */
export const HoneypotDedupParams = Type.Object(
  { hours: hours(LIMITS.dedupMaxHours), format: listFormat, download },
  { additionalProperties: false },
);
export const HoneypotStatsParams = Type.Object(
  { hours: hours(LIMITS.dedupMaxHours), format: Type.Enum(['json'], { default: 'json', description: 'statistics are JSON' }) },
  { additionalProperties: false },
);
export const HoneypotRecentParams = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: LIMITS.recentMaxLimit, default: 50, description: 'number of most recent events' }),
    format: Type.Enum([...FORMATS], { default: 'json', description: 'json (default), csv, or txt (one address a line)' }),
  },
  { additionalProperties: false },
);

export type DedupQuery = Static<typeof DedupParams>;
export type ExportQuery = Static<typeof ExportParams>;
export type ScanExportQuery = Static<typeof ScanExportParams>;
export type StatsQuery = Static<typeof StatsParams>;
export type RecentQuery = Static<typeof RecentParams>;

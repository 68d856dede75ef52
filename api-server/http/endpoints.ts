// The blocklist API's endpoints, one row each (docs/http-api.md "Endpoints"): path, credential (the spec's
// variant, and whether a key is required), query parameters, cache class and renderer. The routes, their
// guards (auth → limits, the cached-answer fast path, metrics) and the OpenAPI document all come from this
// table (blocklist-api.ts registers one route per row, in this order); an endpoint is added by adding a row.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Format } from '../../common/vocabulary.ts';
import {
  CheckParams,
  DedupParams,
  ExportParams,
  HoneypotCheckParams,
  HoneypotDedupParams,
  HoneypotRecentParams,
  HoneypotStatsParams,
  RecentParams,
  ScanExportParams,
  StatsParams,
  withWait,
  type QuerySchema,
} from '../query/endpoint-params.ts';
import { checkAddress } from '../query/check.ts';
import type { CheckFormat } from '../query/endpoint-params.ts';
import { dedupFilter, exportFilter, listInstant, scanExportFilter } from '../query/lists.ts';
import { queryRecent } from '../query/recent.ts';
import { queryStats } from '../query/stats.ts';
import { renderCheck } from '../render/check.ts';
import { formatRecent } from '../render/recent.ts';
import { document, list, type Renderer, type ResponderDeps } from './respond.ts';
import type { ApiRoute } from './route-config.ts';

/** A row as written: its parameters' static type `Q` ties the schema to what the renderer reads. */
interface EndpointRow<Q> extends Omit<ApiRoute, 'answers'> {
  summary: string;
  params: QuerySchema<Q>;
  render: Renderer<Q>;
}

/** A row as the routes use it: the schema, and the answer to a request validated against it. */
export interface Endpoint extends ApiRoute {
  summary: string;
  params: QuerySchema<unknown>;
  respond(deps: ResponderDeps, req: FastifyRequest, reply: FastifyReply): undefined | Promise<FastifyReply>;
}

function row<Q>({ render, ...declared }: EndpointRow<Q>): Endpoint {
  if (declared.longPoll && declared.access !== 'key') throw new Error(`${declared.path}: a long poll needs a key (waits are bounded per key)`);
  const endpoint: Endpoint = {
    ...declared,
    answers: render.answers,
    params: declared.longPoll ? withWait(declared.params) : declared.params,
    // The route validated the query against `params` (defaults applied) before the handler runs.
    respond: (deps, req, reply) => render(deps, endpoint, req.query as Q, req, reply),
  };
  return endpoint;
}

const stats = document(async (pool, q: { hours: number; format: 'json' }, now) => `${JSON.stringify(await queryStats(pool, now, q.hours))}\n`);

/** Variant A's events carry the honeypot `command`; variant B's do not. */
const recent = (withCommand: boolean) =>
  document(async (pool, q: { limit: number; format: Format }, now) => formatRecent(await queryRecent(pool, q.limit), q.format, withCommand, now.toISOString()));

/**
 * Whether and why an address is listed, at the instant a list asked for now describes (the same minute). Read
 * from the primary: the freshest data there is, and so the exclusions in force, which every list honours at
 * once (http/exclusion-changes.ts); a list from a standby may lack newer sightings by the replication delay.
 */
const check = document(
  async (pool, q: { ip: string; format: CheckFormat }, now) => renderCheck(await checkAddress(pool, q.ip, listInstant(now)), q.format),
  { readFrom: 'primary' },
);

export const ENDPOINTS: readonly Endpoint[] = [
  // Variant A: an optional bearer token; without one, anonymous limits apply.
  row({
    path: '/api/honeypot/dedup', variant: 'A', access: 'public', endpoint: 'dedup', cache: 'variantA', params: HoneypotDedupParams,
    summary: 'Attackers deduplicated by address, with the active scan sources', render: list(dedupFilter),
  }),
  row({
    path: '/api/honeypot/stats', variant: 'A', access: 'public', endpoint: 'stats', cache: 'variantA', params: HoneypotStatsParams,
    summary: 'Total attacks, unique addresses, top countries and ports', render: stats,
  }),
  row({
    path: '/api/honeypot/recent', variant: 'A', access: 'public', endpoint: 'recent', cache: 'recent', params: HoneypotRecentParams,
    summary: 'Most recent attack events with the honeypot command', render: recent(true),
  }),
  row({
    path: '/api/honeypot/check', variant: 'A', access: 'public', endpoint: 'check', cache: 'none', params: HoneypotCheckParams,
    summary: 'Whether an address is in each list and window, and why: what the sensors saw, its classification, enrichment and any exclusion', render: check,
  }),
  // Variant B: lists need an API key (X-API-Key, or key=) and can be long-polled (wait=); stats and recent are public.
  row({
    path: '/api/dedup', variant: 'B', access: 'key', longPoll: true, endpoint: 'dedup', cache: 'byWindow', params: DedupParams,
    summary: 'Basic blocklist deduplicated by address; active scan sources merged unless include_scan=0', render: list(dedupFilter),
  }),
  row({
    path: '/api/export', variant: 'B', access: 'key', longPoll: true, endpoint: 'export', cache: 'byWindow', params: ExportParams,
    summary: 'Classified export (at most 1,000,000 records: the most severe and most recent)', render: list(exportFilter, { truncates: true }),
  }),
  row({
    path: '/api/scan-export', variant: 'B', access: 'key', longPoll: true, endpoint: 'scan-export', cache: 'byWindow', params: ScanExportParams,
    summary: 'Active scan sources (research mapping platforms only with include_research=1)', render: list(scanExportFilter),
  }),
  row({
    path: '/api/stats', variant: 'B', access: 'public', endpoint: 'stats', cache: 'byWindow', params: StatsParams,
    summary: 'Total attacks, unique addresses, top countries and ports (public: 5 requests/minute without a key)', render: stats,
  }),
  row({
    path: '/api/recent', variant: 'B', access: 'public', endpoint: 'recent', cache: 'recent', params: RecentParams,
    summary: 'Most recent attack events (public: 5 requests/minute without a key)', render: recent(false),
  }),
  row({
    path: '/api/check', variant: 'B', access: 'key', endpoint: 'check', cache: 'none', params: CheckParams,
    summary: 'Whether an address is in each list and window, and why: what the sensors saw, its classification, enrichment and any exclusion', render: check,
  }),
];

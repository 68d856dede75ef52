// Variant B (API key): /api/dedup, /api/export, /api/scan-export need a subscription key (X-API-Key or
// key=); /api/stats and /api/recent are public. Parameters: common/api-params.ts.
import type { FastifyInstance } from 'fastify';
import { DedupParams, ExportParams, RecentParams, ScanExportParams, StatsParams, type DedupQuery, type ExportQuery, type RecentQuery, type ScanExportQuery, type StatsQuery } from '../../common/api-params.ts';
import { formatRecent } from '../formats/recent.ts';
import { dedupFilter, exportFilter, scanExportFilter } from '../query/lists.ts';
import { queryRecent } from '../query/recent.ts';
import { queryStats } from '../query/stats.ts';
import { respondDocument, respondList, type ResponderDeps } from './respond.ts';
import type { ApiRouteConfig } from './route-config.ts';

const KEY_SECURITY: Record<string, string[]>[] = [{ apiKeyHeader: [] }, { apiKeyQuery: [] }];
const OPTIONAL_KEY: Record<string, string[]>[] = [{}, ...KEY_SECURITY];

function config(access: ApiRouteConfig['access'], endpoint: string): ApiRouteConfig {
  return { variant: 'B', access, endpoint };
}

export async function variantBRoutes(app: FastifyInstance, deps: ResponderDeps): Promise<void> {
  app.get('/api/dedup', {
    config: config('key', 'dedup'),
    schema: { tags: ['variant B'], summary: 'Basic blocklist deduplicated by address; active scan sources merged unless include_scan=0', querystring: DedupParams, security: KEY_SECURITY },
  }, async (req, reply) => {
    const q = req.query as DedupQuery;
    return respondList(deps, req, reply, { filter: (now) => dedupFilter(q, now), format: q.format, hours: q.hours, download: q.download, truncates: false });
  });

  app.get('/api/export', {
    config: config('key', 'export'),
    schema: { tags: ['variant B'], summary: 'Classified export (at most 1,000,000 records: the most severe and most recent)', querystring: ExportParams, security: KEY_SECURITY },
  }, async (req, reply) => {
    const q = req.query as ExportQuery;
    return respondList(deps, req, reply, { filter: (now) => exportFilter(q, now), format: q.format, hours: q.hours, download: q.download, truncates: true });
  });

  app.get('/api/scan-export', {
    config: config('key', 'scan-export'),
    schema: { tags: ['variant B'], summary: 'Active scan sources (research mapping platforms only with include_research=1)', querystring: ScanExportParams, security: KEY_SECURITY },
  }, async (req, reply) => {
    const q = req.query as ScanExportQuery;
    return respondList(deps, req, reply, { filter: (now) => scanExportFilter(q, now), format: q.format, hours: q.hours, download: q.download, truncates: false });
  });

  app.get('/api/stats', {
    config: config('public', 'stats'),
    schema: { tags: ['variant B'], summary: 'Total attacks, unique addresses, top countries and ports (public: 5 requests/minute without a key)', querystring: StatsParams, security: OPTIONAL_KEY },
  }, async (req, reply) => {
    const q = req.query as StatsQuery;
    return respondDocument(deps, req, reply, { hours: q.hours, format: 'json', produce: async (now) => `${JSON.stringify(await queryStats(deps.pool, now, q.hours))}\n` });
  });

  app.get('/api/recent', {
    config: config('public', 'recent'),
    schema: { tags: ['variant B'], summary: 'Most recent attack events (public: 5 requests/minute without a key)', querystring: RecentParams, security: OPTIONAL_KEY },
  }, async (req, reply) => {
    const q = req.query as RecentQuery;
    return respondDocument(deps, req, reply, {
      format: q.format,
      produce: async (now) => formatRecent(await queryRecent(deps.pool, q.limit), q.format, false, now.toISOString()),
    });
  });
}

// The spec's variant B: GET /api/dedup, /api/export and /api/scan-export need a subscription API key
// (X-API-Key, or key=); /api/stats and /api/recent are public. Parameters: endpoint-params.ts.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { DedupParams, ExportParams, RecentParams, ScanExportParams, StatsParams } from '../query/endpoint-params.ts';
import { formatRecent } from '../render/recent.ts';
import { dedupFilter, exportFilter, scanExportFilter } from '../query/lists.ts';
import { queryRecent } from '../query/recent.ts';
import { queryStats } from '../query/stats.ts';
import { respondDocument, respondList, type ResponderDeps } from './respond.ts';
import type { ApiRouteConfig } from './route-config.ts';

const KEY_SECURITY: Record<string, string[]>[] = [{ apiKeyHeader: [] }, { apiKeyQuery: [] }];
const OPTIONAL_KEY: Record<string, string[]>[] = [{}, ...KEY_SECURITY];

const DEDUP: ApiRouteConfig = { variant: 'B', access: 'key', endpoint: 'dedup' };
const EXPORT: ApiRouteConfig = { variant: 'B', access: 'key', endpoint: 'export' };
const SCAN_EXPORT: ApiRouteConfig = { variant: 'B', access: 'key', endpoint: 'scan-export' };
const STATS: ApiRouteConfig = { variant: 'B', access: 'public', endpoint: 'stats' };
const RECENT: ApiRouteConfig = { variant: 'B', access: 'public', endpoint: 'recent' };

export async function apiKeyRoutes(fastify: FastifyInstance, deps: ResponderDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/api/dedup', {
    ...deps.guard(DEDUP, '/api/dedup'),
    schema: { tags: ['variant B'], summary: 'Basic blocklist deduplicated by address; active scan sources merged unless include_scan=0', querystring: DedupParams, security: KEY_SECURITY },
  }, async (req, reply) => {
    const q = req.query;
    return respondList(deps, DEDUP, req, reply, { filter: (now) => dedupFilter(q, now), format: q.format, hours: q.hours, download: q.download, truncates: false });
  });

  app.get('/api/export', {
    ...deps.guard(EXPORT, '/api/export'),
    schema: { tags: ['variant B'], summary: 'Classified export (at most 1,000,000 records: the most severe and most recent)', querystring: ExportParams, security: KEY_SECURITY },
  }, async (req, reply) => {
    const q = req.query;
    return respondList(deps, EXPORT, req, reply, { filter: (now) => exportFilter(q, now), format: q.format, hours: q.hours, download: q.download, truncates: true });
  });

  app.get('/api/scan-export', {
    ...deps.guard(SCAN_EXPORT, '/api/scan-export'),
    schema: { tags: ['variant B'], summary: 'Active scan sources (research mapping platforms only with include_research=1)', querystring: ScanExportParams, security: KEY_SECURITY },
  }, async (req, reply) => {
    const q = req.query;
    return respondList(deps, SCAN_EXPORT, req, reply, { filter: (now) => scanExportFilter(q, now), format: q.format, hours: q.hours, download: q.download, truncates: false });
  });

  app.get('/api/stats', {
    ...deps.guard(STATS, '/api/stats'),
    schema: { tags: ['variant B'], summary: 'Total attacks, unique addresses, top countries and ports (public: 5 requests/minute without a key)', querystring: StatsParams, security: OPTIONAL_KEY },
  }, (req, reply) => {
    const q = req.query;
    return respondDocument(deps, STATS, req, reply, { hours: q.hours, format: 'json', produce: async (now) => `${JSON.stringify(await queryStats(deps.pool, now, q.hours))}\n` });
  });

  app.get('/api/recent', {
    ...deps.guard(RECENT, '/api/recent'),
    schema: { tags: ['variant B'], summary: 'Most recent attack events (public: 5 requests/minute without a key)', querystring: RecentParams, security: OPTIONAL_KEY },
  }, (req, reply) => {
    const q = req.query;
    return respondDocument(deps, RECENT, req, reply, {
      format: q.format,
      produce: async (now) => formatRecent(await queryRecent(deps.pool, q.limit), q.format, false, now.toISOString()),
    });
  });
}

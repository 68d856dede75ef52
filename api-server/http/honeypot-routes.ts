// The spec's variant A: GET /api/honeypot/{dedup,stats,recent} with an optional bearer token. Without one a
// caller is served but limited to 5 requests per minute per address; a valid token is not limited; an
// invalid one is 401. Parameters: endpoint-params.ts.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { HoneypotDedupParams, HoneypotRecentParams, HoneypotStatsParams } from '../query/endpoint-params.ts';
import { formatRecent } from '../render/recent.ts';
import { dedupFilter } from '../query/lists.ts';
import { queryRecent } from '../query/recent.ts';
import { queryStats } from '../query/stats.ts';
import { respondDocument, respondList, type ResponderDeps } from './respond.ts';
import type { ApiRouteConfig } from './route-config.ts';

const BEARER: Record<string, string[]>[] = [{}, { bearerToken: [] }];

const DEDUP: ApiRouteConfig = { variant: 'A', access: 'public', endpoint: 'dedup' };
const STATS: ApiRouteConfig = { variant: 'A', access: 'public', endpoint: 'stats' };
const RECENT: ApiRouteConfig = { variant: 'A', access: 'public', endpoint: 'recent' };

export async function honeypotRoutes(fastify: FastifyInstance, deps: ResponderDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const path = { dedup: '/api/honeypot/dedup', stats: '/api/honeypot/stats', recent: '/api/honeypot/recent' };

  app.get(path.dedup, {
    ...deps.guard(DEDUP, path.dedup),
    schema: { tags: ['variant A'], summary: 'Attackers deduplicated by address, with the active scan sources', querystring: HoneypotDedupParams, security: BEARER },
  }, async (req, reply) => {
    const q = req.query;
    return respondList(deps, DEDUP, req, reply, { filter: (now) => dedupFilter(q, now), format: q.format, hours: q.hours, download: q.download, truncates: false });
  });

  app.get(path.stats, {
    ...deps.guard(STATS, path.stats),
    schema: { tags: ['variant A'], summary: 'Total attacks, unique addresses, top countries and ports', querystring: HoneypotStatsParams, security: BEARER },
  }, (req, reply) => {
    const q = req.query;
    return respondDocument(deps, STATS, req, reply, { hours: q.hours, format: 'json', produce: async (now) => `${JSON.stringify(await queryStats(deps.pool, now, q.hours))}\n` });
  });

  app.get(path.recent, {
    ...deps.guard(RECENT, path.recent),
    schema: { tags: ['variant A'], summary: 'Most recent attack events with the honeypot command', querystring: HoneypotRecentParams, security: BEARER },
  }, (req, reply) => {
    const q = req.query;
    return respondDocument(deps, RECENT, req, reply, {
      format: q.format,
      produce: async (now) => formatRecent(await queryRecent(deps.pool, q.limit), q.format, true, now.toISOString()),
    });
  });
}

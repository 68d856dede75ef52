// The blocklist API as one fastify context: one route per row of the endpoint table (endpoints.ts), each
// auth → limits → (cache or store) → response, plus /openapi.json and the API's metrics. Each step lives in
// its own file.
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import type { Logger } from '../../common/logging.ts';
import { parseTierQuotas } from '../keys/tiers.ts';
import { listenForRevocations } from '../keys/revocations.ts';
import { listenForExclusionChanges } from './exclusion-changes.ts';
import { createApiMetrics } from './api-metrics.ts';
import { createAuthenticator } from './auth.ts';
import { ResponseCache, parseCacheLifetimes } from './cache.ts';
import { ENDPOINTS } from './endpoints.ts';
import { routeGuard, type GuardDeps } from './guard.ts';
import { createLimiter } from './limits.ts';
import type { StorePools } from '../store/database.ts';
import { pruneCounters } from '../store/rate-counters.ts';
import { StoreListener } from '../store/listener.ts';
import { LongPolls } from './long-poll.ts';
import { openApiRoute, operationSchema, registerOpenApi } from './openapi.ts';
import type { ResponderDeps } from './respond.ts';

interface ApiOptions {
  /** The primary (keys, limits, quotas) and the read pool (lists, statistics). */
  pools: StorePools;
  log: Logger;
  registry: Registry;
  config: Pick<Config, 'anonymousPerMinute' | 'tierQuotas' | 'cacheMaxBytes' | 'cacheLifetimes' | 'keyCacheSeconds' | 'longPollsMax' | 'longPollsPerKey'>;
  /** The clock rate limits, quotas and list windows go by (default: the system clock). */
  clock?: () => Date;
}

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export async function blocklistApi(app: FastifyInstance, { pools, log, registry, config, clock }: ApiOptions): Promise<void> {
  const { pool } = pools;
  const metrics = createApiMetrics(registry);
  const cache = new ResponseCache({ maxBytes: config.cacheMaxBytes, lookups: metrics.cacheLookups });
  const auth = createAuthenticator({ ...pools, tiers: parseTierQuotas(config.tierQuotas), keyCacheSeconds: config.keyCacheSeconds });
  const limiter = createLimiter({ pool, anonymousPerMinute: config.anonymousPerMinute, rejections: metrics.limitRejections, clock });

  const prune = setInterval(() => void pruneCounters(pool).catch((err: Error) => log.warn({ err: { message: err.message } }, 'pruning rate counters failed')), 3_600_000);
  prune.unref();
  // One listening connection for this server: key revocations, changes to the exclusions (cached lists may
  // hold an address that must be left out now) and list data changes (long polls).
  const listener = new StoreListener(pool, log);
  listenForRevocations(listener, () => auth.forget());
  listenForExclusionChanges(listener, pool, log, (version) => cache.clear(version));
  const longPolls = new LongPolls({ pool, listener, log, limits: { total: config.longPollsMax, perSubject: config.longPollsPerKey }, metrics });
  await listener.start();
  // Held requests are answered (304) as soon as the server starts closing, so that closing does not wait for them.
  app.addHook('preClose', async () => longPolls.close());
  app.addHook('onClose', async () => {
    clearInterval(prune);
    await listener.close();
  });

  await registerOpenApi(app, VERSION);
  const guardDeps: GuardDeps = { auth, limiter, cache, metrics };
  const deps: ResponderDeps = { pool, readPool: pools.readPool, log, listReads: metrics.listReads, cache, lifetimes: parseCacheLifetimes(config.cacheLifetimes), release: VERSION, clock: clock ?? (() => new Date()), longPolls };
  for (const endpoint of ENDPOINTS) {
    app.get(endpoint.path, { ...routeGuard(guardDeps, endpoint), schema: operationSchema(endpoint) }, (req, reply) => endpoint.respond(deps, req, reply));
  }
  await app.register(openApiRoute);
}

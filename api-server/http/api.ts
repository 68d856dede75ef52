// The blocklist API as one fastify context: problem+json errors, then for every API route auth → limits →
// (cache or store) → response, plus /openapi.json and the API's metrics. Each step lives in its own file.
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import type pg from 'pg';
import type { Config } from '../../common/config.ts';
import type { Logger } from '../../common/logging.ts';
import { parseTierQuotas } from '../keys/tiers.ts';
import { listenForRevocations } from '../keys/revocations.ts';
import { createApiMetrics } from './api-metrics.ts';
import { createAuthenticator, type Caller } from './auth.ts';
import { ResponseCache, parseCacheLifetimes } from './cache.ts';
import { createLimiter, pruneCounters } from './limits.ts';
import { openApiRoute, registerOpenApi } from './openapi.ts';
import { installProblemHandlers } from './problem.ts';
import type { ApiRouteConfig } from './route-config.ts';
import type { ResponderDeps } from './respond.ts';
import { variantARoutes } from './variant-a.ts';
import { variantBRoutes } from './variant-b.ts';

export interface ApiOptions {
  pool: pg.Pool;
  log: Logger;
  registry: Registry;
  config: Pick<Config, 'anonymousPerMinute' | 'tierQuotas' | 'cacheMaxBytes' | 'cacheLifetimes' | 'keyCacheSeconds'>;
}

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export async function blocklistApi(app: FastifyInstance, { pool, log, registry, config }: ApiOptions): Promise<void> {
  installProblemHandlers(app);
  const metrics = createApiMetrics(registry);
  const cache = new ResponseCache({ maxBytes: config.cacheMaxBytes, lookups: metrics.cacheLookups });
  const auth = createAuthenticator({ pool, tiers: parseTierQuotas(config.tierQuotas), keyCacheSeconds: config.keyCacheSeconds });
  const limiter = createLimiter({ pool, anonymousPerMinute: config.anonymousPerMinute, rejections: metrics.limitRejections });

  // Attached per route (not as context-wide hooks) so each knows its route without a per-request lookup.
  // The common case of a cached answer (no credential, or a recently verified unmetered key) takes no
  // promise at all: callback hooks, finished synchronously.
  const guard: ResponderDeps['guard'] = (route: ApiRouteConfig, url: string) => {
    const timers = new Map<string, (seconds: number) => void>();
    const timerFor = (method: string, status: number) => {
      const id = `${method} ${status}`;
      let timer = timers.get(id);
      if (!timer) {
        const child = metrics.requestDuration.labels({ method, route: url, status: String(status) });
        timer = (seconds: number) => child.observe(seconds);
        timers.set(id, timer);
      }
      return timer;
    };
    const admit = (req: FastifyRequest, reply: FastifyReply, caller: Caller, done: (err?: Error) => void) => {
      const policy = limiter.policy(req, caller, route);
      if (!policy) return done();
      limiter.enforce(reply, caller, policy).then(() => done(), done);
    };
    return {
      preHandler: (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
        let caller: Caller | Promise<Caller>;
        try {
          caller = auth.authenticate(req, route);
        } catch (err) {
          return done(err as Error);
        }
        if (caller instanceof Promise) caller.then((c) => admit(req, reply, c, done), done);
        else admit(req, reply, caller, done);
      },
      onResponse: (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
        timerFor(req.method, reply.statusCode)(reply.elapsedTime / 1000);
        done();
      },
    };
  };

  const prune = setInterval(() => void pruneCounters(pool).catch((err: Error) => log.warn({ err: { message: err.message } }, 'pruning rate counters failed')), 3_600_000);
  prune.unref();
  const revocations = listenForRevocations(pool, log, () => auth.forget());
  await revocations.ready;
  app.addHook('onClose', async () => {
    clearInterval(prune);
    await revocations.close();
  });

  await registerOpenApi(app, VERSION);
  const deps: ResponderDeps = { pool, log, cache, lifetimes: parseCacheLifetimes(config.cacheLifetimes), guard };
  await app.register(variantARoutes, deps);
  await app.register(variantBRoutes, deps);
  await app.register(openApiRoute);
}

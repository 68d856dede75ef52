// The api-server's composition root: the fastify server built from its plugins, each a capability with its
// routes and their schemas (http/: health, metrics, the ingest route, the blocklist API; website/: the member
// centre), on the server-wide layers every route shares (security headers, problem answers, the access log).
// Nothing below this file imports it, and http/ and website/ do not import each other (docs/design.md
// "Layers"). No I/O happens here beyond what the plugins register; listening and shutdown belong to `serve`.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RawServerDefault } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '../common/logging.ts';
import { loadConfig, type Config } from './config.ts';
import { accessLog } from './http/access-log.ts';
import { blocklistApi } from './http/blocklist-api.ts';
import { healthRoutes, startupGate, type Startup } from './http/health.ts';
import { ingestRoute } from './http/ingest-route.ts';
import { metricsRoute } from './http/metrics.ts';
import { answerClientError, problemAnswers, sendNotFoundProblem } from './http/problem.ts';
import { securityHeaderLayer } from './http/security-headers.ts';
import type { Database, StorePools } from './store/database.ts';
import { sendPageNotFound, wantsPage } from './website/pages.ts';
import { website } from './website/plugin.ts';

interface ServerDeps {
  /** The primary's pool, and the read pool for lists and statistics (the primary's when omitted). */
  db: Pick<Database, 'pool'> & Partial<Database>;
  log: Logger;
  registry: Registry;
  /** Settings of the API (limits, quotas, cache, trusted proxies); the defaults when omitted. */
  config?: Config;
  /** Enables POST /internal/v1/events (sensors pushing logs) with this bearer token. */
  ingestToken?: string;
  /** The clock rate limits, quotas and list windows go by (default: the system clock). */
  clock?: () => Date;
  /**
   * Where `serve`'s start is: until it is done, everything but health and metrics answers 503. Omitted, the
   * server is ready at once (its caller opened and migrated the store first).
   */
  startup?: Startup;
}

export async function buildServer({ db, log, registry, config = loadConfig({ env: {} }), ingestToken, clock, startup }: ServerDeps): Promise<FastifyInstance> {
  const pools: StorePools = { pool: db.pool, readPool: db.readPool ?? db.pool };
  const securityHeaders = securityHeaderLayer();
  const app = Fastify<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    loggerInstance: log,
    // One line per request from the access log's onResponse hook instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request (pino builds one for every request otherwise, a measurable share of a
    // cached answer): lines about a request carry its id themselves (`req.id` in the access line, `reqId`).
    childLoggerFactory: (logger) => logger,
    // Idle keep-alive sockets close at once on shutdown; busy ones finish their response first.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    // X-Forwarded-For only from the configured proxies (TRUSTED_PROXIES); else the socket's address.
    trustProxy: config.trustedProxies.length ? config.trustedProxies : false,
    // A request Node cannot parse is answered like any other error: problem+json with the security headers.
    clientErrorHandler: answerClientError,
    // Every head written carries the security headers (and CORS on the public endpoints).
    http: securityHeaders.http,
  });
  // Server-wide, before any route: they share the server's context (fastify-plugin).
  await app.register(securityHeaders.plugin);
  // Every error of every route is problem+json: a store that is down is a 503 with Retry-After everywhere.
  await app.register(problemAnswers);
  await app.register(accessLog, { log });
  if (startup) await app.register(startupGate, { startup });
  // The capabilities, each in a context of its own.
  await app.register(healthRoutes, { startup });
  await app.register(metricsRoute, { registry });
  if (ingestToken) await app.register(ingestRoute, { pool: pools.pool, registry, token: ingestToken });
  await app.register(blocklistApi, { pools, log, registry, config, clock });
  await app.register(website, { pools, log, config, clock });
  // One not-found handler for the whole server: a page for browsers, problem+json for everything else.
  app.setNotFoundHandler((req, reply) => (wantsPage(req) ? sendPageNotFound(req, reply) : sendNotFoundProblem(req, reply)));
  return app;
}

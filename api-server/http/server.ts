// Builds the api-server's fastify instance from its parts. No I/O happens here beyond what the plugins
// register; listening and shutdown belong to the `serve` command.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RawServerDefault } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '../../common/logging.ts';
import type { Database } from '../store/database.ts';
import { ingestRoute } from '../ingest/route.ts';
import { healthRoutes } from './health.ts';
import { metricsRoute } from './metrics.ts';
import { loadConfig, type Config } from '../config.ts';
import { blocklistApi } from './blocklist-api.ts';
import { answerClientError, installProblemHandlers, sendNotFoundProblem } from './problem.ts';
import { securityHeaderLayer } from './security-headers.ts';
import { sendPageNotFound, wantsPage } from '../website/pages.ts';
import { website } from '../website/plugin.ts';

interface ServerDeps {
  db: Database;
  log: Logger;
  registry: Registry;
  /** Settings of the API (limits, quotas, cache, trusted proxies); the defaults when omitted. */
  config?: Config;
  /** Enables POST /internal/v1/events (sensors pushing logs) with this bearer token. */
  ingestToken?: string;
  /** The clock rate limits, quotas and list windows go by (default: the system clock). */
  clock?: () => Date;
}

export async function buildServer({ db, log, registry, config = loadConfig({ env: {} }), ingestToken, clock }: ServerDeps): Promise<FastifyInstance> {
  const securityHeaders = securityHeaderLayer();
  const app = Fastify<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger>({
    loggerInstance: log,
    // One line per request from our onResponse hook instead of fastify's two.
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
  securityHeaders.install(app);
  // Every error of every route is problem+json: a store that is down is a 503 with Retry-After everywhere.
  installProblemHandlers(app);
  // A callback hook, not an async one: no promise per request; the line's object is built only when written.
  app.addHook('onResponse', (req, reply, done) => {
    if (log.isLevelEnabled('info')) log.info({ req, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    done();
  });
  await app.register(healthRoutes, { pool: db.pool });
  await app.register(metricsRoute, { registry });
  if (ingestToken) await app.register(ingestRoute, { pool: db.pool, registry, token: ingestToken });
  await app.register(blocklistApi, { pool: db.pool, log, registry, config, clock });
  await app.register(website, { pool: db.pool, log, config, clock });
  // One not-found handler for the whole server: a page for browsers, problem+json for everything else.
  app.setNotFoundHandler((req, reply) => (wantsPage(req) ? sendPageNotFound(req, reply) : sendNotFoundProblem(req, reply)));
  return app;
}

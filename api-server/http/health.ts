// Liveness and readiness. /healthz answers while the process runs. /readyz answers 200 once the server has
// started — its store reached and migrated — and from then on: readiness says whether this pod can answer,
// not whether the store does. An outage of the store is every pod's at once; were readiness to follow it,
// every pod would leave its Service together and clients would meet refused connections, where a pod that
// stays answers each request as well as the store allows: lists from the standbys, and 503 with Retry-After
// for what needs the primary. While `serve` waits for its store at start, everything but health and metrics
// answers 503 with Retry-After (startupGate).
import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { StoreUnavailableError, STARTING } from '../store/unavailable.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answered while the server is still starting (health and metrics): the start-up gate lets it through. */
    servesWhileStarting?: boolean;
  }
}

/** Where a server is in its start: waiting for its store (and why), or ready. */
export class Startup {
  #ready = false;
  #waitingFor = 'the database';

  get ready(): boolean {
    return this.#ready;
  }

  /** What the start waits for, as /readyz tells it (no host names or credentials: /readyz is public). */
  get waitingFor(): string {
    return this.#waitingFor;
  }

  waiting(reason: string): void {
    this.#waitingFor = reason;
  }

  done(): void {
    this.#ready = true;
  }
}

interface HealthOptions {
  /** Omitted: the server is ready as soon as it listens (its caller opened and migrated the store first). */
  startup?: Startup;
}

export async function healthRoutes(app: FastifyInstance, { startup }: HealthOptions): Promise<void> {
  const config = { servesWhileStarting: true };
  app.get('/healthz', { logLevel: 'warn', config }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn', config }, async (_req, reply) => {
    if (!startup || startup.ready) return { status: 'ready' };
    reply.code(503).header('retry-after', '5');
    return { status: 'starting', reason: `waiting for ${startup.waitingFor}` };
  });
}

/**
 * Until the start is done, every route but those that serve while starting answers 503 with Retry-After: the
 * store may lack the tables a route reads. Registered on the server (fastify-plugin), before any route, and
 * only by `serve`; one synchronous check per request afterwards.
 */
export const startupGate = fastifyPlugin(
  async (app: FastifyInstance, { startup }: { startup: Startup }) => {
    app.addHook('onRequest', (req, _reply, done) => {
      if (startup.ready || req.routeOptions.config.servesWhileStarting) return done();
      done(new StoreUnavailableError(STARTING));
    });
  },
  { name: 'blockfeed-startup-gate', fastify: '5.x' },
);

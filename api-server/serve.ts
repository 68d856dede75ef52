// `blockfeed serve`: open the store, listen, wait for the store and migrate it, then serve; on SIGTERM stop
// accepting, drain in-flight requests, close the pools and stop the embedded database.
//
// The server listens before its store answers: a PostgreSQL that is not up yet (a Helm install that creates
// the database beside the api-server, a failover under way) is waited for with back-off, each attempt logged
// with the reason, while /healthz answers (the process is alive and need not be restarted), /readyz says what
// it waits for, and every other request is a 503 with Retry-After. Then the migrations run and the server is
// ready. What is not the store being unreachable (a migration that fails, a schema newer than this release)
// still stops `serve`.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { UserError } from '../common/errors.ts';
import type { Logger } from '../common/logging.ts';
import { createRegistry } from '../common/metrics.ts';
import { untilSignal } from '../common/cli-support.ts';
import type { CommandContext } from './cli-context.ts';
import { describeDatabaseUrl, openDatabase, type Database } from './store/database.ts';
import { migrate } from './store/migrate.ts';
import { storeUnavailableReason } from './store/unavailable.ts';
import { isEmpty, loadDemo } from './demo/demo.ts';
import { buildServer } from './app.ts';
import { Startup } from './http/health.ts';
import { scheduleRetention } from './retention/retention.ts';

export interface RunningServer {
  app: FastifyInstance;
  db: Database;
  /** Drain and release everything; safe to call twice. */
  close(): Promise<void>;
}

export interface ServeOptions {
  /** Load demo events first when the store holds no event yet (`make run` on a fresh checkout). */
  demoIfEmpty?: boolean;
  /** Ends a start still waiting for its store (a SIGTERM before the store came): startServer then rejects. */
  signal?: AbortSignal;
}

/** Events `serve --demo-if-empty` loads: enough for every list to show something, quick on a laptop. */
const FIRST_RUN_DEMO_EVENTS = 100_000;

/** Back-off between attempts to reach the store at start: doubling from 1 s to at most 15 s. */
const STORE_WAIT_MS = [1000, 2000, 4000, 8000, 15_000];

/**
 * Migrates the store once it can be reached; until then tries again with back-off, saying why each time.
 * Rejects with what is not the store being unreachable, or when `signal` aborts.
 */
async function migrateOnceReachable(db: Database, log: Logger, startup: Startup, signal: AbortSignal | undefined): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await migrate(db.pool, log);
      return;
    } catch (err) {
      // A migration cut off by a lost connection comes wrapped, its cause the loss (migrate.ts rolls it back).
      const reason = storeUnavailableReason(err) ?? storeUnavailableReason((err as { cause?: unknown }).cause);
      if (reason === undefined) throw err;
      const delay = STORE_WAIT_MS[Math.min(attempt, STORE_WAIT_MS.length) - 1] ?? 15_000;
      startup.waiting(`the database: ${reason}`);
      log.warn({ database: describeDatabaseUrl(db.url), reason, attempt, retryInMs: delay }, 'waiting for the database');
      await sleep(delay, undefined, { signal });
    }
  }
}

/** Listens, then waits for the store and migrates it; resolves once the server is ready. */
export async function startServer({ config, log }: CommandContext, options: ServeOptions = {}): Promise<RunningServer> {
  // serve supervises the embedded server: a crashed one is started again while requests answer 503.
  const db = await openDatabase({ config, log, applicationName: 'blockfeed-serve', superviseEmbedded: true });
  const startup = new Startup();
  let app: FastifyInstance | undefined;
  let stopRetention: (() => void) | undefined;
  try {
    app = await buildServer({ db, log, config, registry: createRegistry({ program: 'api-server' }), ingestToken: config.ingestToken, startup });
    await app.listen({ port: config.port, host: config.host }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') throw new UserError(`port ${config.port} is already in use on ${config.host}; set PORT to a free port`);
      if (err.code === 'EACCES') throw new UserError(`not allowed to listen on port ${config.port}; set PORT to a port above 1023`);
      throw err;
    });
    await migrateOnceReachable(db, log, startup, options.signal);
    if (options.demoIfEmpty && (await isEmpty(db.pool))) {
      startup.waiting('the demo data to load');
      log.info({ events: FIRST_RUN_DEMO_EVENTS }, 'empty store: loading demo data (blockfeed demo)');
      const { inserted } = await loadDemo(db.pool, log, { events: FIRST_RUN_DEMO_EVENTS });
      log.info({ inserted }, 'demo data loaded');
    }
    stopRetention = scheduleRetention(db.pool, log);
    startup.done();
    log.info({ readsFrom: db.readPool === db.pool ? 'primary' : describeDatabaseUrl(db.readUrl) }, 'ready');
  } catch (err) {
    stopRetention?.();
    await app?.close();
    await db.close();
    throw err;
  }
  const running = app;
  let closing: Promise<void> | undefined;
  return {
    app: running,
    db,
    close: () =>
      (closing ??= (async () => {
        const grace = setTimeout(() => {
          log.warn({ seconds: config.shutdownGraceSeconds }, 'grace period over: closing remaining connections');
          running.server.closeAllConnections();
        }, config.shutdownGraceSeconds * 1000);
        try {
          stopRetention?.();
          await running.close();
        } finally {
          clearTimeout(grace);
          await db.close();
        }
      })()),
  };
}

export async function serve(ctx: CommandContext, options: ServeOptions = {}): Promise<void> {
  const { signalled, dispose } = untilSignal(ctx.log);
  const stopping = new AbortController();
  void signalled.then(() => stopping.abort());
  try {
    const server = await startServer(ctx, { ...options, signal: stopping.signal });
    await signalled;
    await server.close();
  } catch (err) {
    // Stopped while still waiting for the store: an orderly end, not a failure.
    if (!stopping.signal.aborted) throw err;
  } finally {
    dispose();
  }
  ctx.log.info('stopped');
}

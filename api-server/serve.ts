// `blockfeed serve`: open the store, migrate, listen; on SIGTERM stop accepting, drain in-flight requests,
// close the pool and stop the embedded database.
import type { FastifyInstance } from 'fastify';
import { UserError } from '../common/errors.ts';
import { createRegistry } from '../common/metrics.ts';
import { untilSignal } from '../common/cli-support.ts';
import type { CommandContext } from './cli-context.ts';
import { openDatabase, type Database } from './store/database.ts';
import { migrate } from './store/migrate.ts';
import { isEmpty, loadDemo } from './demo/demo.ts';
import { buildServer } from './app.ts';
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
}

/** Events `serve --demo-if-empty` loads: enough for every list to show something, quick on a laptop. */
const FIRST_RUN_DEMO_EVENTS = 100_000;

export async function startServer({ config, log }: CommandContext, options: ServeOptions = {}): Promise<RunningServer> {
  // serve supervises the embedded server: a crashed one is started again while requests answer 503.
  const db = await openDatabase({ config, log, applicationName: 'blockfeed-serve', superviseEmbedded: true });
  let app: FastifyInstance | undefined;
  let stopRetention: (() => void) | undefined;
  try {
    await migrate(db.pool, log);
    if (options.demoIfEmpty && (await isEmpty(db.pool))) {
      log.info({ events: FIRST_RUN_DEMO_EVENTS }, 'empty store: loading demo data (blockfeed demo)');
      const { inserted } = await loadDemo(db.pool, log, { events: FIRST_RUN_DEMO_EVENTS });
      log.info({ inserted }, 'demo data loaded');
    }
    stopRetention = scheduleRetention(db.pool, log);
    app = await buildServer({ db, log, config, registry: createRegistry({ program: 'api-server' }), ingestToken: config.ingestToken });
    await app.listen({ port: config.port, host: config.host }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') throw new UserError(`port ${config.port} is already in use on ${config.host}; set PORT to a free port`);
      if (err.code === 'EACCES') throw new UserError(`not allowed to listen on port ${config.port}; set PORT to a port above 1023`);
      throw err;
    });
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
  const server = await startServer(ctx, options);
  await signalled;
  await server.close();
  dispose();
  ctx.log.info('stopped');
}

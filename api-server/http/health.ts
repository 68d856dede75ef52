// Liveness and readiness. /healthz answers while the process runs; /readyz only while the store answers,
// so a load balancer stops sending traffic to a replica that lost its database.
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';

interface HealthOptions {
  pool: pg.Pool;
}

export async function healthRoutes(app: FastifyInstance, { pool }: HealthOptions): Promise<void> {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (_req, reply) => {
    try {
      await pool.query({ text: 'select 1', query_timeout: 2000 } as pg.QueryConfig);
      return { status: 'ready' };
    } catch (err) {
      reply.code(503).header('retry-after', '5');
      return { status: 'unavailable', reason: `database: ${(err as Error).message}` };
    }
  });
}

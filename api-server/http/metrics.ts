import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

export async function metricsRoute(app: FastifyInstance, { registry }: { registry: Registry }): Promise<void> {
  app.get('/metrics', { logLevel: 'warn', config: { servesWhileStarting: true } }, async (_req, reply) => {
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
}

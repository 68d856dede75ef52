// One access line per request, from every plugin's routes: registered on the server in the server's own
// context (fastify-plugin). fastify's own request logging is off (app.ts): it writes two lines per request.
import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { Logger } from '../../common/logging.ts';

export const accessLog = fastifyPlugin(
  async (app: FastifyInstance, { log }: { log: Logger }) => {
    // A callback hook, not an async one: no promise per request; the line's object is built only when written.
    app.addHook('onResponse', (req, reply, done) => {
      if (log.isLevelEnabled('info')) log.info({ req, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
      done();
    });
  },
  { name: 'blockfeed-access-log', fastify: '5.x' },
);

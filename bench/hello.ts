// The baseline of bench/serve: a bare fastify route, no logging, no plugins, answering a JSON document of
// about the size and shape of a cached /api/stats answer (~180 bytes), so both sides write similar bytes.
// With HEADERS=1 it also sends the headers such an answer carries (security, CORS, cache validators): the
// share of the gap that is those headers' cost in Node and fastify, not the route's work.
import Fastify from 'fastify';
import { CROSS_ORIGIN_READ_HEADERS, SECURITY_HEADERS } from '../api-server/http/security-headers.ts';

const CACHED_ANSWER_HEADERS = {
  'cache-control': 'public, max-age=1800',
  age: '0',
  'last-modified': new Date(0).toUTCString(),
  etag: '"HfgdkuneGYmz3HBMIVP3MwyA7zeib03b"',
  ...SECURITY_HEADERS,
  ...CROSS_ORIGIN_READ_HEADERS,
};
const withHeaders = process.env.HEADERS === '1';

const app = Fastify({ logger: false });
app.get('/', async (_req, reply) => {
  if (withHeaders) reply.headers(CACHED_ANSWER_HEADERS);
  return {
    generated_at: new Date(0).toISOString(),
    window_hours: 24,
    total_attacks: 10000,
    unique_ips: 10000,
    top_countries: [{ country: 'CN', attacks: 10000, ips: 10000 }],
    top_ports: [],
  };
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.stdout.write('ready\n');

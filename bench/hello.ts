// The baseline of bench/serve: a bare fastify route, no logging, no plugins, answering a JSON document of
// about the size and shape of a cached /api/stats answer (~180 bytes), so both sides write similar bytes.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/', async () => ({
  generated_at: new Date(0).toISOString(),
  window_hours: 24,
  total_attacks: 10000,
  unique_ips: 10000,
  top_countries: [{ country: 'CN', attacks: 10000, ips: 10000 }],
  top_ports: [],
}));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.stdout.write('ready\n');

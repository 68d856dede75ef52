// bench/export: the uncached `/api/export?hours=720&format=txt` over 1,000,000 matching addresses against
// PostgreSQL's own COPY of the same addresses (psql \copy to /dev/null), alternating, in the same run.
// Targets: median time ≤ 1.5× COPY's; server peak RSS ≤ 250 MiB. Then the same with 1,000 exclusions in
// force (the lists' guard, query/list-sql.ts listableSql), to say what they cost.
import { addressesSql } from '../api-server/query/list-sql.ts';
import { exportFilter } from '../api-server/query/lists.ts';
import type { ExportQuery } from '../api-server/query/endpoint-params.ts';
import { benchStore, median, requireCommands, startServeChild, timeCommand } from './harness.ts';

const ADDRESSES = Number(process.env.BENCH_ADDRESSES ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

requireCommands('psql', 'curl');
const store = await benchStore(ADDRESSES, 720);
// The cache is off: every request goes to the store.
const server = await startServeChild(store.url, { BLOCKFEED_CACHE_MAX_BYTES: '0' });
try {
  const url = `${server.base}/api/export?hours=720&format=txt`;
  const query: ExportQuery = { type: 'all', source: 'all', service: 'all', level: 'all', precision: 'standard', hours: 720, include_research: 0, format: 'txt', download: 0 };
  const copySql = addressesSql(exportFilter(query, new Date()));
  const countLines = (await (await fetch(url, { headers: { 'x-api-key': store.key } })).text()).split('\n').length - 1;
  if (countLines !== ADDRESSES) throw new Error(`expected ${ADDRESSES} addresses from the API, got ${countLines}`);

  const measure = () => {
    const api: number[] = [];
    const copy: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      copy.push(timeCommand('psql', ['-X', '-q', store.url, '-c', `\\copy (${copySql.replace(/\s+/g, ' ')}) to '/dev/null'`]));
      api.push(timeCommand('curl', ['-sf', '-o', '/dev/null', '-H', `X-API-Key: ${store.key}`, url]));
    }
    return { api, copy };
  };
  const f = (xs: number[]) => `median ${median(xs).toFixed(3)} s  (${xs.map((x) => x.toFixed(3)).join(' ')})`;
  const plain = measure();
  const ratio = median(plain.api) / median(plain.copy);
  const rss = await server.peakRssMiB();

  // 1,000 exclusions in force: 900 /28s spread over the addresses (14,400 of them left out) and 100 IPv6 networks.
  await store.pool.query(
    `insert into exclusions (network, reason, created_by)
     select set_masklen('11.0.0.0'::inet + (g * ${Math.floor(ADDRESSES / 900)}), 28)::cidr, 'bench', 'bench' from generate_series(0, 899) g`,
  );
  await store.pool.query(`insert into exclusions (network, reason, created_by) select ('2001:db8:' || to_hex(g) || '::/48')::cidr, 'bench', 'bench' from generate_series(1, 100) g`);
  const left = (await (await fetch(url, { headers: { 'x-api-key': store.key } })).text()).split('\n').length - 1;
  const excluded = measure();
  process.stdout.write(
    `bench/export: ${ADDRESSES} addresses, ${ROUNDS} rounds\n` +
      `  PostgreSQL COPY to /dev/null  ${f(plain.copy)}\n` +
      `  GET /api/export (uncached)    ${f(plain.api)}\n` +
      `  ratio ${ratio.toFixed(2)}x COPY (target <= 1.50x) ${ratio <= 1.5 ? 'PASS' : 'FAIL'}\n` +
      `  server peak RSS ${rss.toFixed(0)} MiB (target <= 250 MiB) ${rss <= 250 ? 'PASS' : 'FAIL'}\n` +
      `  with 1,000 exclusions in force (${ADDRESSES - left} addresses left out):\n` +
      `  PostgreSQL COPY to /dev/null  ${f(excluded.copy)}\n` +
      `  GET /api/export (uncached)    ${f(excluded.api)}: ${(median(excluded.api) / median(plain.api)).toFixed(2)}x the export without them, ` +
      `${(median(excluded.api) / median(excluded.copy)).toFixed(2)}x COPY\n`,
  );
} finally {
  await server.stop();
  await store.close();
}

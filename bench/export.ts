// bench/export: the uncached `/api/export?hours=720&format=txt` over 1,000,000 matching addresses against
// PostgreSQL's own COPY of the same addresses (psql \copy to /dev/null), alternating, in the same run.
// Targets: median time ≤ 1.5× COPY's; server peak RSS ≤ 250 MiB.
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

  const api: number[] = [];
  const copy: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    copy.push(timeCommand('psql', ['-X', '-q', store.url, '-c', `\\copy (${copySql.replace(/\s+/g, ' ')}) to '/dev/null'`]));
    api.push(timeCommand('curl', ['-sf', '-o', '/dev/null', '-H', `X-API-Key: ${store.key}`, url]));
  }
  const ratio = median(api) / median(copy);
  const rss = await server.peakRssMiB();
  process.stdout.write(
    `bench/export: ${ADDRESSES} addresses, ${ROUNDS} rounds\n` +
      `  PostgreSQL COPY to /dev/null  median ${median(copy).toFixed(3)} s  (${copy.map((s) => s.toFixed(3)).join(' ')})\n` +
      `  GET /api/export (uncached)    median ${median(api).toFixed(3)} s  (${api.map((s) => s.toFixed(3)).join(' ')})\n` +
      `  ratio ${ratio.toFixed(2)}x COPY (target <= 1.50x) ${ratio <= 1.5 ? 'PASS' : 'FAIL'}\n` +
      `  server peak RSS ${rss.toFixed(0)} MiB (target <= 250 MiB) ${rss <= 250 ? 'PASS' : 'FAIL'}\n`,
  );
} finally {
  await server.stop();
  await store.close();
}

// Operational surfaces of the api-server: configured cache lifetimes, and the /metrics exposition is valid for Prometheus (`promtool check metrics`, Debian's
// prometheus package) and carries the API's own series after some traffic.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { apiOnFreshDatabase, startApi } from '../../../support/api-server.ts';
import { freshDatabase } from '../../../support/db.ts';

describe('configured cache lifetimes', () => {
  it('BLOCKFEED_CACHE_LIFETIMES reaches the responses', async () => {
    const db = await freshDatabase();
    const api = await startApi(db.url, { cacheLifetimes: 'upTo24h=900,over72h=5400' });
    try {
      const day = await fetch(`${api.base}/api/stats`);
      expect(day.headers.get('cache-control')).toMatch(/max-age=(900|899)$/);
      const week = await fetch(`${api.base}/api/stats?hours=168`);
      expect(week.headers.get('cache-control')).toMatch(/max-age=(5400|5399)$/);
    } finally {
      await api.close();
      await db.drop();
    }
  });
});

describe('api-server /metrics', () => {
  const server = apiOnFreshDatabase();

  it('is clean under promtool check metrics and names the API series', async () => {
    await fetch(`${server.api.base}/api/stats`);
    await fetch(`${server.api.base}/api/stats`); // a cache hit
    await fetch(`${server.api.base}/api/export`); // 401: no key
    const text = await (await fetch(`${server.api.base}/metrics`)).text();
    for (const name of ['blockfeed_http_request_duration_seconds', 'blockfeed_response_cache_lookups_total', 'process_cpu_user_seconds_total']) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.error).toBeUndefined();
    expect(`${check.stdout}${check.stderr}`).toBe('');
    expect(check.status).toBe(0);
  });
});

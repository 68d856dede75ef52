// The API's bound Prometheus series render as prom-client's own would: cumulative buckets with `le`
// (a value equal to a bound counts in that bucket), +Inf, _sum, _count, the registry's default labels.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BoundCounter, BoundHistogram } from '../../../api-server/http/bound-metrics.ts';

describe('bound metrics', () => {
  it('a histogram series counts each observation once, in the first bucket whose bound it does not exceed', async () => {
    const registry = new Registry();
    registry.setDefaultLabels({ program: 't' });
    const h = new BoundHistogram({ name: 't_seconds', help: 'test', buckets: [1, 0.1], registers: [registry] });
    const observe = h.bind({ route: '/a', status: '200' });
    for (const v of [0.05, 0.1, 0.5, 3]) observe(v);
    expect(h.bind({ status: '200', route: '/a' })).not.toBe(observe);
    h.bind({ status: '200', route: '/a' })(0.2); // the same series, bound again
    expect(await registry.metrics()).toBe(
      [
        '# HELP t_seconds test',
        '# TYPE t_seconds histogram',
        't_seconds_bucket{route="/a",status="200",le="0.1",program="t"} 2',
        't_seconds_bucket{route="/a",status="200",le="1",program="t"} 4',
        't_seconds_bucket{route="/a",status="200",le="+Inf",program="t"} 5',
        't_seconds_sum{route="/a",status="200",program="t"} 3.85',
        't_seconds_count{route="/a",status="200",program="t"} 5',
        '',
      ].join('\n'),
    );
    registry.resetMetrics();
    observe(2);
    expect(await registry.metrics()).toContain('t_seconds_count{route="/a",status="200",program="t"} 1');
  });

  it('a counter series adds up through its bound function and through inc', async () => {
    const registry = new Registry();
    const c = new BoundCounter({ name: 't_total', help: 'test', registers: [registry] });
    const hit = c.bind({ endpoint: 'stats', result: 'hit' });
    hit();
    hit();
    c.inc({ result: 'hit', endpoint: 'stats' }, 3);
    expect(await registry.metrics()).toBe('# HELP t_total test\n# TYPE t_total counter\nt_total{endpoint="stats",result="hit"} 5\n');
  });
});

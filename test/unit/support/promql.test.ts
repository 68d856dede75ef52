// The helpers the e2e tier uses to check the chart's Grafana dashboard against a live Prometheus: if they
// missed a metric name, a panel on a metric that does not exist would pass unnoticed.
import { describe, expect, it } from 'vitest';
import { dashboardQueries, metricNames, substituteVariables } from '../../support/promql.ts';

describe('metricNames', () => {
  it('finds the selectors, not functions, labels, grouping clauses, durations or strings', () => {
    expect(metricNames('sum by (namespace, name) (rate(blockfeed_pull_total{result!~"changed|unchanged", name=~"a.*"}[5m])) > 0')).toEqual(['blockfeed_pull_total']);
    expect(metricNames('histogram_quantile(0.95, sum by (route, le) (rate(x_bucket[1m])))')).toEqual(['x_bucket']);
    expect(metricNames('time() - max by (namespace) (a_seconds) > 93600 unless on (namespace) b offset 5m')).toEqual(['a_seconds', 'b']);
    expect(metricNames('sum(rate(x_count{status=~"5.."}[1m])) / sum without (le) (rate(y_count[1m])) * 1e3')).toEqual(['x_count', 'y_count']);
    expect(metricNames('count(up{job="by (x)"}) or vector(0)')).toEqual(['up']);
    expect(metricNames('a + on (x) group_left (y) b')).toEqual(['a', 'b']);
  });
});

describe('substituteVariables', () => {
  it('replaces every form and refuses unknown variables', () => {
    expect(substituteVariables('rate(x{n=~"$ns",m=~"${sub}",o=~"${sub:regex}",p=~"[[ns]]"}[$__rate_interval])', { ns: '.*', sub: 'a|b', __rate_interval: '1m' })).toBe(
      'rate(x{n=~".*",m=~"a|b",o=~"a|b",p=~".*"}[1m])',
    );
    expect(() => substituteVariables('x[$__range]', {})).toThrow(/\$__range/);
  });
});

describe('dashboardQueries', () => {
  it('collects panel targets (rows included) and the selectors of query variables', () => {
    const q = dashboardQueries({
      panels: [{ title: 'A', targets: [{ expr: 'a', refId: 'A' }] }, { title: 'row', panels: [{ title: 'B', targets: [{ expr: 'b', refId: 'A' }, { refId: 'B' }] }] }],
      templating: { list: [{ name: 'ds', type: 'datasource' }, { name: 'ns', type: 'query', query: { query: 'label_values(c{x="1"}, namespace)' } }, { name: 'q', type: 'query', query: 'label_values(job)' }] },
    });
    expect(q).toEqual([
      { where: 'panel "A" A', expr: 'a' },
      { where: 'panel "B" A', expr: 'b' },
      { where: 'variable $ns', expr: 'c{x="1"}' },
      { where: 'variable $q', expr: 'group by (job) ({job!=""})' },
    ]);
  });
});

// The API's Prometheus series, on the program's own registry. The two recorded on every request are bound
// series (bound-metrics.ts); rejections are rare and use prom-client's Counter.
import { Counter, type Registry } from 'prom-client';
import { BoundCounter, BoundHistogram } from './bound-metrics.ts';

export interface ApiMetrics {
  /** Labels method, route, status. */
  requestDuration: BoundHistogram;
  /** Labels endpoint, result (hit or miss). */
  cacheLookups: BoundCounter;
  limitRejections: Counter<'policy'>;
}

export function createApiMetrics(registry: Registry): ApiMetrics {
  return {
    requestDuration: new BoundHistogram({
      name: 'blockfeed_http_request_duration_seconds',
      help: 'Time to answer an API request, by route and status',
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    cacheLookups: new BoundCounter({
      name: 'blockfeed_response_cache_lookups_total',
      help: 'Response cache lookups by endpoint and result (hit or miss)',
      registers: [registry],
    }),
    limitRejections: new Counter({
      name: 'blockfeed_rate_limit_rejections_total',
      help: 'Requests refused with 429, by policy (anonymous rate limit or tier quota)',
      labelNames: ['policy'],
      registers: [registry],
    }),
  };
}

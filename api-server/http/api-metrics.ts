// The API's Prometheus series, on the program's own registry.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface ApiMetrics {
  requestDuration: Histogram<'method' | 'route' | 'status'>;
  cacheLookups: Counter<'endpoint' | 'result'>;
  limitRejections: Counter<'policy'>;
  listReads: Counter<'source'>;
  longPolls: Gauge;
  longPollAnswers: Counter<'outcome'>;
}

export function createApiMetrics(registry: Registry): ApiMetrics {
  return {
    requestDuration: new Histogram({
      name: 'blockfeed_http_request_duration_seconds',
      help: 'Time to answer an API request, by route and status (a long poll: without the time it was held)',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    cacheLookups: new Counter({
      name: 'blockfeed_response_cache_lookups_total',
      help: 'Response cache lookups by endpoint and result (hit or miss)',
      labelNames: ['endpoint', 'result'],
      registers: [registry],
    }),
    limitRejections: new Counter({
      name: 'blockfeed_rate_limit_rejections_total',
      help: 'Requests refused with 429, by policy (anonymous rate limit or tier quota)',
      labelNames: ['policy'],
      registers: [registry],
    }),
    listReads: new Counter({
      name: 'blockfeed_list_reads_total',
      help: 'List answers made from the store (200 or 304; not from the response cache), by the server they came from: primary or standby',
      labelNames: ['source'],
      registers: [registry],
    }),
    longPolls: new Gauge({
      name: 'blockfeed_long_polls',
      help: 'List requests held now by this server until the list data changes (wait=)',
      registers: [registry],
    }),
    longPollAnswers: new Counter({
      name: 'blockfeed_long_poll_answers_total',
      help: 'Long polls by how they ended: changed (the data moved), timeout, closing (server shutting down), gone (client left), refused (too many)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
}

// The shipper's Prometheus metrics (README "Running sensors" documents each), on a registry of its own.
import { Counter, Gauge, type Registry } from 'prom-client';
import { createRegistry } from '../common/metrics.ts';
import { FAILURE_REASONS, type FailureReason } from './answer.ts';

export interface ShipperMetrics {
  registry: Registry;
  lines: Counter<'file'>;
  rejectedLines: Counter<'file'>;
  batchesFailed: Counter<'reason'>;
  lag: Gauge<'file'>;
  lastSuccess: Gauge;
}

/**
 * `lagOf(file)` measures a followed file's lag when Prometheus scrapes: it grows while the server is away,
 * when no batch goes through to update anything.
 */
export function createShipperMetrics(files: readonly string[], lagOf: (file: string) => Promise<number>, registry: Registry = createRegistry({ program: 'shipper' })): ShipperMetrics {
  const registers = [registry];
  const metrics: ShipperMetrics = {
    registry,
    lines: new Counter({ name: 'blockfeed_ship_lines_total', help: 'Lines the server acknowledged (stored, already stored, skipped or rejected), by followed file.', labelNames: ['file'], registers }),
    rejectedLines: new Counter({ name: 'blockfeed_ship_rejected_lines_total', help: 'Lines the server rejected (each reported as file:line: reason), by followed file.', labelNames: ['file'], registers }),
    batchesFailed: new Counter({ name: 'blockfeed_ship_batches_failed_total', help: `Pushes that did not go through, by reason (${FAILURE_REASONS.join(', ')}).`, labelNames: ['reason'], registers }),
    lag: new Gauge({
      name: 'blockfeed_ship_lag_bytes',
      help: 'Bytes written to a followed file (and to a rotated file being finished) that the server has not acknowledged yet.',
      labelNames: ['file'],
      registers,
      async collect() {
        for (const file of files) this.set({ file }, await lagOf(file));
      },
    }),
    lastSuccess: new Gauge({ name: 'blockfeed_ship_last_success_timestamp_seconds', help: 'Unix time of the last push the server acknowledged.', registers }),
  };
  // Every series exists from the start, so rate() and absence alerts work before the first failure.
  for (const reason of FAILURE_REASONS) metrics.batchesFailed.inc({ reason } satisfies { reason: FailureReason }, 0);
  for (const file of files) {
    metrics.lines.inc({ file }, 0);
    metrics.rejectedLines.inc({ file }, 0);
  }
  return metrics;
}

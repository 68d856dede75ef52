// Prometheus series for the per-request path of the API, bound to their labels once (per route, status,
// endpoint) and then recorded with a few additions. prom-client's own Counter and Histogram validate, hash
// and look up the labels on every call (a histogram also keys its buckets by number, i.e. by string), which
// was a measurable share of the CPU time of a cached answer. The registry renders these like its own: it
// asks a metric for name, help, type and get().
import type { Metric, Registry } from 'prom-client';

type Labels = Record<string, string>;

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

interface Rendered {
  name: string;
  help: string;
  type: string;
  aggregator: 'sum';
  values: MetricValue[];
}

abstract class BoundMetric<S extends { labels: Labels }> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum';
  abstract readonly type: 'counter' | 'histogram';
  readonly #series = new Map<string, S>();

  constructor(config: { name: string; help: string; registers: Registry[] }) {
    this.name = config.name;
    this.help = config.help;
    // prom-client's typings list only its own classes; the registry itself needs just what this provides.
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric);
  }

  protected abstract create(labels: Labels): S;
  protected abstract render(series: S, into: MetricValue[]): void;
  protected abstract clear(series: S): void;

  /** The series of a label set, created on first use; the same object for the same labels. */
  protected series(labels: Labels): S {
    const id = JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
    let series = this.#series.get(id);
    if (!series) {
      series = this.create({ ...labels });
      this.#series.set(id, series);
    }
    return series;
  }

  async get(): Promise<Rendered> {
    const values: MetricValue[] = [];
    for (const series of this.#series.values()) this.render(series, values);
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Zeroes every series; bound recorders stay valid. */
  reset(): void {
    for (const series of this.#series.values()) this.clear(series);
  }
}

interface CounterSeries {
  labels: Labels;
  value: number;
}

export class BoundCounter extends BoundMetric<CounterSeries> {
  readonly type = 'counter';

  /** A function that adds one to the series of these labels. */
  bind(labels: Labels): () => void {
    const series = this.series(labels);
    return () => {
      series.value++;
    };
  }

  /** Adds to the series of these labels (for rare events: looks the series up each time). */
  inc(labels: Labels, by = 1): void {
    this.series(labels).value += by;
  }

  protected create(labels: Labels): CounterSeries {
    return { labels, value: 0 };
  }

  protected render(series: CounterSeries, into: MetricValue[]): void {
    into.push({ labels: series.labels, value: series.value });
  }

  protected clear(series: CounterSeries): void {
    series.value = 0;
  }
}

interface HistogramSeries {
  labels: Labels;
  /** Observations per bucket (not cumulative); the last slot holds those above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export class BoundHistogram extends BoundMetric<HistogramSeries> {
  readonly type = 'histogram';
  readonly #bounds: Float64Array;

  constructor(config: { name: string; help: string; buckets: number[]; registers: Registry[] }) {
    super(config);
    this.#bounds = Float64Array.from([...config.buckets].sort((a, b) => a - b));
  }

  /** A function that records one observation in the series of these labels. */
  bind(labels: Labels): (value: number) => void {
    const series = this.series(labels);
    const bounds = this.#bounds;
    return (value: number) => {
      let i = 0;
      while (i < bounds.length && value > (bounds[i] ?? Infinity)) i++;
      series.counts[i] = (series.counts[i] ?? 0) + 1;
      series.sum += value;
      series.count++;
    };
  }

  protected create(labels: Labels): HistogramSeries {
    return { labels, counts: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 };
  }

  protected render(series: HistogramSeries, into: MetricValue[]): void {
    let cumulative = 0;
    this.#bounds.forEach((bound, i) => {
      cumulative += series.counts[i] ?? 0;
      into.push({ labels: { ...series.labels, le: bound }, value: cumulative, metricName: `${this.name}_bucket` });
    });
    into.push({ labels: { ...series.labels, le: '+Inf' }, value: series.count, metricName: `${this.name}_bucket` });
    into.push({ labels: series.labels, value: series.sum, metricName: `${this.name}_sum` });
    into.push({ labels: series.labels, value: series.count, metricName: `${this.name}_count` });
  }

  protected clear(series: HistogramSeries): void {
    series.counts.fill(0);
    series.sum = 0;
    series.count = 0;
  }
}

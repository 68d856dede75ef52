// A real Prometheus server (Debian's `prometheus` package, see .ci/system-deps) for the e2e tier: a generated
// configuration scraping loopback targets every second, rules from a file, TSDB in a temporary directory,
// and a small client for its HTTP API (instant queries, alerts).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { freePort } from './cli.ts';
import { answers200, startManaged, waitUntilReady, type ManagedProcess } from './processes.ts';

export interface ScrapeJob {
  job: string;
  target: string;
  /** keep the target's own labels on a clash (the controller's `namespace` label, as the ServiceMonitor does) */
  honorLabels?: boolean;
}

export interface PrometheusOptions {
  dir: string;
  jobs: ScrapeJob[];
  /** Rule groups as a rules file holds them (`{groups: [...]}`); the PrometheusRule's `spec` is one. */
  rules?: object;
  intervalSeconds?: number;
}

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

export interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
}

export interface PrometheusServer {
  readonly url: string;
  readonly process: ManagedProcess;
  /** An instant query; throws with Prometheus's error text when the expression is refused. */
  query(expr: string): Promise<Sample[]>;
  alerts(): Promise<Alert[]>;
  stop(): Promise<void>;
}

export function prometheusConfig(jobs: ScrapeJob[], intervalSeconds: number, ruleFiles: string[]): object {
  return {
    global: { scrape_interval: `${intervalSeconds}s`, scrape_timeout: `${intervalSeconds}s`, evaluation_interval: `${intervalSeconds}s` },
    rule_files: ruleFiles,
    scrape_configs: jobs.map((j) => ({ job_name: j.job, honor_labels: j.honorLabels ?? false, static_configs: [{ targets: [j.target] }] })),
  };
}

interface ApiAnswer<T> {
  status: 'success' | 'error';
  data?: T;
  errorType?: string;
  error?: string;
}

async function apiGet<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as ApiAnswer<T>;
  if (body.status !== 'success' || body.data === undefined) throw new Error(`Prometheus ${url}: ${res.status} ${body.errorType ?? ''} ${body.error ?? ''}`);
  return body.data;
}

export async function startPrometheus({ dir, jobs, rules, intervalSeconds = 1 }: PrometheusOptions): Promise<PrometheusServer> {
  await mkdir(path.join(dir, 'data'), { recursive: true });
  const ruleFiles: string[] = [];
  if (rules) {
    await writeFile(path.join(dir, 'rules.yaml'), stringify(rules));
    ruleFiles.push(path.join(dir, 'rules.yaml'));
  }
  await writeFile(path.join(dir, 'prometheus.yaml'), stringify(prometheusConfig(jobs, intervalSeconds, ruleFiles)));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = startManaged('prometheus', 'prometheus', [
    `--config.file=${path.join(dir, 'prometheus.yaml')}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--storage.tsdb.retention.time=1h',
    '--log.level=warn',
  ], { cwd: dir });
  await waitUntilReady(proc, () => answers200(`${url}/-/ready`));
  return {
    url,
    process: proc,
    query: async (expr) => {
      const data = await apiGet<{ resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] | [number, string] }>(
        `${url}/api/v1/query?query=${encodeURIComponent(expr)}`,
      );
      if (data.resultType === 'scalar') {
        const [, v] = data.result as [number, string];
        return [{ metric: {}, value: Number(v) }];
      }
      if (data.resultType !== 'vector') throw new Error(`${expr}: a ${data.resultType}, not an instant vector`);
      return (data.result as { metric: Record<string, string>; value: [number, string] }[]).map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
    },
    alerts: async () => (await apiGet<{ alerts: Alert[] }>(`${url}/api/v1/alerts`)).alerts,
    stop: () => proc.stop(),
  };
}

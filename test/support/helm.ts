// Runs the helm binary built by `make k8s-bin` (or HELM_BIN, or helm on PATH) on charts/blockfeed.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
export const CHART = path.join(REPO, 'charts/blockfeed');

/** helm from HELM_BIN, else .cache/k8s/current.env's HELM (make k8s-bin), else PATH. */
export function helmBinary(): string {
  if (process.env.HELM_BIN && existsSync(process.env.HELM_BIN)) return process.env.HELM_BIN;
  const env = path.join(REPO, '.cache/k8s/current.env');
  if (existsSync(env)) {
    const line = readFileSync(env, 'utf8').split('\n').find((l) => l.startsWith('HELM='));
    const bin = line?.slice('HELM='.length).replace(/^"|"$/g, '');
    if (bin && existsSync(bin)) return bin;
  }
  return 'helm';
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function helm(args: string[], env: NodeJS.ProcessEnv = {}): Promise<HelmResult> {
  return new Promise((resolve, reject) => {
    execFile(helmBinary(), args, { env: { ...process.env, ...env }, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') {
        reject(new Error(`cannot run helm (${helmBinary()}): ${err.message}; run \`make k8s-bin\``));
        return;
      }
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
    });
  });
}

/** Runs helm with `values` written to a temporary values file (-f). */
export async function helmWithValues(args: string[], values: object): Promise<HelmResult> {
  const dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-values-'));
  try {
    const file = path.join(dir, 'values.json');
    await writeFile(file, JSON.stringify(values));
    return await helm([...args, '-f', file]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export function parseManifests(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null && typeof o === 'object');
}

/** `helm template` of the chart with `values`; throws with helm's message when it refuses them. */
export async function renderChart(values: object = {}, { release = 'blockfeed', namespace = 'blockfeed', extraArgs = [] as string[] } = {}): Promise<K8sObject[]> {
  const r = await helmWithValues(['template', release, CHART, '--namespace', namespace, ...extraArgs], values);
  if (r.code !== 0) throw new Error(r.stderr.trim());
  return parseManifests(r.stdout);
}

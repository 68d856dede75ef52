// vitest globalSetup for the k8s tier: one real control plane per test run (see control-plane.ts).
import type { TestProject } from 'vitest/node';
import { startControlPlane } from './control-plane.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
    controlPlaneDir: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const plane = await startControlPlane({ log: (line) => process.env.K8S_TEST_VERBOSE && console.error(`[control-plane] ${line}`) });
  console.error(`[control-plane] ready in ${plane.startMs} ms (${plane.server})`);
  project.provide('kubeconfigPath', plane.kubeconfigPath);
  project.provide('controlPlaneDir', plane.dir);
  return () => plane.stop();
}

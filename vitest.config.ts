// Test tiers (docs/testing.md): unit = pure functions; integration = real embedded PostgreSQL, real
// sockets; k8s = a real kube-apiserver, etcd and kube-controller-manager; browser = the website in a real
// Chromium; cluster = a real node with pods and packets. `vitest run` runs them all. Every tier first checks
// that the system tools its tests run are installed (test/support/system-tools.ts).
import { defineConfig } from 'vitest/config';

const TOOLS = 'test/support/system-tools.ts';

export default defineConfig({
  test: {
    projects: [
      {
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], globalSetup: [TOOLS] },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: [TOOLS, 'test/support/postgres-global.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'k8s',
          include: ['test/k8s/**/*.test.ts'],
          globalSetup: [TOOLS, 'test/support/k8s-global.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        // Tests that run `blockfeed controller`, which reconciles every subscription in the cluster: on a
        // control plane of their own, after the other projects (groupOrder), one file at a time.
        test: {
          name: 'k8s-serial',
          include: ['test/k8s-serial/**/*.test.ts'],
          globalSetup: [TOOLS, 'test/support/k8s-global.ts'],
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
      {
        // Observability end to end: the test starts a control plane of its own, the api-server, the controller
        // and Prometheus as real processes; alone, after every other project (groupOrder), to keep its
        // 1-second scrapes and alert windows free of the other tiers' load.
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: [TOOLS],
          sequence: { groupOrder: 2 },
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 240_000,
        },
      },
      {
        // The member centre website in Debian's Chromium (playwright-core), on real PostgreSQL. One file at a
        // time: each drives a browser and an api-server, and they would only compete for the cores.
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: [TOOLS, 'test/support/postgres-global.ts'],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The chart on a real single-node cluster (kubelet, containerd, kube-proxy, kube-router) with packets
        // from network namespaces; it starts its cluster itself. After the other groups (groupOrder), but
        // with a single worker (vitest's choice on 2 cores) vitest runs the default group's files last:
        // `make test` runs this project on its own afterwards.
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          globalSetup: [TOOLS],
          sequence: { groupOrder: 3 },
          fileParallelism: false,
          testTimeout: 300_000,
          hookTimeout: 600_000,
        },
      },
      {
        // helm lint/template and promtool on the chart; no cluster (the install lives in the k8s tier)
        test: { name: 'chart', include: ['test/chart/**/*.test.ts'], globalSetup: [TOOLS], testTimeout: 60_000 },
      },
    ],
  },
});

// Test tiers (see DESIGN.md "Tests"): unit = pure functions; integration = real embedded PostgreSQL, real
// sockets; k8s = a real kube-apiserver, etcd and kube-controller-manager. `vitest run` runs them all.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/postgres-global.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'k8s',
          include: ['test/k8s/**/*.test.ts'],
          globalSetup: ['test/support/k8s-global.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});

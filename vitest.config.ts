// Test tiers (see DESIGN.md "Tests"): unit = pure functions; integration = real embedded PostgreSQL, real
// sockets. Later tiers (k8s, chart, e2e) add projects here. `vitest run` runs them all.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    reporters: process.env.CI ? ['default'] : ['default'],
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
        // helm lint/template and promtool on the chart; no cluster (the install lives in the k8s tier)
        test: { name: 'chart', include: ['test/chart/**/*.test.ts'], testTimeout: 60_000 },
      },
    ],
  },
});

import { defineConfig } from "vitest/config";

// Every `node bin/berth.js …` a test spawns (the simulated cluster's engines and routers, the e2e
// tests) runs the TypeScript source, never a dist/ built before the last source edit. Set here, in
// the process that forks the workers and runs globalSetup, so every child inherits it;
// test/repo/build.test.ts clears it for the compiled CLI it checks.
process.env.BERTH_FROM_SOURCE = "1";

/**
 * `npm run test:unit` (BERTH_TEST_TIER=unit): the everyday tier, pure and in-process tests, about
 * 3 minutes. It leaves out what starts real control planes, many processes or long scenarios.
 */
const SLOW_TIER = [
  "test/real-cluster/**",
  "test/**/*-e2e.test.ts",
  "test/agent/agent-resilience.test.ts",
  "test/agent/agent-informers.test.ts",
  "test/docs/**",
  "test/webhooks/dispatchers.test.ts",
  "test/cli/**",
  "test/deploy/**",
  "test/repo/**",
  "test/api/openapi-fuzz.test.ts",
  "test/api/many-instances*.test.ts",
  "test/router/cli.test.ts",
  "test/k8s/sim/kubectl-validation.test.ts",
];

export default defineConfig({
  test: {
    environment: "node",
    include: ["test/**/*.test.ts"],
    exclude: process.env.BERTH_TEST_TIER === "unit" ? ["**/node_modules/**", ...SLOW_TIER] : ["**/node_modules/**"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // globalSetup and its teardown are hooks too: starting PostgreSQL + migrating PGlite takes a few seconds.
    teardownTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
  },
});

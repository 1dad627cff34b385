import { defineConfig } from "vitest/config";

// Every `node bin/berth.js …` a test spawns (the simulated cluster's engines and routers, the e2e
// tests) runs the TypeScript source, never a dist/ built before the last source edit. Set here, in
// the process that forks the workers and runs globalSetup, so every child inherits it;
// test/repo/build.test.ts clears it for the compiled CLI it checks.
process.env.BERTH_FROM_SOURCE = "1";

export default defineConfig({
  test: {
    environment: "node",
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // globalSetup and its teardown are hooks too: starting PostgreSQL + migrating PGlite takes a few seconds.
    teardownTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
  },
});

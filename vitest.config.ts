import { defineConfig } from "vitest/config";

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

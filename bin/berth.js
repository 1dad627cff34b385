#!/usr/bin/env node
// Runs the compiled CLI (dist/, written by `npm run build`) when it exists, on plain Node.
// Otherwise, or with BERTH_FROM_SOURCE=1, runs the TypeScript through tsx, so `npx berth <command>`
// works right after `npm ci`. The test suite sets BERTH_FROM_SOURCE=1 (vitest.config.ts): a dist/
// left over from before a source edit must never be what the tests run.
import { existsSync } from "node:fs";

const compiled = new URL("../dist/src/cli/main.js", import.meta.url);

if (process.env.BERTH_FROM_SOURCE !== "1" && existsSync(compiled)) {
  await import(compiled.href);
} else {
  let register;
  try {
    ({ register } = await import("tsx/esm/api"));
  } catch {
    process.stderr.write(
      "berth: no compiled build at dist/ and tsx is not installed; run `npm run build` in a checkout with dev dependencies (`npm ci`)\n",
    );
    process.exit(1);
  }
  register();
  await import("../src/cli/main.ts");
}

// The signals layer stays in the agent's zone (the import directions of docs/design.md §2) and needs no library: it imports
// itself, the agent, the pure domain and node: built-ins only.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const dir = join(import.meta.dirname, "../../../src/agent/signals");

describe("src/agent/signals imports", () => {
  it.each(readdirSync(dir).filter((f) => f.endsWith(".ts")))("src/agent/signals/%s stays in the agent's zone", (file) => {
    const source = readFileSync(join(dir, file), "utf8");
    for (const [, from] of source.matchAll(/from "([^"]+)"/g)) {
      const allowed = from!.startsWith("./") || from!.startsWith("../") && !from!.startsWith("../../") || from!.startsWith("../../domain/") || from!.startsWith("node:");
      expect(allowed, `${file}: ${from}`).toBe(true);
    }
  });
});

// The agent's zone (the import directions of docs/design.md §2): src/agent imports the renderer, the pure domain, client-node
// and itself — never db/, routes/ or the API's services.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const dir = join(import.meta.dirname, "../../src/agent");

describe("src/agent imports", () => {
  it.each(readdirSync(dir).filter((f) => f.endsWith(".ts")))("src/agent/%s stays in the agent's zone", (file) => {
    const source = readFileSync(join(dir, file), "utf8");
    for (const [, from] of source.matchAll(/from "([^"]+)"/g)) {
      const allowed =
        from!.startsWith("./") ||
        from!.startsWith("../domain/") ||
        from!.startsWith("../../k8s/render/") ||
        from!.startsWith("@kubernetes/") ||
        from!.startsWith("node:");
      expect(allowed, `${file}: ${from}`).toBe(true);
    }
  });
});

// The quick-start example, run as its own process against a real `berth serve`.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runNode, startBerthServer, type BerthServer } from "../../support/berth-process.ts";

const EXAMPLE = join(import.meta.dirname, "../../../clients/typescript/examples/quickstart.ts");

describe("clients/typescript/examples/quickstart.ts", () => {
  let server: BerthServer;
  beforeAll(async () => {
    server = await startBerthServer();
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("creates, watches, scales with If-Match, lists and deletes", async () => {
    const result = await runNode(EXAMPLE, ["qs-demo"], { BERTH_URL: server.url, BERTH_TOKEN: server.adminToken }, { nodeArgs: ["--import", "tsx"], timeoutMs: 30_000 });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(/^created qs-demo \(dep_\w+\) at resourceVersion \d+$/),
      expect.stringMatching(/^watch: ADDED qs-demo at resourceVersion \d+$/),
      "scaled qs-demo: main replicas 2, generation 2",
      "listed 1 deployment(s): qs-demo",
      "deleted qs-demo (204)",
    ]);
    const createdAt = /resourceVersion (\d+)/.exec(lines[0]!)![1];
    expect(lines[1]).toContain(`resourceVersion ${createdAt}`);

    const after = await fetch(`${server.url}/v1/deployments/qs-demo`, { headers: { Authorization: `Bearer ${server.adminToken}` } });
    expect(after.status).toBe(404);
  }, 40_000);
});

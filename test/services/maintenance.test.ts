// Housekeeping forgets expired Idempotency-Keys and keeps live ones.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotencyKeys } from "../../db/schema.ts";
import { runMaintenance } from "../../src/services/maintenance.ts";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

describe("runMaintenance", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi("pglite");
  });
  afterAll(async () => {
    await api?.close();
  });

  it("purges Idempotency-Keys past their TTL only", async () => {
    const post = (name: string, key: string) =>
      api.call("POST", "/v1/deployments", {
        body: deploymentBody(name, { projectId: api.defaultProjectId }),
        headers: { "Idempotency-Key": key },
      });
    expect((await post("old-one", "key-old")).status).toBe(201);
    api.clock.advance(23 * 60 * 60 * 1000);
    expect((await post("new-one", "key-new")).status).toBe(201);
    api.clock.advance(60 * 60 * 1000 + 1000);

    await runMaintenance({ ctx: { db: api.database.db, clock: api.clock, config: DEFAULT_APP_CONFIG } });

    const keys = (await api.database.db.select({ key: idempotencyKeys.key }).from(idempotencyKeys)).map((r) => r.key);
    expect(keys).toEqual(["key-new"]);
  });
});

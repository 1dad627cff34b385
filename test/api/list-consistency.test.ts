// Paging while others write: every deployment that existed before paging began is seen
// exactly once, whatever is created or deleted meanwhile.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

describe("list cursors under concurrent writes (postgres)", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi("postgres");
  });
  afterAll(async () => {
    await api?.close();
  });

  it("has no duplicates and no gaps", async () => {
    const project = await api.createProject("paging");
    const before: string[] = [];
    for (let i = 0; i < 40; i++) {
      api.clock.advance(1);
      const res = await api.call("POST", "/v1/deployments", { body: deploymentBody(`pre-${i}`, { projectId: project }) });
      before.push(res.body.id);
    }
    const doomed = new Set(before.filter((_, i) => i % 10 === 5));
    const kept = before.filter((id) => !doomed.has(id));

    let writes = 0;
    const writer = (async () => {
      for (let i = 0; i < 30; i++) {
        // Half the new rows get an older createdAt than rows already paged past, half newer.
        api.clock.advance(i % 2 === 0 ? -1000 : 1000);
        await api.call("POST", "/v1/deployments", { body: deploymentBody(`during-${i}`, { projectId: project }) });
        writes++;
      }
    })();
    const deleter = (async () => {
      for (const id of doomed) await api.call("DELETE", `/v1/deployments/${id}`);
    })();

    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 100; page++) {
      const res: { body: { items: { id: string }[]; nextCursor: string | null } } = await api.call(
        "GET",
        `/v1/deployments?projectId=${project}&limit=3${cursor ? `&cursor=${cursor}` : ""}`,
      );
      seen.push(...res.body.items.map((d) => d.id));
      cursor = res.body.nextCursor;
      if (!cursor) break;
    }
    await Promise.all([writer, deleter]);

    expect(writes).toBe(30);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of kept) expect(seen).toContain(id);
  });
});

// client.revisions and client.rollback against a live app on a loopback socket.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BerthApiError, createBerthClient, type BerthClient, type Revision } from "../../../clients/typescript/src/index.ts";
import { ADMIN_TOKEN, createTestApi, deploymentBody, type TestApi } from "../../support/api-harness.ts";
import { serveTestApi, type LiveApp } from "../../support/live-app.ts";

describe("client revisions and rollback", () => {
  let api: TestApi;
  let live: LiveApp;
  let client: BerthClient;

  beforeAll(async () => {
    api = await createTestApi("pglite");
    live = await serveTestApi(api);
    client = createBerthClient({ baseUrl: live.url, token: ADMIN_TOKEN });
  });
  afterAll(async () => {
    await live?.close();
    await api?.close();
  });

  it("lists every revision newest first and rolls back, conditionally", async () => {
    const created = await api.call("POST", "/v1/deployments", { body: deploymentBody("client-undo", { projectId: api.defaultProjectId }) });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    for (const replicas of [2, 3]) {
      expect((await api.call("PATCH", `/v1/deployments/${id}`, { body: { spec: { roles: [{ name: "main", replicas }] } } })).status).toBe(200);
    }
    const seen: Revision[] = [];
    for await (const revision of client.revisions("client-undo", { projectId: api.defaultProjectId })) seen.push(revision);
    expect(seen.map((r) => [r.generation, r.spec.roles[0]?.replicas])).toEqual([[3, 3], [2, 2], [1, 1]]);

    const stale = await client.rollback(id, 1, { ifMatch: `"${created.body.resourceVersion}"` }).catch((error: unknown) => error);
    expect(stale).toBeInstanceOf(BerthApiError);
    expect((stale as BerthApiError).status).toBe(412);
    const restored = await client.rollback(id, 1);
    expect(restored).toMatchObject({ generation: 4, spec: { roles: [{ replicas: 1 }] } });
    const after: Revision[] = [];
    for await (const revision of client.revisions(id)) after.push(revision);
    expect(after[0]).toMatchObject({ generation: 4, rollbackOf: 1 });
    expect(after).toHaveLength(4);
  });
});

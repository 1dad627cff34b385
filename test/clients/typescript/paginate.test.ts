// client.paginate against a live app on a loopback socket: every item once, in list
// order, across pages; the event log pages by `after`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBerthClient, type BerthClient, type Deployment } from "../../../clients/typescript/src/index.ts";
import { ADMIN_TOKEN, createTestApi, deploymentBody, type TestApi } from "../../support/api-harness.ts";
import { serveTestApi, type LiveApp } from "../../support/live-app.ts";

describe("client.paginate", () => {
  let api: TestApi;
  let live: LiveApp;
  let client: BerthClient;
  let projectId: string;

  beforeAll(async () => {
    api = await createTestApi("pglite");
    live = await serveTestApi(api);
    client = createBerthClient({ baseUrl: live.url, token: ADMIN_TOKEN });
    projectId = await api.createProject("paged");
    for (let i = 0; i < 7; i++) {
      const res = await api.call("POST", "/v1/deployments", { body: deploymentBody(`paged-${i}`, { projectId }) });
      expect(res.status).toBe(201);
    }
  });
  afterAll(async () => {
    await live?.close();
    await api?.close();
  });

  it("follows nextCursor until the last page", async () => {
    const pages: string[] = [];
    const seen: Deployment[] = [];
    const counting = createBerthClient({
      baseUrl: live.url,
      token: ADMIN_TOKEN,
      fetch: (request, init) => {
        pages.push(new URL(request.url).search);
        return fetch(request, init);
      },
    });
    for await (const deployment of counting.paginate("/v1/deployments", { params: { query: { projectId, limit: 3 } } })) {
      seen.push(deployment);
    }
    const all = await client.GET("/v1/deployments", { params: { query: { projectId, limit: 200 } } });
    const expected = (all.data as { items: Deployment[] }).items.map((d) => d.id);
    expect(seen.map((d) => d.id)).toEqual(expected);
    expect(new Set(expected).size).toBe(7);
    // 3 + 3 + 1: the third page is short and has no nextCursor.
    expect(pages).toHaveLength(3);
    expect(pages[1]).toMatch(/cursor=/);
  });

  it("stops early when the loop breaks, and types items by path", async () => {
    let count = 0;
    for await (const project of client.paginate("/v1/projects", { params: { query: { limit: 1 } } })) {
      expect(project.id).toMatch(/^prj_/);
      if (++count === 1) break;
    }
    expect(count).toBe(1);
  });

  it("pages the event log by after", async () => {
    const events = [];
    for await (const event of client.paginate("/v1/events", { params: { query: { limit: 2 } } })) events.push(event);
    const created = events.filter((e) => e.type === "deployment.created" && e.projectId === projectId);
    expect(created).toHaveLength(7);
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  });
});

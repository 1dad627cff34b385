// The deployment resource end to end through app.request(), on every database driver.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../support/databases.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

describe.each(DRIVERS)("deployments on %s", (driver) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi(driver);
  });
  afterAll(async () => {
    await api?.close();
  });

  const create = (name: string, overrides: Record<string, unknown> = {}) =>
    api.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId: api.defaultProjectId, ...overrides }) });

  it("creates with 201, Location, ETag and every default filled in", async () => {
    const res = await create("qwen-chat", { labels: { team: "search" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/v1/deployments/${res.body.id}`);
    expect(res.headers.get("etag")).toBe(`"${res.body.resourceVersion}"`);
    expect(res.body).toMatchObject({
      name: "qwen-chat",
      projectId: api.defaultProjectId,
      labels: { team: "search" },
      generation: 1,
      status: { phase: "Pending" },
    });
    expect(res.body.id).toMatch(/^dep_/);
    const role = res.body.spec.roles[0];
    expect(role).toMatchObject({
      name: "main",
      kind: "server",
      replicas: 1,
      size: 1,
      resources: { gpus: 1 },
      parallelism: { tensor: 1, pipeline: 1, data: 1, dataLocal: 1, expert: false, externalDP: false },
      extraArgs: [],
      env: [],
      command: [],
      terminationGracePeriodSeconds: 30,
    });
    expect(res.body.spec.model.source).toEqual({ huggingFace: { repository: "Qwen/Qwen3-8B", revision: "main" } });
    expect(res.body.spec.router).toBeUndefined();
  });

  it("reads by id and by name with the same ETag", async () => {
    const created = await create("read-me");
    const byId = await api.call("GET", `/v1/deployments/${created.body.id}`);
    const byName = await api.call("GET", `/v1/deployments/read-me?projectId=${api.defaultProjectId}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toEqual(created.body);
    expect(byName.body).toEqual(created.body);
    expect(byId.headers.get("etag")).toBe(`"${created.body.resourceVersion}"`);
  });

  it("refuses a duplicate name in the same project with 409", async () => {
    await create("dup-name");
    const res = await create("dup-name");
    expect(res.status).toBe(409);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect(res.body.detail).toContain("dup-name");
  });

  it("asks an installation key which project a name means when several have it", async () => {
    const other = await api.createProject("other-team");
    await create("shared-name");
    await api.call("POST", "/v1/deployments", { body: deploymentBody("shared-name", { projectId: other }) });
    const ambiguous = await api.call("GET", "/v1/deployments/shared-name");
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body.projectIds).toEqual([api.defaultProjectId, other].sort());
    const scoped = await api.call("GET", `/v1/deployments/shared-name?projectId=${other}`);
    expect(scoped.status).toBe(200);
    expect(scoped.body.projectId).toBe(other);
  });

  it("requires projectId with an installation key", async () => {
    const res = await api.call("POST", "/v1/deployments", { body: deploymentBody("no-project") });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: "/projectId" })]);
  });

  it("merge-patches the spec: generation and resourceVersion move, defaults stay", async () => {
    const created = await create("patch-me");
    const res = await api.call("PATCH", `/v1/deployments/${created.body.id}`, {
      body: { spec: { roles: [{ name: "main", replicas: 3, resources: { gpus: 1 } }] } },
      headers: { "Content-Type": "application/merge-patch+json", "If-Match": created.headers.get("etag")! },
    });
    expect(res.status).toBe(200);
    expect(res.body.generation).toBe(2);
    expect(res.body.resourceVersion).toBeGreaterThan(created.body.resourceVersion);
    expect(res.body.spec.roles[0]).toMatchObject({ replicas: 3, kind: "server", parallelism: { tensor: 1 } });
    expect(res.headers.get("etag")).toBe(`"${res.body.resourceVersion}"`);
  });

  it("changes labels without a new generation, and null removes a label", async () => {
    const created = await create("labels-only", { labels: { a: "1", b: "2" } });
    const res = await api.call("PATCH", `/v1/deployments/${created.body.id}`, { body: { labels: { a: null, c: "3" } } });
    expect(res.status).toBe(200);
    expect(res.body.labels).toEqual({ b: "2", c: "3" });
    expect(res.body.generation).toBe(1);
    expect(res.body.resourceVersion).toBeGreaterThan(created.body.resourceVersion);
  });

  it("answers 412 with the current ETag when If-Match is stale, and changes nothing", async () => {
    const created = await create("stale-write");
    await api.call("PATCH", `/v1/deployments/${created.body.id}`, { body: { labels: { x: "1" } } });
    const res = await api.call("PATCH", `/v1/deployments/${created.body.id}`, {
      body: { labels: { x: "2" } },
      headers: { "If-Match": created.headers.get("etag")! },
    });
    expect(res.status).toBe(412);
    const current = await api.call("GET", `/v1/deployments/${created.body.id}`);
    expect(res.headers.get("etag")).toBe(current.headers.get("etag"));
    expect(res.body.currentETag).toBe(current.headers.get("etag"));
    expect(current.body.labels).toEqual({ x: "1" });
  });

  it("replaces with PUT and refuses a changed name", async () => {
    const created = await create("put-me");
    const spec = { ...deploymentBody("x").spec, roles: [{ name: "main", replicas: 2, resources: { gpus: 2 } }] };
    const res = await api.call("PUT", `/v1/deployments/${created.body.id}`, { body: { spec, labels: { v: "2" } } });
    expect(res.status).toBe(200);
    expect(res.body.spec.roles[0]).toMatchObject({ replicas: 2, resources: { gpus: 2 }, parallelism: { tensor: 2 } });
    expect(res.body.labels).toEqual({ v: "2" });
    expect(res.body.generation).toBe(2);
    const renamed = await api.call("PUT", `/v1/deployments/${created.body.id}`, { body: { name: "other", spec } });
    expect(renamed.status).toBe(422);
    expect(renamed.body.errors).toEqual([expect.objectContaining({ pointer: "/name" })]);
  });

  it("refuses changes to identity fields with a pointer to each", async () => {
    const created = await create("identity");
    const res = await api.call("PATCH", `/v1/deployments/${created.body.id}`, {
      body: { spec: { model: { name: "meta-llama/Llama-3.1-8B-Instruct" }, engine: { name: "sglang" } } },
    });
    expect(res.status).toBe(422);
    const pointers = res.body.errors.map((e: { pointer: string }) => e.pointer);
    expect(pointers).toEqual(expect.arrayContaining(["/spec/model/name", "/spec/engine/name"]));
    const unchanged = await api.call("GET", `/v1/deployments/${created.body.id}`);
    expect(unchanged.body.resourceVersion).toBe(created.body.resourceVersion);
  });

  it("a no-op patch keeps resourceVersion", async () => {
    const created = await create("no-op");
    const res = await api.call("PATCH", `/v1/deployments/${created.body.id}`, { body: { spec: { roles: created.body.spec.roles } } });
    expect(res.status).toBe(200);
    expect(res.body.resourceVersion).toBe(created.body.resourceVersion);
  });

  it("lists with a stable cursor, phase and label filters", async () => {
    const project = await api.createProject("listing");
    for (let i = 0; i < 7; i++) {
      api.clock.advance(1);
      await api.call("POST", "/v1/deployments", {
        body: deploymentBody(`item-${i}`, { projectId: project, labels: { parity: i % 2 ? "odd" : "even" } }),
      });
    }
    const names: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `/v1/deployments?projectId=${project}&limit=3${cursor ? `&cursor=${cursor}` : ""}`;
      const page = await api.call("GET", query);
      expect(page.status).toBe(200);
      names.push(...page.body.items.map((d: { name: string }) => d.name));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(names).toEqual(["item-0", "item-1", "item-2", "item-3", "item-4", "item-5", "item-6"]);
    expect(pages).toBe(3);
    const odd = await api.call("GET", `/v1/deployments?projectId=${project}&label=parity=odd`);
    expect(odd.body.items.map((d: { name: string }) => d.name)).toEqual(["item-1", "item-3", "item-5"]);
    const pending = await api.call("GET", `/v1/deployments?projectId=${project}&phase=Pending&limit=200`);
    expect(pending.body.items).toHaveLength(7);
    const ready = await api.call("GET", `/v1/deployments?projectId=${project}&phase=Ready`);
    expect(ready.body).toEqual({ items: [], nextCursor: null });
  });

  it("refuses a bad cursor, limit and phase as parameter problems", async () => {
    const badCursor = await api.call("GET", "/v1/deployments?cursor=not-a-cursor");
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.errors).toEqual([expect.objectContaining({ parameter: "cursor" })]);
    const badLimit = await api.call("GET", "/v1/deployments?limit=201");
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.errors).toEqual([expect.objectContaining({ parameter: "limit" })]);
    const badPhase = await api.call("GET", "/v1/deployments?phase=Running");
    expect(badPhase.status).toBe(400);
  });

  it("deletes a deployment no agent has taken with 204", async () => {
    const created = await create("delete-me");
    const res = await api.call("DELETE", `/v1/deployments/${created.body.id}`);
    expect(res.status).toBe(204);
    expect((await api.call("GET", `/v1/deployments/${created.body.id}`)).status).toBe(404);
  });

  it("moves a deployment an agent runs to Deleting with 202", async () => {
    const agent = await api.createAgent(`cluster-${driver}`);
    const inventory = { nodes: [{ name: "n1", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 8 }] };
    await api.call("POST", "/v1/agent/heartbeat", { token: agent.token, body: { agentVersion: "test", inventory } });
    const created = await create("agent-runs-me");
    const status = { phase: "Starting", observedGeneration: 1, roles: [{ name: "main", kind: "server", desired: 1 }], conditions: [] };
    const put = await api.call("PUT", `/v1/deployments/${created.body.id}/status`, { token: agent.token, body: status });
    expect(put.status).toBe(200);
    expect(put.body.status.phase).toBe("Starting");
    expect(put.body.generation).toBe(1);
    expect(put.body.resourceVersion).toBeGreaterThan(created.body.resourceVersion);
    const res = await api.call("DELETE", `/v1/deployments/${created.body.id}`);
    expect(res.status).toBe(202);
    expect(res.body.status.phase).toBe("Deleting");
    const again = await api.call("PUT", `/v1/deployments/${created.body.id}/status`, { token: agent.token, body: status });
    expect(again.body.status.phase).toBe("Deleting");
    const patch = await api.call("PATCH", `/v1/deployments/${created.body.id}`, { body: { labels: { a: "b" } } });
    expect(patch.status).toBe(409);
  });

  it("lets only an agent credential write status", async () => {
    const created = await create("status-guard");
    const res = await api.call("PUT", `/v1/deployments/${created.body.id}/status`, { body: { phase: "Ready" } });
    expect(res.status).toBe(403);
    expect(res.body.detail).toMatch(/agent/);
    const read = await api.call("GET", `/v1/deployments/${created.body.id}`);
    expect(read.body.status.phase).toBe("Pending");
  });
});

// Keys, roles and tenancy: who may see and do what.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

describe.each(["pglite", "postgres"] as const)("access control on %s", (driver) => {
  let api: TestApi;
  let teamA: string;
  let teamB: string;
  let editorA: string;
  let viewerA: string;
  let adminA: string;
  let depB: string;

  beforeAll(async () => {
    api = await createTestApi(driver);
    teamA = await api.createProject("team-a");
    teamB = await api.createProject("team-b");
    editorA = await api.createKey("editor", teamA);
    viewerA = await api.createKey("viewer", teamA);
    adminA = await api.createKey("admin", teamA);
    const b = await api.call("POST", "/v1/deployments", { body: deploymentBody("b-app", { projectId: teamB }) });
    depB = b.body.id;
  });
  afterAll(async () => {
    await api?.close();
  });

  it("needs a bearer key on /v1 and says how to send it", async () => {
    for (const token of [null, "bp_unknown", "not-even-a-key"]) {
      const res = await api.call("GET", "/v1/deployments", { token });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain("Bearer");
      expect(res.body).toMatchObject({ status: 401, instance: res.headers.get("x-request-id") });
    }
  });

  it("serves probes and the API description without a key", async () => {
    expect((await api.call("GET", "/healthz", { token: null })).status).toBe(200);
    expect((await api.call("GET", "/readyz", { token: null })).status).toBe(200);
    expect((await api.call("GET", "/openapi.json", { token: null })).status).toBe(200);
  });

  it("lets a project key create in its project without naming it", async () => {
    const res = await api.call("POST", "/v1/deployments", { token: editorA, body: deploymentBody("a-app") });
    expect(res.status).toBe(201);
    expect(res.body.projectId).toBe(teamA);
    expect((await api.call("GET", "/v1/deployments/a-app", { token: editorA })).status).toBe(200);
  });

  it("hides other projects' objects as not found", async () => {
    expect((await api.call("GET", `/v1/deployments/${depB}`, { token: editorA })).status).toBe(404);
    expect((await api.call("GET", "/v1/deployments/b-app", { token: editorA })).status).toBe(404);
    expect((await api.call("PATCH", `/v1/deployments/${depB}`, { token: editorA, body: { labels: { x: "y" } } })).status).toBe(404);
    expect((await api.call("DELETE", `/v1/deployments/${depB}`, { token: editorA })).status).toBe(404);
    expect((await api.call("GET", `/v1/projects/${teamB}`, { token: editorA })).status).toBe(404);
    const list = await api.call("GET", "/v1/deployments?limit=200", { token: editorA });
    expect(list.body.items.every((d: { projectId: string }) => d.projectId === teamA)).toBe(true);
    const projects = await api.call("GET", "/v1/projects", { token: editorA });
    expect(projects.body.items.map((p: { id: string }) => p.id)).toEqual([teamA]);
    const wrongProject = await api.call("POST", "/v1/deployments", { token: editorA, body: deploymentBody("x", { projectId: teamB }) });
    expect(wrongProject.status).toBe(403);
  });

  it("lets a viewer read but not write", async () => {
    expect((await api.call("GET", "/v1/deployments", { token: viewerA })).status).toBe(200);
    const res = await api.call("POST", "/v1/deployments", { token: viewerA, body: deploymentBody("viewer-app") });
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain("editor");
    expect((await api.call("GET", "/v1/deployments/viewer-app", { token: viewerA })).status).toBe(404);
  });

  it("keeps project and cluster management to installation admins", async () => {
    expect((await api.call("POST", "/v1/projects", { token: adminA, body: { name: "sneaky" } })).status).toBe(403);
    expect((await api.call("POST", "/v1/clusters", { token: adminA, body: { name: "sneaky" } })).status).toBe(403);
    expect((await api.call("PATCH", `/v1/projects/${teamA}`, { token: adminA, body: { maxGpus: 1000 } })).status).toBe(403);
  });

  it("issues keys once, lists prefixes only, and revokes them", async () => {
    const created = await api.call("POST", "/v1/api-keys", { token: adminA, body: { name: "ci", role: "editor" } });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^bp_[0-9a-f]{64}$/);
    expect(created.body.projectId).toBe(teamA);
    expect(created.body.token.startsWith(created.body.prefix)).toBe(true);
    const list = await api.call("GET", "/v1/api-keys?limit=200", { token: adminA });
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);
    expect(list.body.items.every((k: { projectId: string }) => k.projectId === teamA)).toBe(true);
    expect((await api.call("GET", "/v1/deployments", { token: created.body.token })).status).toBe(200);
    expect((await api.call("DELETE", `/v1/api-keys/${created.body.id}`, { token: adminA })).status).toBe(204);
    expect((await api.call("GET", "/v1/deployments", { token: created.body.token })).status).toBe(401);
    const forOther = await api.call("POST", "/v1/api-keys", { token: adminA, body: { name: "x", role: "viewer", projectId: teamB } });
    expect(forOther.status).toBe(403);
    expect((await api.call("GET", "/v1/api-keys", { token: editorA })).status).toBe(403);
  });

  it("keeps agent credentials to their own routes", async () => {
    const agent = await api.createAgent(`agents-${driver}`);
    const res = await api.call("GET", "/v1/deployments", { token: agent.token });
    expect(res.status).toBe(403);
    const reused = await api.call("POST", "/v1/agent/register", { token: null, body: { joinToken: "bj_nope" } });
    expect(reused.status).toBe(401);
  });

  it("refuses a join token the second time", async () => {
    const created = await api.call("POST", "/v1/clusters", { body: { name: `once-${driver}` } });
    const body = { joinToken: created.body.joinToken };
    expect((await api.call("POST", "/v1/agent/register", { token: null, body })).status).toBe(201);
    expect((await api.call("POST", "/v1/agent/register", { token: null, body })).status).toBe(401);
  });

  it("refuses a join token after an hour", async () => {
    const created = await api.call("POST", "/v1/clusters", { body: { name: `late-${driver}` } });
    api.clock.advance(60 * 60 * 1000 + 1);
    const res = await api.call("POST", "/v1/agent/register", { token: null, body: { joinToken: created.body.joinToken } });
    expect(res.status).toBe(401);
  });

  it("will not delete a project that still has deployments", async () => {
    const res = await api.call("DELETE", `/v1/projects/${teamB}`);
    expect(res.status).toBe(409);
    const empty = await api.createProject("empty-one");
    expect((await api.call("DELETE", `/v1/projects/${empty}`)).status).toBe(204);
  });
});

describe("GPU quota", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi("postgres");
  });
  afterAll(async () => {
    await api?.close();
  });

  const gpus = (name: string, projectId: string, count: number, replicas = 1) =>
    deploymentBody(name, {
      projectId,
      spec: { ...deploymentBody(name).spec, roles: [{ name: "main", replicas, resources: { gpus: count } }] },
    });

  it("refuses a deployment beyond maxGpus with needed and available", async () => {
    const project = await api.createProject("quota", 8);
    expect((await api.call("POST", "/v1/deployments", { body: gpus("first", project, 2, 3) })).status).toBe(201);
    const res = await api.call("POST", "/v1/deployments", { body: gpus("second", project, 4) });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: expect.stringContaining("quota-exceeded"), needed: 4, available: 2, limit: 8 });
    expect((await api.call("GET", `/v1/deployments/second?projectId=${project}`)).status).toBe(404);
  });

  it("reports every 400/422 before quota", async () => {
    const project = await api.createProject("quota-order", 1);
    const body = gpus("bad", project, 4);
    (body.spec as { colour?: string }).colour = "red";
    expect((await api.call("POST", "/v1/deployments", { body })).status).toBe(400);
    const unfit = gpus("unfit", project, 4);
    unfit.spec.roles[0] = { name: "main", resources: { gpus: 4 }, parallelism: { tensor: 3 } } as never;
    expect((await api.call("POST", "/v1/deployments", { body: unfit })).status).toBe(422);
  });

  it("checks quota on a scale-up patch", async () => {
    const project = await api.createProject("quota-patch", 4);
    const created = await api.call("POST", "/v1/deployments", { body: gpus("grow", project, 1, 2) });
    const res = await api.call("PATCH", `/v1/deployments/${created.body.id}`, {
      body: { spec: { roles: [{ ...created.body.spec.roles[0], replicas: 5 }] } },
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ needed: 5, available: 4 });
  });

  it("never lets concurrent creates overrun the quota", async () => {
    const project = await api.createProject("quota-race", 4);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => api.call("POST", "/v1/deployments", { body: gpus(`race-${i}`, project, 1) })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(4);
    expect(results.filter((r) => r.status === 403)).toHaveLength(4);
  });
});

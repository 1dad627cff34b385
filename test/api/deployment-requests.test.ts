// /v1/deployment-requests and /v1/catalog: plan on create (Ready with ranked candidates, or Failed
// with the closest shape), 422 for an undescribed unknown model, apply (idempotent, linked both
// ways, the deployment an ordinary one), autoApply, delete keeps the deployment, events, scope.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, type TestApi } from "../support/api-harness.ts";
import { DRIVERS } from "../support/databases.ts";

const LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct";

describe.each(DRIVERS)("deployment requests on %s", (driver) => {
  let api: TestApi;
  let team: string;
  let other: string;
  let editor: string;
  let viewer: string;
  let outsider: string;

  beforeAll(async () => {
    api = await createTestApi(driver);
    team = await api.createProject("plans");
    other = await api.createProject("plans-other");
    editor = await api.createKey("editor", team);
    viewer = await api.createKey("viewer", team);
    outsider = await api.createKey("editor", other);
  });
  afterAll(async () => {
    await api?.close();
  });

  const create = (body: Record<string, unknown>, token = editor) => api.call("POST", "/v1/deployment-requests", { token, body });
  const eventsOf = async (type: string) =>
    (await api.call("GET", `/v1/events?type=${type}&limit=500`)).body.items as Array<{ type: string; deploymentId?: string; data: any }>;

  it("plans on create: Ready, defaults filled in, ranked candidates with specs, request.ready recorded", async () => {
    const res = await create({ name: "chat", model: { name: LLAMA_70B }, workload: { concurrency: 64 }, hardware: { gpuType: "nvidia-h100-80gb" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/v1/deployment-requests/${res.body.id}`);
    expect(res.headers.get("etag")).toBe(`"${res.body.resourceVersion}"`);
    expect(res.body.id).toMatch(/^dreq_[0-9a-z]{20}$/);
    expect(res.body.spec).toEqual({
      name: "chat",
      projectId: team,
      model: { name: LLAMA_70B },
      engine: "auto",
      workload: { inputTokens: 4000, outputTokens: 1000, concurrency: 64 },
      sla: { ttftMs: 2000, itlMs: 30 },
      hardware: { gpuType: "nvidia-h100-80gb" },
      autoApply: false,
    });
    const status = res.body.status;
    expect(status.phase).toBe("Ready");
    expect(status.candidates.length).toBeGreaterThan(0);
    expect(status.candidates[0]).toMatchObject({ rank: 1, gpus: 8, spec: { model: { name: LLAMA_70B } } });
    expect(status.candidates[0].predicted.itlMs).toBeLessThanOrEqual(30);
    expect(status.rejected.some((r: { reason: string }) => r.reason.startsWith("does not fit memory"))).toBe(true);
    expect(status.baseline.label).toMatch(/memory-fit fallback/);
    expect(status).not.toHaveProperty("deploymentId");

    const ready = (await eventsOf("request.ready")).filter((e) => e.data.request.id === res.body.id);
    expect(ready).toHaveLength(1);
    expect(ready[0]!.data).toMatchObject({ request: { name: "chat", projectId: team, phase: "Ready" }, best: { gpus: 8 } });
  });

  it("reads, lists and scopes requests by project", async () => {
    const created = (await create({ name: "scoped", model: { name: "Qwen/Qwen3-8B" }, hardware: { gpuType: "nvidia-l4-24gb" } })).body;
    const read = await api.call("GET", `/v1/deployment-requests/${created.id}`, { token: viewer });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created);
    expect(read.headers.get("etag")).toBe(`"${created.resourceVersion}"`);
    const listed = await api.call("GET", "/v1/deployment-requests?limit=100", { token: viewer });
    expect(listed.body.items.map((r: { id: string }) => r.id)).toContain(created.id);
    expect((await api.call("GET", `/v1/deployment-requests/${created.id}`, { token: outsider })).status).toBe(404);
    expect((await api.call("GET", "/v1/deployment-requests?limit=100", { token: outsider })).body.items).toEqual([]);
    expect((await api.call("GET", "/v1/deployment-requests/dreq_nope")).status).toBe(404);
  });

  it("a viewer may not create, and a name is unique in its project", async () => {
    const refused = await create({ name: "viewer-try", model: { name: "Qwen/Qwen3-8B" } }, viewer);
    expect(refused.status).toBe(403);
    expect((await create({ name: "twice", model: { name: "Qwen/Qwen3-8B" }, hardware: { gpuType: "nvidia-h100-80gb" } })).status).toBe(201);
    const again = await create({ name: "twice", model: { name: "Qwen/Qwen3-8B" }, hardware: { gpuType: "nvidia-h100-80gb" } });
    expect(again.status).toBe(409);
  });

  it("422 at /model/architecture for a model neither catalogued nor described", async () => {
    const res = await create({ name: "unknown", model: { name: "my-org/secret-model" } });
    expect(res.status).toBe(422);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].pointer).toBe("/model/architecture");
    expect(res.body.errors[0].message).toContain("num_hidden_layers");
  });

  it("400 with a pointer for a malformed SLA", async () => {
    const res = await create({ name: "bad-sla", model: { name: LLAMA_70B }, sla: { ttftMs: 100 } });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain("/sla");
  });

  it("an SLA nothing meets: Failed, no candidates, the closest shape and its shortfall, request.failed", async () => {
    const res = await create({ name: "impossible", model: { name: LLAMA_70B }, sla: { ttftMs: 1, itlMs: 0.5 }, hardware: { gpuType: "nvidia-h100-80gb" } });
    expect(res.status).toBe(201);
    expect(res.body.status.phase).toBe("Failed");
    expect(res.body.status.candidates).toEqual([]);
    expect(res.body.status.reason).toMatch(/^no shape meets the request/);
    expect(res.body.status.closest.shortfall).toMatch(/misses/);
    const failed = (await eventsOf("request.failed")).filter((e) => e.data.request.id === res.body.id);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data.closest.shortfall).toBe(res.body.status.closest.shortfall);
    const apply = await api.call("POST", `/v1/deployment-requests/${res.body.id}/apply`, { token: editor });
    expect(apply.status).toBe(409);
  });

  it("apply creates the first candidate's deployment once, linked both ways; applying again changes nothing", async () => {
    const request = (await create({ name: "served", model: { name: "Qwen/Qwen3-8B" }, workload: { concurrency: 32 }, hardware: { gpuType: "nvidia-h100-80gb" } })).body;
    const first = await api.call("POST", `/v1/deployment-requests/${request.id}/apply`, { token: editor });
    expect(first.status).toBe(200);
    expect(first.body.status).toMatchObject({ phase: "Deployed", selected: 1 });
    const deploymentId = first.body.status.deploymentId;
    expect(deploymentId).toMatch(/^dep_/);

    const second = await api.call("POST", `/v1/deployment-requests/${request.id}/apply`, { token: editor, body: {} });
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const other = await api.call("POST", `/v1/deployment-requests/${request.id}/apply`, { token: editor, body: { candidate: 2 } });
    expect(other.status).toBe(409);

    const deployment = await api.call("GET", `/v1/deployments/${deploymentId}`, { token: viewer });
    expect(deployment.status).toBe(200);
    expect(deployment.body).toMatchObject({ name: "served", projectId: team, labels: { "berth.dev/deployment-request": request.id } });
    const candidate = request.status.candidates[0];
    expect(deployment.body.spec.roles.map((r: { resources: { gpus: number }; replicas: number }) => r.replicas * r.resources.gpus).reduce((a: number, b: number) => a + b, 0)).toBe(candidate.gpus);
    const named = await api.call("GET", "/v1/deployments?limit=100", { token: viewer });
    expect(named.body.items.filter((d: { name: string }) => d.name === "served")).toHaveLength(1);

    // An ordinary, editable deployment.
    const patched = await api.call("PATCH", `/v1/deployments/${deploymentId}`, { token: editor, body: { labels: { tier: "gold" } } });
    expect(patched.status).toBe(200);

    const deployed = (await eventsOf("request.deployed")).filter((e) => e.data.request.id === request.id);
    expect(deployed).toHaveLength(1);
    expect(deployed[0]).toMatchObject({ deploymentId, data: { deploymentId, candidate: 1 } });

    // Deleting the request keeps its deployment.
    expect((await api.call("DELETE", `/v1/deployment-requests/${request.id}`, { token: editor })).status).toBe(204);
    expect((await api.call("GET", `/v1/deployment-requests/${request.id}`, { token: editor })).status).toBe(404);
    expect((await api.call("GET", `/v1/deployments/${deploymentId}`, { token: editor })).status).toBe(200);
  });

  it("concurrent applies create one deployment", async () => {
    const request = (await create({ name: "raced", model: { name: "Qwen/Qwen3-8B" }, hardware: { gpuType: "nvidia-a100-80gb" } })).body;
    const answers = await Promise.all([1, 2, 3].map(() => api.call("POST", `/v1/deployment-requests/${request.id}/apply`, { token: editor })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const ids = new Set(answers.map((a) => a.body.status.deploymentId));
    expect(ids.size).toBe(1);
    const named = await api.call("GET", "/v1/deployments?limit=100", { token: viewer });
    expect(named.body.items.filter((d: { name: string }) => d.name === "raced")).toHaveLength(1);
  });

  it("apply with a candidate rank deploys that one; an unknown rank is a 422 at /candidate", async () => {
    const request = (await create({ name: "second", model: { name: LLAMA_70B }, workload: { concurrency: 16 }, hardware: { gpuType: "nvidia-h200-141gb" } })).body;
    expect(request.status.candidates.length).toBeGreaterThan(1);
    const missing = await api.call("POST", `/v1/deployment-requests/${request.id}/apply`, { token: editor, body: { candidate: 999 } });
    expect(missing.status).toBe(422);
    expect(missing.body.errors[0].pointer).toBe("/candidate");
    const applied = await api.call("POST", `/v1/deployment-requests/${request.id}/apply`, { token: editor, body: { candidate: 2 } });
    expect(applied.status).toBe(200);
    expect(applied.body.status.selected).toBe(2);
    const deployment = (await api.call("GET", `/v1/deployments/${applied.body.status.deploymentId}`, { token: editor })).body;
    expect(deployment.spec.engine.name).toBe(request.status.candidates[1].spec.engine.name);
  });

  it("a taken deployment name leaves the request Ready with a 409", async () => {
    const spec = { model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" }, roles: [{ name: "server" }] };
    expect((await api.call("POST", "/v1/deployments", { token: editor, body: { name: "taken", spec } })).status).toBe(201);
    const request = (await create({ name: "taken", model: { name: "Qwen/Qwen3-8B" }, hardware: { gpuType: "nvidia-h100-80gb" } })).body;
    const apply = await api.call("POST", `/v1/deployment-requests/${request.id}/apply`, { token: editor });
    expect(apply.status).toBe(409);
    expect(apply.body.detail).toMatch(/not created by this request/);
    expect((await api.call("GET", `/v1/deployment-requests/${request.id}`, { token: editor })).body.status.phase).toBe("Ready");
  });

  it("autoApply creates the deployment at once", async () => {
    const res = await create({ name: "auto", model: { name: "Qwen/Qwen3-8B" }, hardware: { gpuType: "nvidia-h100-80gb" }, autoApply: true });
    expect(res.status).toBe(201);
    expect(res.body.status.phase).toBe("Deployed");
    const deployment = await api.call("GET", `/v1/deployments/${res.body.status.deploymentId}`, { token: editor });
    expect(deployment.body.labels).toEqual({ "berth.dev/deployment-request": res.body.id });

    // Deleting the deployment unlinks it: the request is Ready again, and apply creates a new one.
    expect((await api.call("DELETE", `/v1/deployments/${res.body.status.deploymentId}`, { token: editor })).status).toBe(204);
    const unlinked = (await api.call("GET", `/v1/deployment-requests/${res.body.id}`, { token: editor })).body;
    expect(unlinked.status.phase).toBe("Ready");
    expect(unlinked.status).not.toHaveProperty("deploymentId");
    const again = await api.call("POST", `/v1/deployment-requests/${res.body.id}/apply`, { token: editor });
    expect(again.status).toBe(200);
    expect(again.body.status.phase).toBe("Deployed");
    expect(again.body.status.deploymentId).not.toBe(res.body.status.deploymentId);
  });

  it("plans against a cluster's free inventory", async () => {
    const agent = await api.createAgent("inventory");
    const beat = await api.call("POST", "/v1/agent/heartbeat", {
      token: agent.token,
      body: {
        agentVersion: "0.1.0-test",
        inventory: { nodes: [{ name: "n1", gpuType: "nvidia-l40s-48gb", gpuCapacity: 4, gpuAllocatable: 4, gpuFree: 4 }] },
      },
    });
    expect(beat.status).toBe(200);
    const res = await create({ name: "on-cluster", model: { name: "Qwen/Qwen3-8B" }, hardware: { clusterId: agent.clusterId } });
    expect(res.body.status.phase).toBe("Ready");
    for (const c of res.body.status.candidates) {
      expect(c.shape.gpuType).toBe("nvidia-l40s-48gb");
      expect(c.gpus).toBeLessThanOrEqual(4);
      expect(c.spec.clusterId).toBe(agent.clusterId);
    }
    const missing = await create({ name: "no-cluster", model: { name: "Qwen/Qwen3-8B" }, hardware: { clusterId: "clu_00000000000000000000" } });
    expect(missing.status).toBe(422);
    expect(missing.body.errors[0].pointer).toBe("/hardware/clusterId");
  });

  it("serves the catalogues to any key", async () => {
    const models = await api.call("GET", "/v1/catalog/models", { token: viewer });
    expect(models.status).toBe(200);
    expect(models.body.items.length).toBeGreaterThanOrEqual(20);
    expect(models.body.items.find((m: { id: string }) => m.id === "deepseek-ai/DeepSeek-V3")).toMatchObject({ attention: "MLA", kvLatentDim: 576, kind: "moe" });
    const gpus = await api.call("GET", "/v1/catalog/gpus", { token: viewer });
    expect(gpus.status).toBe(200);
    expect(gpus.body.items.map((g: { id: string }) => g.id)).toContain("nvidia-h100-80gb");
    expect(gpus.body.items.every((g: { source: string }) => g.source.startsWith("https://"))).toBe(true);
    expect((await api.call("GET", "/v1/catalog/gpus", { token: null })).status).toBe(401);
  });
});

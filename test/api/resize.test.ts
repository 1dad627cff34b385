// The resize verb (docs/design.md §8.1): POST /v1/deployments/{id}/roles/{role}/resize { width } changes
// elastic.width through the PATCH write path and records a Pending resize Operation in the
// same transaction. One resize of a role at a time, even under concurrent requests.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, type TestApi } from "../support/api-harness.ts";
import { DRIVERS } from "../support/databases.ts";

const PROBLEM = "https://berth.dev/problems/";
const node = (name: string, gpus: number) => ({ name, gpuType: "nvidia-h100-80gb", gpuCapacity: gpus, gpuAllocatable: gpus, gpuFree: gpus });

const elasticBody = (name: string, width = 2, maxWidth = 8) => ({
  name,
  spec: {
    model: { name: "deepseek-ai/DeepSeek-V2-Lite" },
    engine: { name: "vllm", image: "vllm/vllm-openai:v0.29.0" }, // --enable-elastic-ep is not in 0.16.0 or earlier
    roles: [{ name: "ep", resources: { gpus: 1 }, parallelism: { expert: true }, elastic: { width, maxWidth } }],
  },
});

describe.each(DRIVERS)("resize on %s", (driver) => {
  let api: TestApi;
  let agent: { token: string; clusterId: string };
  let team: string;
  let editor: string;
  let viewer: string;
  let outsider: string;

  beforeAll(async () => {
    api = await createTestApi(driver);
    agent = await api.createAgent("resize-cluster");
    await api.call("POST", "/v1/agent/heartbeat", { token: agent.token, body: { agentVersion: "t", inventory: { nodes: [node("n1", 8), node("n2", 8)] } } });
    team = await api.createProject("resize-team");
    editor = await api.createKey("editor", team);
    viewer = await api.createKey("viewer", team);
    outsider = await api.createKey("admin", await api.createProject("resize-other"));
  });
  afterAll(async () => {
    await api?.close();
  });

  const createElastic = async (name: string, width = 2, maxWidth = 8, token = editor) => {
    const res = await api.call("POST", "/v1/deployments", { token, body: elasticBody(name, width, maxWidth) });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    return res.body;
  };
  const resize = (id: string, width: unknown, options: { token?: string; headers?: Record<string, string>; role?: string } = {}) =>
    api.call("POST", `/v1/deployments/${id}/roles/${options.role ?? "ep"}/resize`, { token: options.token ?? editor, body: { width }, headers: options.headers });
  const finish = async (opId: string) => {
    expect((await api.call("PATCH", `/v1/agent/operations/${opId}`, { token: agent.token, body: { phase: "Running", step: "AdmittingPods" } })).status).toBe(200);
    expect((await api.call("PATCH", `/v1/agent/operations/${opId}`, { token: agent.token, body: { phase: "Succeeded", result: { width: 4 } } })).status).toBe(200);
  };

  it("answers 202 with a Pending resize Operation; the spec has the new width, a new generation and a deployment.updated", async () => {
    const dep = await createElastic("grow");
    const res = await resize(dep.id, 4);
    expect(res.status).toBe(202);
    const op = res.body;
    expect(res.headers.get("location")).toBe(`/v1/operations/${op.id}`);
    expect(op).toEqual({
      id: expect.stringMatching(/^op_[0-9a-z]{20}$/),
      kind: "resize",
      deploymentId: dep.id,
      projectId: team,
      role: "ep",
      phase: "Pending",
      step: "Requested",
      params: { fromWidth: 2, toWidth: 4 },
      steps: [{ name: "Requested", startedAt: "2026-11-30T12:00:00.000Z" }],
      message: 'resize of role "ep" from 2 to 4 ranks requested; waiting for the agent',
      startedAt: "2026-11-30T12:00:00.000Z",
      resourceVersion: expect.any(Number),
      createdAt: "2026-11-30T12:00:00.000Z",
      updatedAt: "2026-11-30T12:00:00.000Z",
    });
    const after = (await api.call("GET", `/v1/deployments/${dep.id}`, { token: viewer })).body;
    expect(after.spec.roles[0].elastic).toEqual({ width: 4, maxWidth: 8 });
    expect(after.generation).toBe(dep.generation + 1);
    expect((await api.call("GET", res.headers.get("location")!, { token: viewer })).body).toEqual(op);
    const events = (await api.call("GET", `/v1/events?deploymentId=${dep.id}`)).body.items;
    expect(events.map((e: { type: string }) => e.type)).toEqual(["deployment.created", "deployment.updated"]);
    expect(events[1].data).toMatchObject({ specChanged: true, actor: { kind: "user" }, deployment: { generation: dep.generation + 1 } });
    // The agent sees it among what it must do, and carries it out.
    const pending = (await api.call("GET", "/v1/agent/operations?phase=Pending&phase=Running", { token: agent.token })).body.items;
    expect(pending.map((o: { id: string }) => o.id)).toContain(op.id);
    await finish(op.id);
    const done = (await api.call("GET", `/v1/events?deploymentId=${dep.id}`)).body.items;
    expect(done.map((e: { type: string }) => e.type)).toEqual(["deployment.created", "deployment.updated", "operation.started", "deployment.resized", "operation.succeeded"]);
    expect(done[3].data).toMatchObject({ role: "ep", fromWidth: 2, toWidth: 4, operationId: op.id, actor: { kind: "agent" } });
  });

  it("a second resize while one is Pending or Running is a 409 naming it; after it ends, another may start; the same width is a 409", async () => {
    const dep = await createElastic("busy");
    const first = (await resize(dep.id, 3)).body;
    const second = await resize(dep.id, 5);
    expect(second.status).toBe(409);
    expect(second.body).toEqual({
      type: `${PROBLEM}conflict`,
      title: "Conflict",
      status: 409,
      detail: `A resize of role "ep" is already Pending (${first.id}); wait for it to finish (GET /v1/operations/${first.id}).`,
      instance: expect.any(String),
      existingOperationId: first.id,
    });
    expect((await api.call("GET", `/v1/deployments/${dep.id}`)).body.spec.roles[0].elastic.width).toBe(3);
    await finish(first.id);
    const same = await resize(dep.id, 3);
    expect(same.status).toBe(409);
    expect(same.body).toEqual({
      type: `${PROBLEM}conflict`,
      title: "Conflict",
      status: 409,
      detail: 'Role "ep" already has width 3; there is nothing to resize.',
      instance: expect.any(String),
      currentWidth: 3,
    });
    const shrink = await resize(dep.id, 2);
    expect(shrink.status).toBe(202);
    expect(shrink.body.params).toEqual({ fromWidth: 3, toWidth: 2 });
  });

  it("asking again for the spec's width retries a resize that failed (new Pending operation, spec and generation unchanged); after a success it is a 409", async () => {
    const dep = await createElastic("retry");
    const first = (await resize(dep.id, 4)).body;
    expect((await api.call("PATCH", `/v1/agent/operations/${first.id}`, { token: agent.token, body: { phase: "Running", step: "Scaling" } })).status).toBe(200);
    const refused = { reason: "ScaleRefused", message: "the engine refused 5 calls" };
    expect((await api.call("PATCH", `/v1/agent/operations/${first.id}`, { token: agent.token, body: { phase: "Failed", error: refused } })).status).toBe(200);
    const before = (await api.call("GET", `/v1/deployments/${dep.id}`, { token: editor })).body;

    const again = await resize(dep.id, 4);
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body).toMatchObject({ kind: "resize", phase: "Pending", params: { fromWidth: 2, toWidth: 4, retryOf: first.id } });
    expect(again.body.id).not.toBe(first.id);
    const after = (await api.call("GET", `/v1/deployments/${dep.id}`, { token: editor })).body;
    expect(after.generation).toBe(before.generation);
    expect(after.spec).toEqual(before.spec);
    // One at a time still holds for retries.
    expect((await resize(dep.id, 4)).status).toBe(409);

    await finish(again.body.id);
    const done = await resize(dep.id, 4);
    expect(done.status).toBe(409);
    expect(done.body.detail).toMatch(/already has width 4/);
  });

  it("refuses a role without elastic (422 at the role), an unknown role (404), and widths outside 2..maxWidth (422 at /width)", async () => {
    const plain = (await api.call("POST", "/v1/deployments", {
      token: editor,
      body: { name: "plain", spec: { model: { name: "Qwen/Qwen3-8B" }, engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" }, roles: [{ name: "main" }] } },
    })).body;
    const notElastic = await resize(plain.id, 2, { role: "main" });
    expect(notElastic.status).toBe(422);
    expect(notElastic.body).toEqual({
      type: `${PROBLEM}invalid-spec`,
      title: "The deployment spec was not admitted",
      status: 422,
      detail: 'Role "main" is not elastic, so it has no width to resize.',
      instance: expect.any(String),
      errors: [
        {
          pointer: "/spec/roles/0/elastic",
          message: 'role "main" has no elastic section; resize changes elastic.width of an elastic EP role (change replicas with PATCH instead)',
        },
      ],
    });
    const dep = await createElastic("bounds", 2, 4);
    const unknown = await resize(dep.id, 3, { role: "nope" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe('No role "nope" in deployment "bounds"; its roles are ep.');
    for (const width of [1, 5]) {
      const res = await resize(dep.id, width);
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ pointer: "/width", message: `width ${width} must be within 2..maxWidth (4) of role "ep"` }]);
    }
    const malformed = await resize(dep.id, "four");
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors).toEqual([{ pointer: "/width", message: "width must be a number, not string" }]);
    const extra = await api.call("POST", `/v1/deployments/${dep.id}/roles/ep/resize`, { token: editor, body: { width: 3, force: true } });
    expect(extra.status).toBe(400);
    expect(extra.body.errors[0].pointer).toBe("/force");
    expect((await api.call("GET", `/v1/operations?deploymentId=${dep.id}`)).body.items).toEqual([]);
  });

  it("honours If-Match (412 with the current ETag) and checks the quota at the new width (403, nothing changed)", async () => {
    const quotaEditor = await api.createKey("editor", await api.createProject("resize-quota", 7));
    const dep = await createElastic("guarded", 2, 8, quotaEditor);
    const resize = (id: string, width: number, options: { headers?: Record<string, string> } = {}) =>
      api.call("POST", `/v1/deployments/${id}/roles/ep/resize`, { token: quotaEditor, body: { width }, headers: options.headers });
    const stale = await resize(dep.id, 3, { headers: { "If-Match": `"${dep.resourceVersion - 1}"` } });
    expect(stale.status).toBe(412);
    expect(stale.headers.get("etag")).toBe(`"${dep.resourceVersion}"`);
    expect(stale.body).toMatchObject({ type: `${PROBLEM}precondition-failed`, status: 412, currentETag: `"${dep.resourceVersion}"` });
    // The project's quota is 7 GPUs: width 8 (one GPU per rank) does not fit.
    const quota = await resize(dep.id, 8);
    expect(quota.status).toBe(403);
    expect(quota.body).toMatchObject({ type: `${PROBLEM}quota-exceeded`, status: 403, needed: 8, available: 7, limit: 7 });
    const unchanged = (await api.call("GET", `/v1/deployments/${dep.id}`)).body;
    expect(unchanged.resourceVersion).toBe(dep.resourceVersion);
    expect((await api.call("GET", `/v1/operations?deploymentId=${dep.id}`)).body.items).toEqual([]);
    const ok = await resize(dep.id, 3, { headers: { "If-Match": `"${dep.resourceVersion}"` } });
    expect(ok.status).toBe(202);
  });

  it("replays an Idempotency-Key; viewers and agents may not resize (403), other projects do not see it (404)", async () => {
    const dep = await createElastic("keyed");
    const first = await resize(dep.id, 3, { headers: { "Idempotency-Key": "resize-keyed-3" } });
    const replay = await resize(dep.id, 3, { headers: { "Idempotency-Key": "resize-keyed-3" } });
    expect(replay.status).toBe(202);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    const viewerTry = await resize(dep.id, 4, { token: viewer });
    expect(viewerTry.status).toBe(403);
    expect(viewerTry.body.detail).toBe('This needs a key with role "editor" or higher; this key has role "viewer".');
    const agentTry = await resize(dep.id, 4, { token: agent.token });
    expect(agentTry.status).toBe(403);
    expect(agentTry.body.detail).toBe("An agent credential cannot use this route; use a user API key (bp_…).");
    const hidden = await resize(dep.id, 4, { token: outsider });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ type: `${PROBLEM}not-found`, title: "Not found", status: 404, detail: `No deployment "${dep.id}".`, instance: expect.any(String) });
    // By name, too.
    expect((await resize("keyed", 4)).status).toBe(409);
  });

  it("concurrent resizes of one role: exactly one 202, every other a 409 naming it", async () => {
    const dep = await createElastic("racy", 2, 8);
    const answers = await Promise.all([3, 4, 5, 6, 7, 3, 4, 5].map((width) => resize(dep.id, width)));
    const accepted = answers.filter((a) => a.status === 202);
    expect(accepted).toHaveLength(1);
    const winner = accepted[0]!.body;
    for (const refused of answers.filter((a) => a.status !== 202)) {
      expect(refused.status).toBe(409);
      expect(refused.body.existingOperationId).toBe(winner.id);
    }
    const after = (await api.call("GET", `/v1/deployments/${dep.id}`)).body;
    expect(after.spec.roles[0].elastic.width).toBe(winner.params.toWidth);
    expect(after.generation).toBe(2);
    expect((await api.call("GET", `/v1/operations?deploymentId=${dep.id}`)).body.items).toEqual([winner]);
  });
});

// Operations (docs/design.md §3.3): the agent records, lists and moves on its operations; users read
// them. Idempotent creation (Idempotency-Key replay, and a 409 naming the active operation of
// the same target), phase rules, server-kept steps and finishedAt, events in order with their
// payloads, and isolation between projects and between clusters.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";
import { DRIVERS } from "../support/databases.ts";

const PROBLEM = "https://berth.dev/problems/";

describe.each(DRIVERS)("operations on %s", (driver) => {
  let api: TestApi;
  let agent: { token: string; clusterId: string };
  let otherAgent: { token: string; clusterId: string };
  let team: string;
  let editor: string;
  let viewer: string;
  let outsider: string;
  let dep: string;
  let pd: string;

  beforeAll(async () => {
    api = await createTestApi(driver);
    agent = await api.createAgent("ops-main");
    team = await api.createProject("ops-team");
    const elsewhere = await api.createProject("ops-elsewhere");
    editor = await api.createKey("editor", team);
    viewer = await api.createKey("viewer", team);
    outsider = await api.createKey("admin", elsewhere);
    dep = (await api.call("POST", "/v1/deployments", { token: editor, body: deploymentBody("chat", { spec: { ...deploymentBody("x").spec, roles: [{ name: "main", replicas: 3 }] } }) })).body.id;
    pd = (
      await api.call("POST", "/v1/deployments", {
        token: editor,
        body: deploymentBody("pd", {
          spec: {
            ...deploymentBody("x").spec,
            router: {},
            roles: [
              { name: "prefill", kind: "prefill", replicas: 2 },
              { name: "decode", kind: "decode", replicas: 2 },
            ],
          },
        }),
      })
    ).body.id;
    // Created after the deployments (which then had one cluster to run on).
    otherAgent = await api.createAgent("ops-other");
  });
  afterAll(async () => {
    await api?.close();
  });

  const asAgent = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    api.call(method, path, { token: agent.token, body, headers });
  const retire = (replica: number, extra: Record<string, unknown> = {}) => ({ kind: "retire", deploymentId: dep, role: "main", replica, step: "Withdrawing", ...extra });
  const eventsOf = async (deploymentId: string) =>
    ((await api.call("GET", `/v1/events?deploymentId=${deploymentId}&limit=500`)).body.items as Array<{ type: string; data: any; seq: number }>).filter(
      (e) => e.type.startsWith("operation.") || e.type.startsWith("replica."),
    );

  it("records a Running retirement: 201, Location, steps, and operation.started then replica.retiring", async () => {
    const res = await asAgent("POST", "/v1/agent/operations", retire(2, { phase: "Running", params: { reason: "scale-down" }, message: "withdrawing r2" }));
    expect(res.status).toBe(201);
    const op = res.body;
    expect(op.id).toMatch(/^op_[0-9a-z]{20}$/);
    expect(res.headers.get("location")).toBe(`/v1/operations/${op.id}`);
    expect(op).toEqual({
      id: op.id,
      kind: "retire",
      deploymentId: dep,
      projectId: team,
      role: "main",
      replica: 2,
      phase: "Running",
      step: "Withdrawing",
      params: { reason: "scale-down" },
      steps: [{ name: "Withdrawing", startedAt: "2026-11-30T12:00:00.000Z" }],
      message: "withdrawing r2",
      startedAt: "2026-11-30T12:00:00.000Z",
      resourceVersion: expect.any(Number),
      createdAt: "2026-11-30T12:00:00.000Z",
      updatedAt: "2026-11-30T12:00:00.000Z",
    });
    const events = (await eventsOf(dep)).filter((e) => e.data.operation?.id === op.id || e.data.operationId === op.id);
    expect(events.map((e) => e.type)).toEqual(["operation.started", "replica.retiring"]);
    expect(events[0]!.data).toMatchObject({
      operation: { id: op.id, kind: "retire", deploymentId: dep, role: "main", replica: 2, phase: "Running", step: "Withdrawing" },
      deployment: { id: dep, name: "chat", projectId: team },
      actor: { kind: "agent" },
      params: { reason: "scale-down" },
    });
    expect(events[1]!.data).toMatchObject({ deployment: { id: dep }, role: "main", replica: 2, operationId: op.id, actor: { kind: "agent" } });
  });

  it("refuses a second active operation of the same target with 409 naming it; another replica is fine", async () => {
    const existing = (await asAgent("GET", `/v1/agent/operations?deploymentId=${dep}&phase=Running`)).body.items[0];
    const res = await asAgent("POST", "/v1/agent/operations", retire(2));
    expect(res.status).toBe(409);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(res.body).toEqual({
      type: `${PROBLEM}conflict`,
      title: "Conflict",
      status: 409,
      detail: `A retire operation of role "main" replica 2 is already Running (${existing.id}); adopt it (GET /v1/operations/${existing.id}) instead of starting another.`,
      instance: expect.any(String),
      existingOperationId: existing.id,
    });
    expect((await asAgent("POST", "/v1/agent/operations", retire(1))).status).toBe(201);
    expect((await asAgent("POST", "/v1/agent/operations", { ...retire(2), kind: "restart", step: "Deleting" })).status).toBe(201);
  });

  it("an Idempotency-Key replays the first answer; a different key for the same target is the 409", async () => {
    const body = { kind: "retire", deploymentId: pd, role: "decode", replica: 1, step: "Withdrawing" };
    const first = await asAgent("POST", "/v1/agent/operations", body, { "Idempotency-Key": "retire-pd-decode-1" });
    expect(first.status).toBe(201);
    const replay = await asAgent("POST", "/v1/agent/operations", body, { "Idempotency-Key": "retire-pd-decode-1" });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.headers.get("location")).toBe(`/v1/operations/${first.body.id}`);
    expect(replay.body).toEqual(first.body);
    const other = await asAgent("POST", "/v1/agent/operations", body, { "Idempotency-Key": "retire-pd-decode-1-again" });
    expect(other.status).toBe(409);
    expect(other.body.existingOperationId).toBe(first.body.id);
    const listed = await asAgent("GET", `/v1/agent/operations?deploymentId=${pd}`);
    expect(listed.body.items.map((o: { id: string }) => o.id)).toEqual([first.body.id]);
  });

  it("moves on through steps: the server closes each step, sets finishedAt, and records replica.retired then operation.succeeded", async () => {
    const op = (await asAgent("POST", "/v1/agent/operations", retire(0, { phase: "Running" }))).body;
    api.clock.advance(1000);
    const draining = await asAgent("PATCH", `/v1/agent/operations/${op.id}`, { step: "Draining", progress: { current: 5, target: 0, unit: "requests" } });
    expect(draining.status).toBe(200);
    expect(draining.body.steps).toEqual([
      { name: "Withdrawing", startedAt: "2026-11-30T12:00:00.000Z", finishedAt: "2026-11-30T12:00:01.000Z" },
      { name: "Draining", startedAt: "2026-11-30T12:00:01.000Z" },
    ]);
    expect(draining.body.progress).toEqual({ current: 5, target: 0, unit: "requests" });
    api.clock.advance(1000);
    const done = await asAgent("PATCH", `/v1/agent/operations/${op.id}`, { phase: "Succeeded", step: "Settling", progress: null, result: { gpusFreed: 1 }, message: "retired" });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ phase: "Succeeded", step: "Settling", result: { gpusFreed: 1 }, message: "retired", finishedAt: "2026-11-30T12:00:02.000Z" });
    expect(done.body).not.toHaveProperty("progress");
    expect(done.body.steps.at(-1)).toEqual({ name: "Settling", startedAt: "2026-11-30T12:00:02.000Z", finishedAt: "2026-11-30T12:00:02.000Z" });
    expect(done.body.steps.every((s: { finishedAt?: string }) => s.finishedAt)).toBe(true);
    const events = (await eventsOf(dep)).filter((e) => e.data.operation?.id === op.id || e.data.operationId === op.id);
    expect(events.map((e) => e.type)).toEqual(["operation.started", "replica.retiring", "replica.retired", "operation.succeeded"]);
    expect(events[3]!.data).toMatchObject({ operation: { id: op.id, phase: "Succeeded", step: "Settling" }, result: { gpusFreed: 1 } });

    const again = await asAgent("PATCH", `/v1/agent/operations/${op.id}`, { message: "late" });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      type: `${PROBLEM}conflict`,
      title: "Conflict",
      status: 409,
      detail: `Operation "${op.id}" is Succeeded; terminal phases are final. Record new work as a new operation.`,
      instance: expect.any(String),
      phase: "Succeeded",
    });
    // The target is free again once its operation ended.
    expect((await asAgent("POST", "/v1/agent/operations", retire(0))).status).toBe(201);
  });

  it("refuses an invalid transition with 409 listing the allowed phases; Aborted is operation.failed with its phase", async () => {
    const op = (await asAgent("POST", "/v1/agent/operations", { kind: "restart", deploymentId: pd, role: "prefill", replica: 0, step: "Waiting" })).body;
    expect(op.phase).toBe("Pending");
    const skip = await asAgent("PATCH", `/v1/agent/operations/${op.id}`, { phase: "Succeeded" });
    expect(skip.status).toBe(409);
    expect(skip.body).toEqual({
      type: `${PROBLEM}conflict`,
      title: "Conflict",
      status: 409,
      detail: `Operation "${op.id}" cannot go from Pending to Succeeded; it may go to Pending, Running, Failed, Aborted.`,
      instance: expect.any(String),
      phase: "Pending",
      allowedPhases: ["Pending", "Running", "Failed", "Aborted"],
    });
    expect((await asAgent("PATCH", `/v1/agent/operations/${op.id}`, { phase: "Running", step: "Deleting" })).status).toBe(200);
    const back = await asAgent("PATCH", `/v1/agent/operations/${op.id}`, { phase: "Pending" });
    expect(back.status).toBe(409);
    expect(back.body.allowedPhases).toEqual(["Running", "Succeeded", "Failed", "Aborted"]);
    const aborted = await asAgent("PATCH", `/v1/agent/operations/${op.id}`, {
      phase: "Aborted",
      error: { reason: "DrainBudgetExceeded", message: "still 3 requests in flight after 240 s; the replica is kept" },
    });
    expect(aborted.status).toBe(200);
    expect(aborted.body.finishedAt).toBeDefined();
    const events = (await eventsOf(pd)).filter((e) => e.data.operation?.id === op.id);
    expect(events.map((e) => e.type)).toEqual(["operation.started", "operation.failed"]);
    expect(events[1]!.data).toMatchObject({ phase: "Aborted", error: { reason: "DrainBudgetExceeded" }, operation: { phase: "Aborted" } });
    // Restarts announce no replica events.
    expect((await eventsOf(pd)).some((e) => e.type.startsWith("replica.") && e.data.operationId === op.id)).toBe(false);
  });

  it("lists the cluster's non-terminal operations for a restarted agent, paged", async () => {
    const all = await asAgent("GET", "/v1/agent/operations?phase=Pending&phase=Running&limit=200");
    expect(all.status).toBe(200);
    expect(all.body.items.length).toBeGreaterThanOrEqual(4);
    expect(all.body.items.every((o: { phase: string }) => o.phase === "Pending" || o.phase === "Running")).toBe(true);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await asAgent("GET", `/v1/agent/operations?phase=Pending&phase=Running&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.items.map((o: { id: string }) => o.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all.body.items.map((o: { id: string }) => o.id));
    expect((await api.call("GET", "/v1/agent/operations", { token: otherAgent.token })).body.items).toEqual([]);
  });

  it("users read operations by id and list them by deployment, kind and phase, within their project", async () => {
    const mine = (await asAgent("GET", `/v1/agent/operations?deploymentId=${dep}&kind=retire&limit=200`)).body.items;
    const one = mine[0];
    const read = await api.call("GET", `/v1/operations/${one.id}`, { token: viewer });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(one);
    expect(read.headers.get("etag")).toBe(`"${one.resourceVersion}"`);
    const listed = await api.call("GET", `/v1/operations?deploymentId=${dep}&kind=retire&limit=200`, { token: viewer });
    expect(listed.body.items).toEqual(mine);
    const succeeded = await api.call("GET", `/v1/operations?phase=Succeeded&limit=200`, { token: viewer });
    expect(succeeded.body.items.length).toBeGreaterThan(0);
    expect(succeeded.body.items.every((o: { phase: string }) => o.phase === "Succeeded")).toBe(true);
    const both = await api.call("GET", `/v1/operations?phase=Succeeded&phase=Aborted&limit=200`, { token: viewer });
    expect(new Set(both.body.items.map((o: { phase: string }) => o.phase))).toEqual(new Set(["Succeeded", "Aborted"]));

    const hidden = await api.call("GET", `/v1/operations/${one.id}`, { token: outsider });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({
      type: `${PROBLEM}not-found`,
      title: "Not found",
      status: 404,
      detail: `No operation "${one.id}".`,
      instance: expect.any(String),
    });
    expect((await api.call("GET", "/v1/operations?limit=200", { token: outsider })).body.items).toEqual([]);
    expect((await api.call("GET", `/v1/operations?projectId=${team}`, { token: outsider })).body.items).toEqual([]);
    expect((await api.call("GET", `/v1/operations?projectId=${team}&limit=200`)).body.items.length).toBeGreaterThan(0);
    expect((await api.call("GET", "/v1/operations/op_nope", { token: viewer })).status).toBe(404);
    const badPhase = await api.call("GET", "/v1/operations?phase=Done", { token: viewer });
    expect(badPhase.status).toBe(400);
    expect(badPhase.body.errors).toEqual([{ parameter: "phase", message: 'phase[0] must be one of "Pending", "Running", "Succeeded", "Failed", "Aborted"' }]);
  });

  it("keeps agents to their cluster (404) and user keys off agent routes (403), and agents off user routes", async () => {
    const op = (await asAgent("GET", `/v1/agent/operations?deploymentId=${dep}&phase=Running`)).body.items[0];
    const foreign = await api.call("POST", "/v1/agent/operations", { token: otherAgent.token, body: retire(1) });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({
      type: `${PROBLEM}not-found`,
      title: "Not found",
      status: 404,
      detail: `No deployment "${dep}" in this agent's cluster.`,
      instance: expect.any(String),
    });
    const foreignPatch = await api.call("PATCH", `/v1/agent/operations/${op.id}`, { token: otherAgent.token, body: { message: "mine now" } });
    expect(foreignPatch.status).toBe(404);
    expect(foreignPatch.body.detail).toBe(`No operation "${op.id}" in this agent's cluster.`);

    for (const [method, path, body] of [
      ["POST", "/v1/agent/operations", retire(1)],
      ["GET", "/v1/agent/operations", undefined],
      ["PATCH", `/v1/agent/operations/${op.id}`, { message: "x" }],
    ] as const) {
      const res = await api.call(method, path, { token: editor, body });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({
        type: `${PROBLEM}forbidden`,
        title: "Not allowed",
        status: 403,
        detail: "Only a cluster agent credential (ba_…) may use this route; user keys cannot.",
        instance: expect.any(String),
      });
    }
    expect((await asAgent("GET", `/v1/operations/${op.id}`)).status).toBe(403);
    expect((await asAgent("GET", "/v1/operations")).status).toBe(403);
  });

  it("refuses bodies with pointers: unknown role 422 at /role, schema 400 at each field", async () => {
    const role = await asAgent("POST", "/v1/agent/operations", { ...retire(1), role: "nope" });
    expect(role.status).toBe(422);
    expect(role.body).toEqual({
      type: `${PROBLEM}invalid-spec`,
      title: "The deployment spec was not admitted",
      status: 422,
      detail: "The operation names a role the deployment does not have.",
      instance: expect.any(String),
      errors: [{ pointer: "/role", message: 'no role "nope" in deployment "chat"; its roles are main' }],
    });
    const bad = await asAgent("POST", "/v1/agent/operations", { kind: "explode", deploymentId: dep, role: "main", step: "drain it", phase: "Succeeded", colour: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.type).toBe(`${PROBLEM}invalid-request`);
    expect(bad.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(["/colour", "/kind", "/phase", "/step"]);
    const op = (await asAgent("GET", `/v1/agent/operations?deploymentId=${dep}&phase=Running`)).body.items[0];
    const badPatch = await asAgent("PATCH", `/v1/agent/operations/${op.id}`, { progress: { current: -1, unit: "requests" }, finishedAt: "now" });
    expect(badPatch.status).toBe(400);
    expect(badPatch.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(["/finishedAt", "/progress/current"]);
    expect((await asAgent("POST", "/v1/agent/operations", { ...retire(1), deploymentId: "dep_00000000000000000000" })).status).toBe(404);
  });

  it("goes with its deployment", async () => {
    const spec = { ...deploymentBody("x").spec, clusterId: agent.clusterId };
    const doomed = (await api.call("POST", "/v1/deployments", { token: editor, body: deploymentBody("doomed", { spec }) })).body.id;
    const op = (await asAgent("POST", "/v1/agent/operations", { kind: "restart", deploymentId: doomed, role: "main", replica: 0, step: "Deleting" })).body;
    expect((await api.call("DELETE", `/v1/deployments/${doomed}`, { token: editor })).status).toBe(204);
    expect((await api.call("GET", `/v1/operations/${op.id}`, { token: editor })).status).toBe(404);
  });
});

// Metrics (PUT by the agent, GET by users; 404 until written, the latest only), status.scaling,
// and the scaling history: deployment.scaled for the autoscaler's applied changes (recorded by
// its replicas PATCH) and for shadow recommendations (posted as agent events), newest first.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";
import { DRIVERS } from "../support/databases.ts";

const PROBLEM = "https://berth.dev/problems/";

const metricsAt = (observedAt: string, running: number) => ({
  observedAt,
  roles: [
    {
      name: "main",
      signals: [
        { name: "requests_running", value: running, unit: "requests", podCount: 2, observedAt },
        { name: "ttft_p90", unit: "ms", podCount: 0, observedAt },
      ],
      missing: [{ name: "ttft_p90", reason: "no request finished in the interval" }, { name: "requests_waiting", pod: "chat-main-r1-m0", reason: "scrape timed out after 2 s" }],
    },
  ],
});

describe.each(DRIVERS)("metrics and scaling on %s", (driver) => {
  let api: TestApi;
  let agent: { token: string; clusterId: string };
  let otherAgent: { token: string; clusterId: string };
  let team: string;
  let viewer: string;
  let outsider: string;
  let dep: { id: string; resourceVersion: number };

  beforeAll(async () => {
    api = await createTestApi(driver);
    agent = await api.createAgent("metrics-main");
    team = await api.createProject("metrics-team");
    viewer = await api.createKey("viewer", team);
    outsider = await api.createKey("admin", await api.createProject("metrics-other"));
    const spec = { ...deploymentBody("x").spec, roles: [{ name: "main", replicas: 2 }], scaling: { mode: "active", roles: [{ name: "main", maxReplicas: 8 }] } };
    dep = (await api.call("POST", "/v1/deployments", { body: deploymentBody("chat", { projectId: team, spec }) })).body;
    otherAgent = await api.createAgent("metrics-other");
  });
  afterAll(async () => {
    await api?.close();
  });

  const asAgent = (method: string, path: string, body?: unknown) => api.call(method, path, { token: agent.token, body });

  it("answers 404 until the agent wrote metrics, then the latest only", async () => {
    const before = await api.call("GET", `/v1/deployments/${dep.id}/metrics`, { token: viewer });
    expect(before.status).toBe(404);
    expect(before.body).toEqual({
      type: `${PROBLEM}not-found`,
      title: "Not found",
      status: 404,
      detail: 'No metrics for deployment "chat" yet; its agent has not reported any.',
      instance: expect.any(String),
      reason: "NoMetricsYet",
    });
    const first = await asAgent("PUT", `/v1/agent/deployments/${dep.id}/metrics`, metricsAt("2026-11-30T11:59:58.000Z", 5));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ deploymentId: dep.id, observedAt: "2026-11-30T11:59:58.000Z", receivedAt: "2026-11-30T12:00:00.000Z", roles: metricsAt("2026-11-30T11:59:58.000Z", 5).roles });
    api.clock.advance(15_000);
    await asAgent("PUT", `/v1/agent/deployments/${dep.id}/metrics`, metricsAt("2026-11-30T12:00:13.000Z", 9));
    const read = await api.call("GET", "/v1/deployments/chat/metrics", { token: viewer });
    expect(read.status).toBe(200);
    expect(read.body.observedAt).toBe("2026-11-30T12:00:13.000Z");
    expect(read.body.roles[0].signals[0]).toEqual({ name: "requests_running", value: 9, unit: "requests", podCount: 2, observedAt: "2026-11-30T12:00:13.000Z" });
    // An unobserved signal stays without a value: never a zero.
    expect(read.body.roles[0].signals[1]).not.toHaveProperty("value");
  });

  it("keeps metrics to the deployment's agent, its project's users, and real roles", async () => {
    const path = `/v1/agent/deployments/${dep.id}/metrics`;
    const foreign = await api.call("PUT", path, { token: otherAgent.token, body: metricsAt("2026-11-30T12:00:00.000Z", 1) });
    expect(foreign.status).toBe(404);
    expect(foreign.body.detail).toBe(`No deployment "${dep.id}" in this agent's cluster.`);
    const user = await api.call("PUT", path, { body: metricsAt("2026-11-30T12:00:00.000Z", 1) });
    expect(user.status).toBe(403);
    expect(user.body.detail).toBe("Only a cluster agent credential (ba_…) may use this route; user keys cannot.");
    expect((await api.call("GET", `/v1/deployments/${dep.id}/metrics`, { token: outsider })).status).toBe(404);
    const role = await asAgent("PUT", path, { ...metricsAt("2026-11-30T12:00:00.000Z", 1), roles: [{ name: "decode", signals: [], missing: [] }] });
    expect(role.status).toBe(422);
    expect(role.body).toEqual({
      type: `${PROBLEM}invalid-spec`,
      title: "The deployment spec was not admitted",
      status: 422,
      detail: "The metrics name roles the deployment does not have.",
      instance: expect.any(String),
      errors: [{ pointer: "/roles/0/name", message: 'no role "decode" in deployment "chat"; its roles are main' }],
    });
    const bad = await asAgent("PUT", path, { observedAt: "yesterday", roles: [{ name: "main", signals: [{ name: "Bad Name", value: "1", unit: "x", podCount: -1, observedAt: "2026-11-30T12:00:00Z" }], missing: [] }] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([
      "/observedAt",
      "/roles/0/signals/0/name",
      "/roles/0/signals/0/podCount",
      "/roles/0/signals/0/value",
    ]);
  });

  it("stores status.scaling as the agent writes it, and refuses a malformed one with a pointer", async () => {
    const scaling = {
      mode: "active",
      roles: [
        {
          name: "main",
          current: 2,
          recommended: 4,
          desired: 4,
          reason: "QueueDepth",
          message: "ceil(30 / 8) = 4",
          signals: [{ name: "requests_running", value: 30, unit: "requests", observedAt: "2026-11-30T12:00:13.000Z" }],
        },
      ],
    };
    const res = await asAgent("PUT", `/v1/deployments/${dep.id}/status`, { phase: "Ready", scaling });
    expect(res.status).toBe(200);
    expect(res.body.status.scaling).toEqual(scaling);
    const bad = await asAgent("PUT", `/v1/deployments/${dep.id}/status`, { phase: "Ready", scaling: { mode: "sometimes", roles: [{ name: "main", current: -1 }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual([
      "/scaling/mode",
      "/scaling/roles/0/current",
      "/scaling/roles/0/reason",
      "/scaling/roles/0/signals",
    ]);
  });

  it("records the autoscaler's replicas PATCH as deployment.scaled (active) with the recommendation's reason and signals", async () => {
    api.clock.advance(1000);
    const patch = await api.call("PATCH", `/v1/deployments/${dep.id}`, { token: agent.token, body: { spec: { roles: [{ name: "main", replicas: 4 }] } } });
    expect(patch.status).toBe(200);
    const history = await api.call("GET", `/v1/deployments/${dep.id}/scaling-events`, { token: viewer });
    expect(history.status).toBe(200);
    expect(history.body.items).toHaveLength(1);
    expect(history.body.items[0]).toMatchObject({
      type: "deployment.scaled",
      deploymentId: dep.id,
      projectId: team,
      data: {
        deployment: { id: dep.id, name: "chat" },
        actor: { kind: "autoscaler" },
        role: "main",
        from: 2,
        to: 4,
        mode: "active",
        reason: "QueueDepth",
        message: "ceil(30 / 8) = 4",
        signals: [{ name: "requests_running", value: 30, unit: "requests", observedAt: "2026-11-30T12:00:13.000Z" }],
      },
    });
    // A user's replicas change is not the autoscaler's: no deployment.scaled.
    await api.call("PATCH", `/v1/deployments/${dep.id}`, { body: { spec: { roles: [{ name: "main", replicas: 4 }] }, labels: { touched: "yes" } } });
    expect((await api.call("GET", `/v1/deployments/${dep.id}/scaling-events`)).body.items).toHaveLength(1);
  });

  it("takes shadow recommendations as agent events and refuses active ones or unknown roles (422)", async () => {
    for (let i = 0; i < 4; i++) {
      api.clock.advance(15_000);
      const res = await asAgent("POST", "/v1/agent/events", {
        type: "deployment.scaled",
        deploymentId: dep.id,
        data: { role: "main", from: 4, to: 5 + i, mode: "shadow", reason: "QueueDepth", signals: [{ name: "requests_waiting", value: 40 + i, unit: "requests", observedAt: api.clock.now().toISOString() }] },
      });
      expect(res.status).toBe(202);
    }
    const active = await asAgent("POST", "/v1/agent/events", {
      type: "deployment.scaled",
      deploymentId: dep.id,
      data: { role: "other", from: 4, to: 5, mode: "active", reason: "QueueDepth" },
    });
    expect(active.status).toBe(422);
    expect(active.body).toEqual({
      type: `${PROBLEM}invalid-spec`,
      title: "The deployment spec was not admitted",
      status: 422,
      detail: "The deployment.scaled event was refused.",
      instance: expect.any(String),
      errors: [
        {
          pointer: "/data/mode",
          message: "an applied change is recorded by the autoscaler's replicas PATCH itself (deployment.scaled, mode active); post only shadow recommendations",
        },
        { pointer: "/data/role", message: 'no role "other" in this deployment; its roles are main' },
      ],
    });
    const malformed = await asAgent("POST", "/v1/agent/events", { type: "deployment.scaled", deploymentId: dep.id, data: { role: "main", to: "six" } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(["/data/from", "/data/mode", "/data/reason", "/data/to"]);
  });

  it("lists the history newest first with stable cursors, scoped like the deployment", async () => {
    const all = (await api.call("GET", `/v1/deployments/${dep.id}/scaling-events?limit=200`)).body;
    expect(all.nextCursor).toBeNull();
    expect(all.items.map((e: { data: { to: number; mode: string } }) => `${e.data.mode}:${e.data.to}`)).toEqual(["shadow:8", "shadow:7", "shadow:6", "shadow:5", "active:4"]);
    const seqs = all.items.map((e: { seq: number }) => e.seq);
    expect([...seqs].sort((a, b) => b - a)).toEqual(seqs);

    const first = (await api.call("GET", `/v1/deployments/${dep.id}/scaling-events?limit=2`)).body;
    expect(first.items.map((e: { seq: number }) => e.seq)).toEqual(seqs.slice(0, 2));
    // A new event does not shift the pages already started.
    await asAgent("POST", "/v1/agent/events", { type: "deployment.scaled", deploymentId: dep.id, data: { role: "main", from: 4, to: 3, mode: "shadow", reason: "QueueDepth" } });
    const second = (await api.call("GET", `/v1/deployments/${dep.id}/scaling-events?limit=2&cursor=${first.nextCursor}`)).body;
    expect(second.items.map((e: { seq: number }) => e.seq)).toEqual(seqs.slice(2, 4));
    const third = (await api.call("GET", `/v1/deployments/${dep.id}/scaling-events?limit=2&cursor=${second.nextCursor}`)).body;
    expect(third.items.map((e: { seq: number }) => e.seq)).toEqual(seqs.slice(4));
    expect(third.nextCursor).toBeNull();

    const badCursor = await api.call("GET", `/v1/deployments/${dep.id}/scaling-events?cursor=nope`);
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.errors).toEqual([{ parameter: "cursor", message: "not a valid cursor; pass the nextCursor of a previous page, or omit it to start over" }]);
    expect((await api.call("GET", `/v1/deployments/${dep.id}/scaling-events`, { token: outsider })).status).toBe(404);
    expect((await api.call("GET", `/v1/deployments/${dep.id}/scaling-events`, { token: agent.token })).status).toBe(403);
  });

  it("metrics go with the deployment", async () => {
    const spec = { ...deploymentBody("x").spec, clusterId: agent.clusterId };
    const doomed = (await api.call("POST", "/v1/deployments", { body: deploymentBody("doomed", { projectId: team, spec }) })).body.id;
    const ok = await asAgent("PUT", `/v1/agent/deployments/${doomed}/metrics`, { observedAt: "2026-11-30T12:00:00.000Z", roles: [{ name: "main", signals: [], missing: [] }] });
    expect(ok.status).toBe(200);
    expect((await api.call("DELETE", `/v1/deployments/${doomed}`)).status).toBe(204);
    expect((await asAgent("PUT", `/v1/agent/deployments/${doomed}/metrics`, { observedAt: "2026-11-30T12:00:00.000Z", roles: [] })).status).toBe(404);
  });
});

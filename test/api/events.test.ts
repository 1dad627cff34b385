// The event log: written with each change (or not at all), read in order, per project.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../support/databases.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

describe.each(DRIVERS)("event log on %s", (driver) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi(driver);
  });
  afterAll(async () => {
    await api?.close();
  });

  type Listed = { seq: number; type: string; data: any; projectId: string };
  const eventsOf = async (deploymentId: string): Promise<Listed[]> =>
    (await api.call("GET", `/v1/events?deploymentId=${deploymentId}`)).body.items;

  it("records create, update and delete in order, with actor and summary", async () => {
    const created = await api.call("POST", "/v1/deployments", { body: deploymentBody("evented", { projectId: api.defaultProjectId }) });
    const id = created.body.id;
    await api.call("PATCH", `/v1/deployments/${id}`, { body: { labels: { a: "1" } } });
    await api.call("PATCH", `/v1/deployments/${id}`, { body: { spec: { roles: [{ ...created.body.spec.roles[0], replicas: 2 }] } } });
    await api.call("DELETE", `/v1/deployments/${id}`);

    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual(["deployment.created", "deployment.updated", "deployment.updated", "deployment.deleted"]);
    expect(events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq)].sort((a, b) => a - b));
    expect(events[0]!.data).toMatchObject({
      deployment: { id, name: "evented", generation: 1, phase: "Pending" },
      actor: { kind: "user", keyId: "admin-token" },
    });
    expect(events[1]!.data).toMatchObject({ specChanged: false, labelsChanged: true, deployment: { generation: 1 } });
    expect(events[2]!.data).toMatchObject({ specChanged: true, labelsChanged: false, deployment: { generation: 2 } });
    expect(events[0]!.projectId).toBe(api.defaultProjectId);
  });

  it("writes no event for a refused or no-op write", async () => {
    const created = await api.call("POST", "/v1/deployments", { body: deploymentBody("quiet", { projectId: api.defaultProjectId }) });
    const id = created.body.id;
    const refused = await api.call("PATCH", `/v1/deployments/${id}`, { body: { spec: { engine: { name: "sglang" } } } });
    expect(refused.status).toBe(422);
    await api.call("PATCH", `/v1/deployments/${id}`, { body: { labels: {} } });
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["deployment.created"]);
  });

  it("records entering Ready from the agent's status, once", async () => {
    const agent = await api.createAgent(`events-${driver}`);
    const created = await api.call("POST", "/v1/deployments", { body: deploymentBody("gets-ready", { projectId: api.defaultProjectId }) });
    const id = created.body.id;
    const ready = { phase: "Ready", observedGeneration: 1, message: "all replicas serve" };
    await api.call("PUT", `/v1/deployments/${id}/status`, { token: agent.token, body: { phase: "Starting" } });
    await api.call("PUT", `/v1/deployments/${id}/status`, { token: agent.token, body: ready });
    await api.call("PUT", `/v1/deployments/${id}/status`, { token: agent.token, body: ready });
    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual(["deployment.created", "deployment.ready"]);
    expect(events[1]!.data).toMatchObject({ previousPhase: "Starting", message: "all replicas serve" });
  });

  it("shows a project key only its project's events, and filters by type", async () => {
    const other = await api.createProject(`other-${driver}`);
    const key = await api.createKey("viewer", other);
    await api.call("POST", "/v1/deployments", { body: deploymentBody("theirs", { projectId: other }) });
    const seen = (await api.call("GET", "/v1/events?limit=500", { token: key })).body.items;
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((e: { projectId: string }) => e.projectId === other)).toBe(true);
    const onlyDeleted = (await api.call("GET", "/v1/events?type=deployment.deleted&limit=500")).body.items;
    expect(onlyDeleted.every((e: { type: string }) => e.type === "deployment.deleted")).toBe(true);
    const bad = await api.call("GET", "/v1/events?type=deployment.exploded");
    expect(bad.status).toBe(400);
  });

  it("pages with nextCursor and after", async () => {
    const all = (await api.call("GET", "/v1/events?limit=500")).body.items as Array<{ seq: number }>;
    const first = await api.call("GET", "/v1/events?limit=2");
    expect(first.body.nextCursor).toBe(String(all[1]!.seq));
    const rest = await api.call("GET", `/v1/events?limit=500&after=${first.body.nextCursor}`);
    expect([...first.body.items, ...rest.body.items].map((e: { seq: number }) => e.seq)).toEqual(all.map((e) => e.seq));
    expect(rest.body.nextCursor).toBeNull();
  });
});

describe("events commit in seq order (postgres)", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi("postgres");
  });
  afterAll(async () => {
    await api?.close();
  });

  it("holds a later event until an earlier uncommitted one commits", async () => {
    const slow = new pg.Client({ connectionString: api.database.url });
    await slow.connect();
    try {
      // A writer that follows the protocol (lock, insert, …) but is slow to commit.
      await slow.query("begin");
      await slow.query("select pg_advisory_xact_lock(727173)");
      await slow.query(
        `insert into events (id, type, occurred_at, project_id, data) values ('evt_slow', 'deployment.updated', now(), $1, '{}')`,
        [api.defaultProjectId],
      );
      let finished = false;
      const creating = api
        .call("POST", "/v1/deployments", { body: deploymentBody("after-slow", { projectId: api.defaultProjectId }) })
        .then((res) => {
          finished = true;
          return res;
        });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(finished).toBe(false);
      const meanwhile = (await api.call("GET", "/v1/events?limit=500")).body.items as Array<{ id: string; seq: number }>;
      expect(meanwhile.map((e) => e.id)).not.toContain("evt_slow");
      await slow.query("commit");
      const created = await creating;
      expect(created.status).toBe(201);
      const shown = (await api.call("GET", "/v1/events?limit=500")).body.items as Array<{ id: string; seq: number; deploymentId?: string }>;
      const slowSeq = shown.find((e) => e.id === "evt_slow")!.seq;
      const createdSeq = shown.find((e) => e.deploymentId === created.body.id)!.seq;
      expect(slowSeq).toBeLessThan(createdSeq);
      expect(Math.max(...meanwhile.map((e) => e.seq))).toBeLessThan(slowSeq);
    } finally {
      await slow.end();
    }
  });
});

// The agent side of the API (docs/design.md §4): heartbeat and connection events, desired state
// by long-poll, deletion confirmation, agent events, and the autoscaler's replicas write.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sweepClusters } from "../../src/services/agent/sweep-clusters.ts";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import { DRIVERS } from "../support/databases.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

const node = (name: string, gpus: number) => ({ name, gpuType: "nvidia-h100-80gb", gpuCapacity: gpus, gpuAllocatable: gpus, gpuFree: gpus });
const beat = (gpus = 16) => ({ agentVersion: "0.1.0-test", inventory: { nodes: [node("n1", gpus / 2), node("n2", gpus / 2)] } });

describe.each(DRIVERS)("agent protocol on %s", (driver) => {
  let api: TestApi;
  let agent: { token: string; clusterId: string };
  let waiting: string;

  beforeAll(async () => {
    api = await createTestApi(driver);
    // Created before any cluster exists: it waits, unassigned, for the first one.
    waiting = (await api.call("POST", "/v1/deployments", { body: deploymentBody("early", { projectId: api.defaultProjectId }) })).body.id;
    agent = await api.createAgent("main");
  });
  afterAll(async () => {
    await api?.close();
  });

  const asAgent = (method: string, path: string, body?: unknown) => api.call(method, path, { token: agent.token, body });
  const create = (name: string, spec?: unknown) =>
    api.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId: api.defaultProjectId, ...(spec ? { spec } : {}) }) });
  const clusterEvents = async () =>
    ((await api.call("GET", "/v1/events?type=cluster.connected&type=cluster.disconnected&limit=500")).body.items as Array<{
      type: string;
      data: { clusterId: string };
    }>).filter((e) => e.data.clusterId === agent.clusterId).map((e) => e.type);

  it("is Pending until the first heartbeat, then Connected with its inventory, announced once", async () => {
    expect((await api.call("GET", `/v1/clusters/${agent.clusterId}`)).body.status.phase).toBe("Pending");
    const res = await asAgent("POST", "/v1/agent/heartbeat", beat());
    expect(res.status).toBe(200);
    expect(res.body.status).toMatchObject({ phase: "Connected", agentVersion: "0.1.0-test" });
    await asAgent("POST", "/v1/agent/heartbeat", beat());
    const cluster = await api.call("GET", `/v1/clusters/${agent.clusterId}`);
    expect(cluster.body.inventory.nodes).toHaveLength(2);
    expect(await clusterEvents()).toEqual(["cluster.connected"]);
  });

  it("turns Disconnected after 30 s of silence, announced once, and Connected again on the next heartbeat", async () => {
    api.clock.advance(31_000);
    expect((await api.call("GET", `/v1/clusters/${agent.clusterId}`)).body.status.phase).toBe("Disconnected");
    const ctx = { db: api.database.db, clock: api.clock, config: DEFAULT_APP_CONFIG };
    expect(await sweepClusters({ ctx })).toBe(1);
    expect(await sweepClusters({ ctx })).toBe(0);
    await asAgent("POST", "/v1/agent/heartbeat", beat());
    expect(await clusterEvents()).toEqual(["cluster.connected", "cluster.disconnected", "cluster.connected"]);
  });

  it("gives the first registered cluster the deployments that waited, and new ones", async () => {
    const desired = await asAgent("GET", "/v1/agent/desired?since=0");
    expect(desired.status).toBe(200);
    expect(desired.body.items.map((i: { deployment: { id: string } }) => i.deployment.id)).toContain(waiting);
    const fresh = await create("assigned-at-create");
    const again = await asAgent("GET", "/v1/agent/desired?since=0");
    expect(again.body.items.map((i: { deployment: { id: string } }) => i.deployment.id)).toContain(fresh.body.id);
  });

  it("names each deployment's project, for its namespace berth-<project>", async () => {
    const project = (await api.call("GET", `/v1/projects/${api.defaultProjectId}`)).body;
    const { resourceVersion } = (await asAgent("GET", "/v1/agent/desired?since=0")).body;
    const snapshot = (await asAgent("GET", "/v1/agent/desired?since=0")).body.items;
    expect(snapshot.find((i: { deployment: { id: string } }) => i.deployment.id === waiting)).toMatchObject({ projectName: project.name });
    const polling = asAgent("GET", `/v1/agent/desired?since=${resourceVersion}&waitSeconds=20`);
    const created = await create("named-project");
    expect((await polling).body.items).toEqual([expect.objectContaining({ projectName: project.name, deployment: expect.objectContaining({ id: created.body.id }) })]);
  });

  it("long-polls: answers within a second of a change, or empty when the wait ends", async () => {
    const { resourceVersion } = (await asAgent("GET", "/v1/agent/desired?since=0")).body;
    const started = Date.now();
    const idle = await asAgent("GET", `/v1/agent/desired?since=${resourceVersion}&waitSeconds=1`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(idle.body).toEqual({ resourceVersion, items: [], deleted: [] });

    const polling = asAgent("GET", `/v1/agent/desired?since=${resourceVersion}&waitSeconds=20`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const changedAt = Date.now();
    const created = await create("wakes-the-poll");
    const woken = await polling;
    expect(Date.now() - changedAt).toBeLessThan(1000);
    expect(woken.body.items.map((i: { deployment: { id: string } }) => i.deployment.id)).toEqual([created.body.id]);
    expect(woken.body.resourceVersion).toBe(created.body.resourceVersion);
  });

  it("refuses GPUs beyond the reported inventory", async () => {
    const spec = { ...deploymentBody("x").spec, roles: [{ name: "main", replicas: 5, resources: { gpus: 4 } }] };
    const res = await create("too-big", spec);
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.errors)).toMatch(/16/);
  });

  it("deletes through the agent: Deleting, then confirmed, gone, with a tombstone and an event", async () => {
    const created = await create("to-delete");
    const { resourceVersion } = (await asAgent("GET", "/v1/agent/desired?since=0")).body;
    const deleting = await api.call("DELETE", `/v1/deployments/${created.body.id}`);
    expect(deleting.status).toBe(202);
    const told = (await asAgent("GET", `/v1/agent/desired?since=${resourceVersion}&waitSeconds=1`)).body;
    expect(told.items).toEqual([expect.objectContaining({ deleting: true })]);
    expect((await asAgent("DELETE", `/v1/agent/deployments/${created.body.id}`)).status).toBe(204);
    expect((await api.call("GET", `/v1/deployments/${created.body.id}`)).status).toBe(404);
    const after = (await asAgent("GET", `/v1/agent/desired?since=${told.resourceVersion}&waitSeconds=1`)).body;
    expect(after.deleted).toEqual([expect.objectContaining({ id: created.body.id, name: "to-delete" })]);
    const events = (await api.call("GET", `/v1/events?deploymentId=${created.body.id}`)).body.items.map((e: { type: string }) => e.type);
    expect(events).toEqual(["deployment.created", "deployment.updated", "deployment.deleted"]);
  });

  it("refuses to confirm a deletion nobody asked for", async () => {
    const created = await create("not-deleted");
    expect((await asAgent("DELETE", `/v1/agent/deployments/${created.body.id}`)).status).toBe(409);
    expect((await api.call("GET", `/v1/deployments/${created.body.id}`)).status).toBe(200);
  });

  it("lets the agent scale replicas, as the autoscaler, and nothing else", async () => {
    const created = await create("autoscaled");
    const role = created.body.spec.roles[0];
    const scaled = await asAgent("PATCH", `/v1/deployments/${created.body.id}`, { spec: { roles: [{ ...role, replicas: 2 }] } });
    expect(scaled.status).toBe(200);
    expect(scaled.body.spec.roles[0].replicas).toBe(2);
    expect(scaled.body.generation).toBe(2);
    const updated = (await api.call("GET", `/v1/events?deploymentId=${created.body.id}&type=deployment.updated`)).body.items;
    expect(updated[0].data.actor).toEqual({ kind: "autoscaler", keyId: expect.stringMatching(/^agc_/) });
    const image = await asAgent("PATCH", `/v1/deployments/${created.body.id}`, { spec: { engine: { image: "vllm/vllm-openai:v0.12.0" } } });
    expect(image.status).toBe(403);
    const labels = await asAgent("PATCH", `/v1/deployments/${created.body.id}`, { labels: { x: "y" } });
    expect(labels.status).toBe(403);
    expect((await asAgent("PUT", `/v1/deployments/${created.body.id}`, deploymentBody("autoscaled"))).status).toBe(403);
  });

  it("records agent events in the log, for its own cluster's deployments only", async () => {
    const created = await create("with-events");
    const sent = await asAgent("POST", "/v1/agent/events", { type: "replica.retired", deploymentId: created.body.id, data: { replica: 1 } });
    expect(sent.status).toBe(202);
    const events = (await api.call("GET", `/v1/events?deploymentId=${created.body.id}&type=replica.retired`)).body.items;
    expect(events[0].data).toMatchObject({ replica: 1, actor: { kind: "agent" } });
    expect((await asAgent("POST", "/v1/agent/events", { type: "deployment.created", deploymentId: created.body.id })).status).toBe(400);
    expect((await asAgent("POST", "/v1/agent/events", { type: "replica.retired", deploymentId: "dep_00000000000000000000" })).status).toBe(404);
  });

  it("keeps an agent to its own cluster", async () => {
    const other = await api.createAgent("second");
    const mine = await create2("mine-only", agent.clusterId);
    const theirs = (await api.call("GET", `/v1/agent/desired?since=0`, { token: other.token })).body.items;
    expect(theirs.map((i: { deployment: { id: string } }) => i.deployment.id)).not.toContain(mine.body.id);
    expect((await api.call("PUT", `/v1/deployments/${mine.body.id}/status`, { token: other.token, body: { phase: "Ready" } })).status).toBe(404);
    expect((await api.call("DELETE", `/v1/agent/deployments/${mine.body.id}`, { token: other.token })).status).toBe(404);
    // With two clusters, a deployment must say where it runs.
    const ambiguous = await create("where-to");
    expect(ambiguous.status).toBe(422);
    expect(ambiguous.body.errors).toEqual([expect.objectContaining({ pointer: "/spec/clusterId" })]);
  });

  async function create2(name: string, clusterId: string) {
    const spec = { ...deploymentBody(name).spec, clusterId };
    return api.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId: api.defaultProjectId, spec }) });
  }

  it("turns its deployments' Ready Unknown while the cluster is silent, until the agent reports again", async () => {
    const ready = {
      phase: "Ready",
      observedGeneration: 1,
      endpoint: "http://10.0.0.7:8000",
      conditions: [{ type: "Ready", status: "True", reason: "Ready", message: "serving", observedGeneration: 1, lastTransitionTime: api.clock.now().toISOString() }],
    };
    await asAgent("POST", "/v1/agent/heartbeat", beat());
    expect((await asAgent("PUT", `/v1/deployments/${waiting}/status`, ready)).status).toBe(200);
    api.clock.advance(31_000);
    const ctx = { db: api.database.db, clock: api.clock, config: DEFAULT_APP_CONFIG };
    expect(await sweepClusters({ ctx })).toBe(1);
    const silent = (await api.call("GET", `/v1/deployments/${waiting}`)).body;
    expect(silent.status.phase).toBe("Ready");
    expect(silent.status.endpoint).toBe("http://10.0.0.7:8000");
    expect(silent.status.conditions).toEqual([
      expect.objectContaining({ type: "Ready", status: "Unknown", reason: "ClusterDisconnected", observedGeneration: 1, lastTransitionTime: api.clock.now().toISOString() }),
    ]);
    expect(silent.status.message).toMatch(/^cluster main has not reported since .+; the rest of this status is its last observation$/);
    // The change reaches the agent's long-poll like any other, so it re-sends what it observes.
    const changed = (await asAgent("GET", `/v1/agent/desired?since=${silent.resourceVersion - 1}`)).body.items;
    expect(changed.map((i: { deployment: { id: string } }) => i.deployment.id)).toContain(waiting);
    await asAgent("POST", "/v1/agent/heartbeat", beat());
    expect((await asAgent("PUT", `/v1/deployments/${waiting}/status`, ready)).status).toBe(200);
    expect((await api.call("GET", `/v1/deployments/${waiting}`)).body.status.conditions[0].status).toBe("True");
  });

  it("refuses user keys on agent routes", async () => {
    expect((await api.call("GET", "/v1/agent/desired")).status).toBe(403);
    expect((await api.call("POST", "/v1/agent/heartbeat", { body: beat() })).status).toBe(403);
  });
});

describe("deleting where no agent ever connected", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await createTestApi("pglite");
  });
  afterAll(async () => {
    await api?.close();
  });

  it("removes the deployment at once (204)", async () => {
    await api.createAgent("never-started");
    const created = await api.call("POST", "/v1/deployments", { body: deploymentBody("orphan", { projectId: api.defaultProjectId }) });
    expect((await api.call("DELETE", `/v1/deployments/${created.body.id}`)).status).toBe(204);
  });
});

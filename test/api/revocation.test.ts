// Revocation that bites (docs/design.md §14.4): a revoked key's open streams end with an
// `error` event, a revoked agent's long-poll ends with 401, on this instance and — through
// NOTIFY — on another instance on the same database; the periodic revalidation ends them
// when a notice is lost. Agent credentials rotate with an overlap window, clusters get new
// join tokens, and a cluster is deleted only when nothing is placed on it or it is moved.
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";
import { readSse, type SseFrame } from "../support/sse.ts";

const REVOKE_BOUND_MS = 5000;

const revokedError = (frames: SseFrame[]) =>
  frames.find((f) => f.event === "error" && f.data !== undefined && JSON.parse(f.data).reason === "CredentialRevoked");

async function open(api: TestApi, path: string, token: string): Promise<Response> {
  return await api.app.request(path, { headers: { Authorization: `Bearer ${token}` } });
}

/** Reads the stream until it ends with the revoked error (readSse fails after the bound). */
async function expectRevokedEnd(response: Response): Promise<SseFrame[]> {
  const frames = await readSse(response, (f) => revokedError(f) !== undefined, REVOKE_BOUND_MS);
  expect(revokedError(frames)).toBeDefined();
  return frames;
}

/** A viewer key, installation-wide, with its id (for revoking it). */
async function createViewerKey(api: TestApi): Promise<{ id: string; token: string }> {
  const created = await api.call("POST", "/v1/api-keys", { body: { name: "revocable", role: "viewer" } });
  expect(created.status).toBe(201);
  return { id: created.body.id, token: created.body.token };
}

async function revokeKey(api: TestApi, id: string): Promise<void> {
  expect((await api.call("DELETE", `/v1/api-keys/${id}`)).status).toBe(204);
}

async function lastSeq(api: TestApi): Promise<number> {
  let after = 0;
  for (let page = 0; page < 100; page++) {
    const items = (await api.call("GET", `/v1/events?after=${after}&limit=500`)).body.items as Array<{ seq: number }>;
    if (items.length === 0) return after;
    after = items[items.length - 1]!.seq;
  }
  return after;
}

/** Waits (bounded) until a request with `token` is refused. */
async function refusedWithin(api: TestApi, token: string, path: string, ms: number): Promise<number> {
  const started = Date.now();
  for (let i = 0; i < 200 && Date.now() - started < ms; i++) {
    if ((await api.call("GET", path, { token })).status === 401) return Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`still accepted after ${ms} ms`);
}

describe.each(["pglite", "postgres", "neon"] as const)("revocation on %s", (driver) => {
  let api: TestApi;

  beforeAll(async () => {
    // A long principal cache: what ends these streams is the revocation, not a TTL.
    api = await createTestApi(driver, { authCacheSeconds: 300, agentCredentialOverlapSeconds: 600 }, { revalidateMs: 1000 });
  });
  afterAll(async () => {
    await api?.close();
  });

  it("ends an open event stream and a watch of a revoked key with an error event", async () => {
    const key = await createViewerKey(api);
    const events = await open(api, "/v1/events/stream?after=999999999", key.token);
    const watch = await open(api, "/v1/deployments?watch=true", key.token);
    expect(events.status).toBe(200);
    expect(watch.status).toBe(200);
    await revokeKey(api, key.id);
    await Promise.all([expectRevokedEnd(events), expectRevokedEnd(watch)]);
    expect((await api.call("GET", "/v1/deployments", { token: key.token })).status).toBe(401);
  });

  it("ends a revoked agent's long-poll with 401, and every later request", async () => {
    const agent = await api.createAgent("revoked-agent");
    const polling = api.call("GET", "/v1/agent/desired?since=999999999&waitSeconds=30", { token: agent.token });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    const revoked = await api.call("POST", `/v1/clusters/${agent.clusterId}/credentials/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ clusterId: agent.clusterId, revoked: 1 });
    const answer = await polling;
    expect(answer.status).toBe(401);
    expect(Date.now() - started).toBeLessThan(REVOKE_BOUND_MS);
    expect(answer.body.detail).toContain("join token");
    expect((await api.call("POST", "/v1/agent/heartbeat", { token: agent.token, body: { agentVersion: "t", inventory: { nodes: [] } } })).status).toBe(401);
    // Nothing left to revoke the second time.
    expect((await api.call("POST", `/v1/clusters/${agent.clusterId}/credentials/revoke`)).body.revoked).toBe(0);
  });

  it("rotates an agent credential: both work during the overlap, then only the new one", async () => {
    const agent = await api.createAgent("rotating");
    // Cached before the rotation: the rotation must not leave it cached without its expiry.
    expect((await api.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token: agent.token })).status).toBe(200);
    const rotated = await api.call("POST", "/v1/agent/credentials", { token: agent.token });
    expect(rotated.status).toBe(201);
    expect(rotated.body.clusterId).toBe(agent.clusterId);
    expect(rotated.body.token).toMatch(/^ba_/);
    expect(Date.parse(rotated.body.previousExpiresAt) - api.clock.now().getTime()).toBe(600_000);
    const desired = (token: string) => api.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token });
    expect((await desired(agent.token)).status).toBe(200);
    expect((await desired(rotated.body.token)).status).toBe(200);
    api.clock.advance(599_000);
    expect((await desired(agent.token)).status).toBe(200);
    api.clock.advance(2_000);
    expect((await desired(agent.token)).status).toBe(401);
    expect((await desired(rotated.body.token)).status).toBe(200);
    // An expired credential cannot rotate itself back to life.
    expect((await api.call("POST", "/v1/agent/credentials", { token: agent.token })).status).toBe(401);
  });

  it("ends a rotated credential's long-poll once its overlap has passed (revalidation)", async () => {
    const agent = await api.createAgent("rotated-poll");
    const rotated = await api.call("POST", "/v1/agent/credentials", { token: agent.token });
    expect(rotated.status).toBe(201);
    const polling = api.call("GET", "/v1/agent/desired?since=999999999&waitSeconds=30", { token: agent.token });
    await new Promise((resolve) => setTimeout(resolve, 100));
    api.clock.advance(601_000);
    const answer = await polling;
    expect(answer.status).toBe(401);
  });

  it("re-issues a join token: the previous one stops working, the new one registers once", async () => {
    const created = await api.call("POST", "/v1/clusters", { body: { name: "rejoin" } });
    const clusterId = created.body.cluster.id;
    const reissued = await api.call("POST", `/v1/clusters/${clusterId}/join-token`);
    expect(reissued.status).toBe(200);
    expect(reissued.body.joinToken).not.toBe(created.body.joinToken);
    expect(Date.parse(reissued.body.expiresAt) - api.clock.now().getTime()).toBe(3_600_000);
    const register = (joinToken: string) => api.call("POST", "/v1/agent/register", { token: null, body: { joinToken } });
    expect((await register(created.body.joinToken)).status).toBe(401);
    const registered = await register(reissued.body.joinToken);
    expect(registered.status).toBe(201);
    expect(registered.body.clusterId).toBe(clusterId);
    expect((await register(reissued.body.joinToken)).status).toBe(401);
    expect((await api.call("POST", "/v1/clusters/clu_00000000000000000000/join-token")).status).toBe(404);
    const viewer = await api.createKey("admin", api.defaultProjectId);
    expect((await api.call("POST", `/v1/clusters/${clusterId}/join-token`, { token: viewer })).status).toBe(403);
  });

  it("refuses to delete a cluster with deployments (409 naming them), moves them with moveTo, then 204", async () => {
    const project = await api.createProject(`del-${driver}`);
    const from = await api.createAgent("delete-from");
    const to = await api.createAgent("delete-to");
    const names = ["d-one", "d-two"];
    for (const name of names) {
      const spec = { ...deploymentBody(name).spec, clusterId: from.clusterId };
      expect((await api.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId: project, spec }) })).status).toBe(201);
    }
    const refused = await api.call("DELETE", `/v1/clusters/${from.clusterId}`);
    expect(refused.status).toBe(409);
    expect(refused.headers.get("content-type")).toContain("application/problem+json");
    expect(refused.body.deployments.map((d: { name: string }) => d.name).sort()).toEqual(names);
    expect(refused.body.moreDeployments).toBe(0);
    expect(refused.body.detail).toContain("moveTo");
    expect((await api.call("GET", `/v1/clusters/${from.clusterId}`)).status).toBe(200);

    expect((await api.call("DELETE", `/v1/clusters/${from.clusterId}?moveTo=${from.clusterId}`)).status).toBe(400);
    const missing = await api.call("DELETE", `/v1/clusters/${from.clusterId}?moveTo=clu_00000000000000000000`);
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0].parameter).toBe("moveTo");

    const before = await api.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token: to.token });
    const moved = await api.call("DELETE", `/v1/clusters/${from.clusterId}?moveTo=${to.clusterId}`);
    expect(moved.status).toBe(204);
    expect((await api.call("GET", `/v1/clusters/${from.clusterId}`)).status).toBe(404);
    // The old agent is revoked; the new one receives the deployments, their spec naming it.
    expect((await api.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token: from.token })).status).toBe(401);
    const after = await api.call("GET", `/v1/agent/desired?since=${before.body.resourceVersion}&waitSeconds=0`, { token: to.token });
    const received = after.body.items.filter((i: { deployment: { name: string } }) => names.includes(i.deployment.name));
    expect(received.map((i: { deployment: { name: string } }) => i.deployment.name).sort()).toEqual(names);
    expect(received.every((i: { deployment: { spec: { clusterId: string } } }) => i.deployment.spec.clusterId === to.clusterId)).toBe(true);
    const events = await api.call("GET", "/v1/events?type=cluster.deleted&limit=500");
    const deleted = events.body.items.find((e: { data: { clusterId: string } }) => e.data.clusterId === from.clusterId);
    expect(deleted.data).toMatchObject({ movedTo: to.clusterId, revokedCredentials: 1 });
    expect(deleted.data.movedDeploymentIds).toHaveLength(2);

    // An empty cluster goes at once; a second delete finds nothing.
    const empty = await api.call("POST", "/v1/clusters", { body: { name: "delete-empty" } });
    expect((await api.call("DELETE", `/v1/clusters/${empty.body.cluster.id}`)).status).toBe(204);
    expect((await api.call("DELETE", `/v1/clusters/${empty.body.cluster.id}`)).status).toBe(404);
  });

  it("names at most 20 deployments in a refusal, then counts the rest", async () => {
    const project = await api.createProject(`many-${driver}`);
    const crowded = await api.createAgent("crowded");
    for (let i = 0; i < 22; i++) {
      const spec = { ...deploymentBody(`m-${i}`).spec, clusterId: crowded.clusterId };
      expect((await api.call("POST", "/v1/deployments", { body: deploymentBody(`m-${i}`, { projectId: project, spec }) })).status).toBe(201);
    }
    const refused = await api.call("DELETE", `/v1/clusters/${crowded.clusterId}`);
    expect(refused.status).toBe(409);
    expect(refused.body.deployments).toHaveLength(20);
    expect(refused.body.moreDeployments).toBe(2);
    expect(refused.body.detail).toContain("and 2 more");
  });
});

describe("revocation across two API instances on one PostgreSQL database", () => {
  let a: TestApi;
  let b: TestApi;

  beforeAll(async () => {
    a = await createTestApi("postgres", { authCacheSeconds: 300 });
    // B caches principals for 5 minutes and revalidates rarely: only a NOTIFY ends its streams in time.
    b = await createTestApi("postgres", { authCacheSeconds: 300 }, { sameDatabaseAs: a.database, revalidateMs: 60_000 });
    expect(await b.notifications.start()).toBe(true);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it("refuses on B a key revoked on A, and ends B's streams, within 5 s", async () => {
    const key = await createViewerKey(a);
    // Cached on B for 5 minutes by this request.
    expect((await b.call("GET", "/v1/deployments", { token: key.token })).status).toBe(200);
    const stream = await open(b, "/v1/events/stream?after=999999999", key.token);
    const watch = await open(b, "/v1/deployments?watch=true", key.token);
    await revokeKey(a, key.id);
    await Promise.all([expectRevokedEnd(stream), expectRevokedEnd(watch)]);
    expect(await refusedWithin(b, key.token, "/v1/deployments", REVOKE_BOUND_MS)).toBeLessThan(REVOKE_BOUND_MS);
  });

  it("ends on B the long-poll of an agent whose credentials were revoked on A", async () => {
    const agent = await a.createAgent("two-instances");
    const polling = b.call("GET", "/v1/agent/desired?since=999999999&waitSeconds=30", { token: agent.token });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await a.call("POST", `/v1/clusters/${agent.clusterId}/credentials/revoke`)).status).toBe(200);
    expect((await polling).status).toBe(401);
  });

  it("wakes B's watch and event stream on a write made through A (NOTIFY; the fallback timer is 10 s)", async () => {
    const key = await createViewerKey(a);
    const named = (frames: SseFrame[], event: string) =>
      frames.some((f) => f.event === event && f.data !== undefined && f.data.includes('"wake-me"'));
    const watch = await open(b, "/v1/deployments?watch=true", key.token);
    const events = await open(b, `/v1/events/stream?after=${await lastSeq(a)}`, key.token);
    const watching = readSse(watch, (f) => named(f, "ADDED"), 3000);
    const following = readSse(events, (f) => named(f, "deployment.created"), 3000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await a.call("POST", "/v1/deployments", { body: deploymentBody("wake-me", { projectId: a.defaultProjectId }) })).status).toBe(201);
    await Promise.all([watching, following]);
  });
});

describe("revalidation when a notice is lost", () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await createTestApi("postgres", { authCacheSeconds: 300 }, { revalidateMs: 200 });
  });
  afterAll(async () => {
    await api?.close();
  });

  it("ends the stream of a key revoked without a NOTIFY", async () => {
    const key = await createViewerKey(api);
    const stream = await open(api, "/v1/events/stream?after=999999999", key.token);
    // Behind the API's back: no notice is sent, only the row changes.
    await api.database.db.execute(sql`update api_keys set revoked_at = now() where id = ${key.id}`);
    await expectRevokedEnd(stream);
  });
});

// Resume points older than what retention keeps: every cursor route answers 410 problem+json
// naming the horizon and the way out, before any stream starts; at or past the horizon, and
// without a resume point, reads go on. And a watch without a resume point sends its snapshot
// in pages.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readHorizon } from "../../db/queries/retention.ts";
import type { Principal } from "../../src/domain/principal.ts";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import { snapshotPage, startWatchSnapshot } from "../../src/services/deployments/watch-deployments.ts";
import { purgeRetention } from "../../src/services/retention/purge-retention.ts";
import { ADMIN_TOKEN, createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";
import { readSse, type SseFrame } from "../support/sse.ts";

const DAY = 24 * 60 * 60 * 1000;
const dataFrames = (frames: SseFrame[]) => frames.filter((f) => f.data !== undefined && f.event !== undefined);

describe.each(["pglite", "postgres"] as const)("retention cursors on %s", (driver) => {
  let api: TestApi;
  let agentToken: string;
  let eventsHorizon: number;
  let tombstoneHorizon: number;
  const open = (path: string, headers: Record<string, string> = {}, token = ADMIN_TOKEN) =>
    api.app.request(path, { headers: { Authorization: `Bearer ${token}`, ...headers } });
  const create = async (name: string) => {
    const res = await api.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId: api.defaultProjectId }) });
    expect(res.status).toBe(201);
    return res.body as { id: string; resourceVersion: number };
  };

  beforeAll(async () => {
    api = await createTestApi(driver, { streamPollMs: 20, streamHeartbeatMs: 150 });
    // Deployments created and deleted before any agent connected (removed at once: tombstones).
    for (const name of ["old-a", "old-b"]) {
      const { id } = await create(name);
      expect((await api.call("DELETE", `/v1/deployments/${id}`)).status).toBe(204);
    }
    api.clock.advance(8 * DAY);
    await create("new-a");
    await purgeRetention({ ctx: { db: api.database.db, clock: api.clock, config: DEFAULT_APP_CONFIG } });
    eventsHorizon = await readHorizon(api.database.db, "events");
    tombstoneHorizon = await readHorizon(api.database.db, "deployment_tombstones");
    expect(eventsHorizon).toBeGreaterThan(1);
    expect(tombstoneHorizon).toBeGreaterThan(1);
    ({ token: agentToken } = await api.createAgent("edge"));
  }, 60_000);
  afterAll(async () => {
    await api?.close();
  });

  const expectGone = async (response: Response, horizon: number, wayOut: RegExp) => {
    expect(response.status).toBe(410);
    expect(response.headers.get("content-type")).toMatch(/application\/problem\+json/);
    const problem = (await response.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({ type: "https://berth.dev/problems/gone", status: 410, purgedThrough: horizon, oldestAvailable: horizon + 1 });
    expect(problem.detail).toMatch(wayOut);
  };

  it("GET /v1/events?after= below the horizon is 410; at it, or without after, the kept events", async () => {
    await expectGone(await open("/v1/events?after=1"), eventsHorizon, /without a resume point/);
    const at = await api.call("GET", `/v1/events?after=${eventsHorizon}`);
    expect(at.status).toBe(200);
    const all = await api.call("GET", "/v1/events");
    expect(all.status).toBe(200);
    expect(all.body.items.map((e: { type: string }) => e.type)).toContain("deployment.created");
    expect(all.body.items.every((e: { seq: number }) => e.seq > eventsHorizon)).toBe(true);
    expect(at.body.items).toEqual(all.body.items);
  });

  it("GET /v1/events/stream resuming below the horizon (after or Last-Event-ID) is 410 before the stream starts", async () => {
    await expectGone(await open("/v1/events/stream?after=1"), eventsHorizon, /no Last-Event-ID/);
    await expectGone(await open("/v1/events/stream", { "Last-Event-ID": "1" }), eventsHorizon, /without a resume point/);
    const frames = dataFrames(await readSse(await open("/v1/events/stream"), (f) => dataFrames(f).length >= 1));
    expect(Number(frames[0]!.id)).toBeGreaterThan(eventsHorizon);
  });

  it("a deployment watch resuming below the tombstones' horizon is 410; without a resume point it lists", async () => {
    await expectGone(await open("/v1/deployments?watch=true&resourceVersion=1"), tombstoneHorizon, /without resourceVersion/);
    await expectGone(await open("/v1/deployments?watch=true", { "Last-Event-ID": "1" }), tombstoneHorizon, /without Last-Event-ID/);
    const resumed = await open(`/v1/deployments?watch=true&resourceVersion=${tombstoneHorizon}`);
    expect(resumed.status).toBe(200);
    await resumed.body?.cancel();
    const frames = dataFrames(await readSse(await open("/v1/deployments?watch=true"), (f) => dataFrames(f).length >= 1));
    expect(frames.map((f) => f.event)).toEqual(["ADDED"]);
  });

  it("the agent's desired state since a purged version is 410; since=0 answers at a version past the horizon", async () => {
    const gone = await open(`/v1/agent/desired?since=1&waitSeconds=0`, {}, agentToken);
    await expectGone(gone, tombstoneHorizon, /since=0/);
    const full = await api.call("GET", "/v1/agent/desired?since=0&waitSeconds=0", { token: agentToken });
    expect(full.status).toBe(200);
    expect(full.body.resourceVersion).toBeGreaterThanOrEqual(tombstoneHorizon);
    const next = await api.call("GET", `/v1/agent/desired?since=${full.body.resourceVersion}&waitSeconds=0`, { token: agentToken });
    expect(next.status).toBe(200);
  });

  it("sends a watch's snapshot in pages, all with the snapshot's version, then the changes after it", async () => {
    const project = await api.createProject(`pages-${driver}`);
    const ids: string[] = [];
    // More than one page of the route (100 a page).
    for (let i = 0; i < 103; i++) {
      const res = await api.call("POST", "/v1/deployments", { body: deploymentBody(`p${i}`, { projectId: project }) });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    const frames = dataFrames(await readSse(await open(`/v1/deployments?watch=true&projectId=${project}`), (f) => dataFrames(f).length >= 103, 15_000));
    expect(new Set(frames.map((f) => f.event))).toEqual(new Set(["ADDED"]));
    expect(frames.map((f) => JSON.parse(f.data!).object.id).sort()).toEqual([...ids].sort());
    const versions = new Set(frames.map((f) => f.id));
    expect(versions.size).toBe(1);
    // Resuming with that id follows the changes after the snapshot.
    expect((await api.call("PATCH", `/v1/deployments/${ids[0]}`, { body: { labels: { touched: "yes" } } })).status).toBe(200);
    const resumed = dataFrames(
      await readSse(await open(`/v1/deployments?watch=true&projectId=${project}`, { "Last-Event-ID": frames[0]!.id! }), (f) => dataFrames(f).length >= 1),
    );
    expect(resumed.map((f) => [f.event, JSON.parse(f.data!).object.id])).toEqual([["MODIFIED", ids[0]]]);
    expect(Number(resumed[0]!.id)).toBeGreaterThan(Number(frames[0]!.id));

    // The service reads pages of `limit` rows; a deployment created after the snapshot is left to the changes.
    const principal: Principal = { kind: "user", role: "admin", projectId: null, keyId: "key_test" };
    const ctx = { db: api.database.db, clock: api.clock, config: DEFAULT_APP_CONFIG, principal };
    let position = await startWatchSnapshot({ ctx });
    const late = await api.call("POST", "/v1/deployments", { body: deploymentBody("late", { projectId: project }) });
    const seen: string[] = [];
    let pages = 0;
    for (;;) {
      const page = await snapshotPage({ ctx, input: { position, limit: 40, projectId: project } });
      pages++;
      expect(page.notices.length).toBeLessThanOrEqual(40);
      seen.push(...page.notices.map((n) => n.object.id));
      if (!page.next) break;
      position = page.next;
      expect(pages).toBeLessThan(10);
    }
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual([...ids].sort());
    expect(seen).not.toContain(late.body.id);
  }, 60_000);
});

// The event stream and deployment watch: ordered, resumable, scoped, kept alive.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, deploymentBody, ADMIN_TOKEN, type TestApi } from "../support/api-harness.ts";
import { readSse, type SseFrame } from "../support/sse.ts";

const dataFrames = (frames: SseFrame[]) => frames.filter((f) => f.data !== undefined && f.event !== undefined);

describe.each(["pglite", "postgres"] as const)("streams on %s", (driver) => {
  let api: TestApi;
  const open = (path: string, headers: Record<string, string> = {}, token = ADMIN_TOKEN) =>
    api.app.request(path, { headers: { Authorization: `Bearer ${token}`, ...headers } });

  beforeAll(async () => {
    api = await createTestApi(driver, { streamPollMs: 20, streamHeartbeatMs: 150 });
  });
  afterAll(async () => {
    await api?.close();
  });

  it("streams events in seq order, then new ones, and resumes after Last-Event-ID", async () => {
    const project = await api.createProject(`stream-${driver}`);
    const key = await api.createKey("viewer", project);
    const create = (name: string) => api.call("POST", "/v1/deployments", { body: deploymentBody(name, { projectId: project }) });
    await create("s-one");
    await create("s-two");

    const response = await open("/v1/events/stream", {}, key);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    let frames: SseFrame[] = [];
    const reading = readSse(response, (f) => dataFrames(f).length >= 3);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await create("s-three");
    frames = dataFrames(await reading);
    const events = frames.map((f) => JSON.parse(f.data!));
    expect(events.map((e) => e.data.deployment.name)).toEqual(["s-one", "s-two", "s-three"]);
    expect(frames.map((f) => f.event)).toEqual(["deployment.created", "deployment.created", "deployment.created"]);
    expect(frames.map((f) => Number(f.id))).toEqual(events.map((e) => e.seq));
    expect(events.every((e) => e.projectId === project)).toBe(true);

    await create("s-four");
    const resumed = dataFrames(
      await readSse(await open("/v1/events/stream", { "Last-Event-ID": frames[2]!.id! }, key), (f) => dataFrames(f).length >= 1),
    );
    expect(JSON.parse(resumed[0]!.data!).data.deployment.name).toBe("s-four");
  });

  it("sends heartbeat comments when idle", async () => {
    const frames = await readSse(await open("/v1/events/stream?after=999999999"), (f) => f.some((x) => x.comment === "heartbeat"));
    expect(frames.some((f) => f.comment === "heartbeat")).toBe(true);
  });

  it("watches deployments: snapshot as ADDED, then MODIFIED and DELETED by resourceVersion", async () => {
    const project = await api.createProject(`watch-${driver}`);
    const existing = await api.call("POST", "/v1/deployments", { body: deploymentBody("w-existing", { projectId: project }) });
    const response = await open(`/v1/deployments?watch=true&projectId=${project}`);
    // Level-triggered: each step waits until the watcher has seen the previous one, so
    // no two changes coalesce into one notice.
    const seen = async (count: number) => {
      for (let i = 0; i < 200 && frameCount < count; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    let frameCount = 0;
    const reading = readSse(response, (f) => (frameCount = dataFrames(f).length) >= 4);
    await seen(1);
    const added = await api.call("POST", "/v1/deployments", { body: deploymentBody("w-added", { projectId: project }) });
    await seen(2);
    await api.call("PATCH", `/v1/deployments/${existing.body.id}`, { body: { labels: { x: "1" } } });
    await seen(3);
    await api.call("DELETE", `/v1/deployments/${added.body.id}`);
    const frames = dataFrames(await reading);
    const notices = frames.map((f) => JSON.parse(f.data!));
    expect(notices.map((n) => [n.type, n.object.name])).toEqual([
      ["ADDED", "w-existing"],
      ["ADDED", "w-added"],
      ["MODIFIED", "w-existing"],
      ["DELETED", "w-added"],
    ]);
    expect(notices[2].object.labels).toEqual({ x: "1" });
    const versions = frames.slice(1).map((f) => Number(f.id));
    expect(versions).toEqual([...versions].sort((a, b) => a - b));

    const resumed = dataFrames(
      await readSse(await open(`/v1/deployments?watch=true&projectId=${project}&resourceVersion=${frames[1]!.id}`), (f) => dataFrames(f).length >= 2),
    );
    expect(resumed.map((f) => f.event)).toEqual(["MODIFIED", "DELETED"]);
  });

  it("keeps a project key's watch to its project", async () => {
    const project = await api.createProject(`watch-scope-${driver}`);
    const key = await api.createKey("viewer", project);
    await api.call("POST", "/v1/deployments", { body: deploymentBody("mine", { projectId: project }) });
    const frames = dataFrames(await readSse(await open("/v1/deployments?watch=true", {}, key), (f) => dataFrames(f).length >= 1));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(frames.map((f) => JSON.parse(f.data!).object.projectId)).toEqual([project]);
  });
});

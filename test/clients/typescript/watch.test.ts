// The watch and event-stream iterators against a live app behind a proxy that drops the
// connection: they resume with Last-Event-ID, with no duplicate and no gap, stop when the
// signal aborts (even after the garbage collector ran), and surface 4xx as BerthApiError.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BerthApiError, createBerthClient, type BerthClient, type DeploymentWatchNotice, type Event } from "../../../clients/typescript/src/index.ts";
import { createTestApi, deploymentBody, type TestApi } from "../../support/api-harness.ts";
import { runNode } from "../../support/berth-process.ts";
import { serveTestApi, type LiveApp } from "../../support/live-app.ts";
import { DroppingProxy, eventually } from "./support/dropping-proxy.ts";

describe("watch iterators", () => {
  let api: TestApi;
  let live: LiveApp;
  let proxy: DroppingProxy;

  beforeAll(async () => {
    api = await createTestApi("pglite", { streamPollMs: 20, streamHeartbeatMs: 200 });
    live = await serveTestApi(api);
    proxy = new DroppingProxy(Number(new URL(live.url).port));
    await proxy.start();
  });
  afterAll(async () => {
    await proxy?.close();
    await live?.close();
    await api?.close();
  });

  const clientFor = (token: string): BerthClient => createBerthClient({ baseUrl: proxy.url, token });

  /** Runs an iterator in the background, collecting what it yields. */
  function collect<T>(iterator: AsyncGenerator<T>) {
    const items: T[] = [];
    const done = (async () => {
      for await (const item of iterator) items.push(item);
    })();
    return { items, done };
  }

  it("watchDeployments resumes after a dropped connection with no duplicate and no gap", async () => {
    const projectId = await api.createProject("watched");
    const key = await api.createKey("editor", projectId);
    const create = async (name: string) => (await api.call("POST", "/v1/deployments", { token: key, body: deploymentBody(name) })).body;
    const first = await create("w-one");
    const stop = new AbortController();
    const requestsBefore = proxy.requests.length;
    const watch = collect<DeploymentWatchNotice>(clientFor(key).watchDeployments({ signal: stop.signal }));
    await eventually(() => watch.items.length === 1, 5000, "snapshot");
    await create("w-two");
    await eventually(() => watch.items.length === 2, 5000, "second notice");
    const resumeAt = watch.items[1]!.resourceVersion;

    // Cut the stream and hold the reconnection back while two more changes happen.
    proxy.pause();
    proxy.dropAll();
    await create("w-three");
    await api.call("PATCH", `/v1/deployments/${first.id}`, { token: key, body: { labels: { resumed: "yes" } } });
    proxy.resume();
    await eventually(() => watch.items.length === 4, 5000, "notices after the drop");
    await create("w-four");
    await eventually(() => watch.items.length === 5, 5000, "notice after the resume");
    stop.abort();
    await watch.done;

    expect(watch.items.map((n) => [n.type, n.object.name])).toEqual([
      ["ADDED", "w-one"],
      ["ADDED", "w-two"],
      ["ADDED", "w-three"],
      ["MODIFIED", "w-one"],
      ["ADDED", "w-four"],
    ]);
    const versions = watch.items.slice(1).map((n) => n.resourceVersion);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
    // Exactly one reconnection, and it carried the last id seen.
    const requests = proxy.requests.slice(requestsBefore);
    expect(requests).toHaveLength(2);
    expect(requests[0]).not.toMatch(/last-event-id/i);
    expect(requests[1]).toMatch(new RegExp(`last-event-id: ${resumeAt}\\r\\n`, "i"));
  });

  it("streamEvents resumes after a dropped connection with no duplicate and no gap", async () => {
    const projectId = await api.createProject("streamed");
    const editor = await api.createKey("editor", projectId);
    const viewer = await api.createKey("viewer", projectId);
    const create = (name: string) => api.call("POST", "/v1/deployments", { token: editor, body: deploymentBody(name) });
    await create("e-one");
    const stop = new AbortController();
    const stream = collect<Event>(clientFor(viewer).streamEvents({ signal: stop.signal }));
    await eventually(() => stream.items.length === 1, 5000, "first event");
    proxy.pause();
    proxy.dropAll();
    await create("e-two");
    await create("e-three");
    proxy.resume();
    await eventually(() => stream.items.length === 3, 5000, "events after the drop");
    stop.abort();
    await stream.done;
    expect(stream.items.map((e) => [e.type, (e.data as { deployment: { name: string } }).deployment.name])).toEqual([
      ["deployment.created", "e-one"],
      ["deployment.created", "e-two"],
      ["deployment.created", "e-three"],
    ]);
    const seqs = stream.items.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(3);
  });

  it("starts after the given point: resourceVersion for watches, after for events", async () => {
    const projectId = await api.createProject("from-point");
    const key = await api.createKey("editor", projectId);
    const old = (await api.call("POST", "/v1/deployments", { token: key, body: deploymentBody("p-old") })).body;
    const fresh = (await api.call("POST", "/v1/deployments", { token: key, body: deploymentBody("p-new") })).body;
    const client = clientFor(key);
    for await (const notice of client.watchDeployments({ resourceVersion: old.resourceVersion, signal: AbortSignal.timeout(5000) })) {
      expect([notice.type, notice.object.name]).toEqual(["ADDED", "p-new"]);
      break;
    }
    const events = await api.call("GET", `/v1/events?deploymentId=${fresh.id}`, { token: key });
    const seq = events.body.items[0].seq as number;
    for await (const event of client.streamEvents({ after: seq - 1, signal: AbortSignal.timeout(5000) })) {
      expect(event.seq).toBe(seq);
      break;
    }
  });

  it("throws a BerthApiError on 401 instead of reconnecting", async () => {
    const error = await (async () => {
      for await (const _ of clientFor("bp_not-a-key").watchDeployments({ signal: AbortSignal.timeout(5000) })) {
        // nothing arrives
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BerthApiError);
    expect((error as BerthApiError).status).toBe(401);
  });

  it("ends on abort and leaves no connection open, even after garbage collection", async () => {
    const viewer = await api.createKey("viewer");
    const child = join(import.meta.dirname, "support/abort-under-gc.ts");
    const result = await runNode(child, [], { BERTH_URL: proxy.url, BERTH_TOKEN: viewer }, { nodeArgs: ["--expose-gc", "--import", "tsx"], timeoutMs: 10_000 });
    expect(result.stderr).toBe("");
    expect(result.stdout.trim()).toBe("ended (gc exposed)");
    expect(result.code).toBe(0);
  }, 15_000);
});

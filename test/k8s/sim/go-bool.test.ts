// Query booleans read as Go's strconv.ParseBool reads them (the Python client sends `True`):
// the pure parser as a table, then the API server answering watch=True with a stream,
// force=True on an apply, and a 400 Status naming the parameter for anything else.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boolParam, parseGoBool } from "../../../k8s/sim/query.ts";
import { startTestCluster, type TestCluster } from "./support.ts";

describe("parseGoBool", () => {
  it.each([
    ["1", true],
    ["t", true],
    ["T", true],
    ["TRUE", true],
    ["true", true],
    ["True", true],
    ["0", false],
    ["f", false],
    ["F", false],
    ["FALSE", false],
    ["false", false],
    ["False", false],
    ["", undefined],
    ["yes", undefined],
    ["tRUE", undefined],
    ["2", undefined],
    [" true", undefined],
  ])("%j → %j", (text, expected) => {
    expect(parseGoBool(text)).toBe(expected);
  });

  it("boolParam uses the fallback when absent and names the parameter when refused", () => {
    expect(boolParam(new URLSearchParams(""), "watch")).toBe(false);
    expect(boolParam(new URLSearchParams(""), "watch", true)).toBe(true);
    expect(boolParam(new URLSearchParams("force=True"), "force")).toBe(true);
    expect(() => boolParam(new URLSearchParams("force=yes"), "force")).toThrow(/^force: Invalid value: "yes": must be a boolean/);
  });
});

describe("boolean query parameters on the API server", () => {
  let t: TestCluster;
  beforeAll(async () => {
    t = await startTestCluster({ nodes: [] });
    await t.core.createNamespace({ body: { metadata: { name: "bools" } } });
  });
  afterAll(async () => {
    await t?.stop();
  });

  const get = (path: string, init?: RequestInit) => fetch(`${t.cluster.url}${path}`, init);

  it.each(["True", "1", "t", "TRUE"])("watch=%s answers a watch stream, not a list", async (value) => {
    const controller = new AbortController();
    const response = await get(`/api/v1/namespaces/bools/configmaps?watch=${value}&timeoutSeconds=5`, { signal: controller.signal });
    expect(response.status).toBe(200);
    await t.core.createNamespacedConfigMap({ namespace: "bools", body: { metadata: { name: `cm-${value.toLowerCase()}-${Math.random().toString(36).slice(2, 7)}` } } });
    const reader = response.body!.getReader();
    let text = "";
    for (let i = 0; i < 20 && !text.includes("\n"); i++) {
      const { value: chunk, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(chunk);
    }
    controller.abort();
    const event = JSON.parse(text.split("\n")[0]!) as { type: string; object: { kind?: string; metadata: { name: string } } };
    expect(event.type).toBe("ADDED");
    expect(event.object.metadata.name).toMatch(/^cm-/);
  });

  it.each(["False", "0", "f"])("watch=%s answers a list", async (value) => {
    const body = (await (await get(`/api/v1/namespaces/bools/configmaps?watch=${value}`)).json()) as { kind: string };
    expect(body.kind).toBe("ConfigMapList");
  });

  it.each([
    ["watch", "/api/v1/namespaces/bools/configmaps?watch=yes"],
    ["allowWatchBookmarks", "/api/v1/namespaces/bools/configmaps?watch=1&allowWatchBookmarks=on"],
    ["pretty", "/api/v1/namespaces/bools/configmaps?pretty=2"],
    ["sendInitialEvents", "/api/v1/namespaces/bools/configmaps?sendInitialEvents=maybe"],
    ["follow", "/api/v1/namespaces/bools/pods/nope/log?follow=y"],
  ])("%s with a value ParseBool refuses is a 400 Status naming it", async (name, path) => {
    const response = await get(path);
    expect(response.status).toBe(400);
    const status = (await response.json()) as Record<string, unknown>;
    expect(status).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "BadRequest", code: 400 });
    expect(status.message).toMatch(new RegExp(`^${name}: Invalid value: ".*": must be a boolean as Go's strconv.ParseBool reads it`));
  });

  it("force=True on a server-side apply takes over a field another manager owns", async () => {
    const apply = (manager: string, value: string, force?: string) =>
      get(`/api/v1/namespaces/bools/configmaps/owned?fieldManager=${manager}${force ? `&force=${force}` : ""}`, {
        method: "PATCH",
        headers: { "Content-Type": "application/apply-patch+yaml" },
        body: JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "owned" }, data: { key: value } }),
      });
    expect((await apply("first", "a")).status).toBe(201);
    const conflict = await apply("second", "b", "False");
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { reason: string }).reason).toBe("Conflict");
    const forced = await apply("second", "b", "True");
    expect(forced.status).toBe(200);
    expect(((await forced.json()) as { data: Record<string, string> }).data.key).toBe("b");
    expect((await apply("second", "c", "sure")).status).toBe(400);
  });
});

// The four patch types and server-side apply's field ownership, as pure functions.
import { describe, expect, it } from "vitest";
import {
  ApplyConflictError,
  describePath,
  fieldSet,
  fromFieldsV1,
  jsonPatch,
  mergePatch,
  PatchError,
  recordUpdate,
  serverSideApply,
  strategicMergePatch,
  toFieldsV1,
  type Json,
  type JsonObject,
  type ManagedFieldsEntry,
} from "../../../k8s/sim/patch.ts";

describe("merge patch (RFC 7396)", () => {
  it.each<[string, Json, Json, Json]>([
    ["adds and replaces", { a: 1, b: { c: 2 } }, { b: { d: 3 }, e: 4 }, { a: 1, b: { c: 2, d: 3 }, e: 4 }],
    ["null deletes", { a: 1, b: 2 }, { a: null }, { b: 2 }],
    ["arrays replace", { a: [1, 2, 3] }, { a: [4] }, { a: [4] }],
    ["a scalar replaces an object", { a: { b: 1 } }, { a: 2 }, { a: 2 }],
    ["a non-object patch replaces the document", { a: 1 }, [1], [1]],
    ["patching into nothing builds objects", { a: 1 }, { b: { c: { d: null, e: 1 } } }, { a: 1, b: { c: { e: 1 } } }],
  ])("%s", (_name, target, patch, expected) => {
    expect(mergePatch(target, patch)).toEqual(expected);
  });
});

describe("JSON patch (RFC 6902)", () => {
  const doc: Json = { metadata: { labels: { "a/b": "1" } }, list: [1, 2, 3] };
  it.each<[string, unknown, Json]>([
    ["add to an object", [{ op: "add", path: "/metadata/labels/c", value: "2" }], { metadata: { labels: { "a/b": "1", c: "2" } }, list: [1, 2, 3] }],
    ["escaped keys", [{ op: "replace", path: "/metadata/labels/a~1b", value: "9" }], { metadata: { labels: { "a/b": "9" } }, list: [1, 2, 3] }],
    ["append with -", [{ op: "add", path: "/list/-", value: 4 }], { metadata: { labels: { "a/b": "1" } }, list: [1, 2, 3, 4] }],
    ["insert and remove", [{ op: "add", path: "/list/0", value: 0 }, { op: "remove", path: "/list/3" }], { metadata: { labels: { "a/b": "1" } }, list: [0, 1, 2] }],
    ["move and copy", [{ op: "copy", from: "/list/0", path: "/first" }, { op: "move", from: "/list", path: "/moved" }], { metadata: { labels: { "a/b": "1" } }, first: 1, moved: [1, 2, 3] }],
    ["test passes", [{ op: "test", path: "/list/1", value: 2 }], doc],
  ])("%s", (_name, operations, expected) => {
    expect(jsonPatch(doc, operations)).toEqual(expected);
  });

  it.each([
    ["a failed test", [{ op: "test", path: "/list/1", value: 5 }]],
    ["a missing path", [{ op: "replace", path: "/nope/x", value: 1 }]],
    ["an index out of range", [{ op: "remove", path: "/list/7" }]],
    ["an unknown op", [{ op: "frobnicate", path: "/list" }]],
    ["not an array", { op: "add" }],
  ])("refuses %s", (_name, operations) => {
    expect(() => jsonPatch(doc, operations)).toThrow(PatchError);
  });
});

describe("strategic merge patch", () => {
  const pod: Json = {
    spec: {
      containers: [
        { name: "engine", image: "vllm/vllm-openai:v0.10.0", env: [{ name: "A", value: "1" }] },
        { name: "sidecar", image: "busybox" },
      ],
      tolerations: [{ key: "x", operator: "Exists" }],
    },
  };

  it("merges containers and env by name, keeps the rest", () => {
    const patched = strategicMergePatch(pod, { spec: { containers: [{ name: "engine", image: "vllm/vllm-openai:v0.11.0", env: [{ name: "B", value: "2" }] }] } });
    expect(patched).toEqual({
      spec: {
        containers: [
          { name: "engine", image: "vllm/vllm-openai:v0.11.0", env: [{ name: "A", value: "1" }, { name: "B", value: "2" }] },
          { name: "sidecar", image: "busybox" },
        ],
        tolerations: [{ key: "x", operator: "Exists" }],
      },
    });
  });

  it("honours $patch: delete in a keyed list and replaces lists without a merge key", () => {
    const patched = strategicMergePatch(pod, { spec: { containers: [{ name: "sidecar", $patch: "delete" }], tolerations: [] } }) as { spec: { containers: unknown[]; tolerations: unknown[] } };
    expect(patched.spec.containers.map((c) => (c as { name: string }).name)).toEqual(["engine"]);
    expect(patched.spec.tolerations).toEqual([]);
  });

  it("drops $setElementOrder directives and applies $deleteFromPrimitiveList", () => {
    const patched = strategicMergePatch({ metadata: { finalizers: ["a", "b"] } }, { metadata: { "$deleteFromPrimitiveList/finalizers": ["a"], "$setElementOrder/finalizers": ["b"] } });
    expect(patched).toEqual({ metadata: { finalizers: ["b"] } });
  });
});

describe("field sets", () => {
  it("keys list items the way fieldsV1 does and round-trips", () => {
    const object: JsonObject = { metadata: { labels: { app: "x" } }, spec: { containers: [{ name: "engine", image: "i", args: ["a", "b"] }], securityContext: {} } };
    const paths = fieldSet(object);
    const fields = toFieldsV1(paths);
    expect(fields).toEqual({
      "f:metadata": { "f:labels": { "f:app": {} } },
      "f:spec": { "f:containers": { 'k:{"name":"engine"}': { ".": {}, "f:args": {}, "f:image": {}, "f:name": {} } }, "f:securityContext": {} },
    });
    expect(fromFieldsV1(fields)).toEqual(paths);
    expect(describePath('f:spec\nf:containers\nk:{"name":"engine"}\nf:image')).toBe('.spec.containers[name="engine"].image');
  });
});

describe("server-side apply", () => {
  const options = { manager: "berth-agent", apiVersion: "v1", time: "2025-01-01T00:00:00Z", force: false };

  it("creates, then updates and removes what the manager stopped applying", () => {
    const created = serverSideApply(undefined, { data: { a: "1", b: "2" } }, [], options);
    expect(created.object).toEqual({ data: { a: "1", b: "2" } });
    expect(created.managedFields).toEqual([
      { manager: "berth-agent", operation: "Apply", apiVersion: "v1", time: options.time, fieldsType: "FieldsV1", fieldsV1: { "f:data": { "f:a": {}, "f:b": {} } } },
    ]);
    const updated = serverSideApply(created.object, { data: { a: "3" } }, created.managedFields, options);
    expect(updated.object).toEqual({ data: { a: "3" } });
  });

  it("keeps fields other managers own and fields nobody owns", () => {
    const live: JsonObject = { spec: { replicas: 2, paused: false }, metadata: { labels: { a: "1", mine: "x" } } };
    const entries: ManagedFieldsEntry[] = [
      { manager: "berth-agent", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:labels": { "f:mine": {}, "f:a": {} } } } },
      { manager: "kubectl-label", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:labels": { "f:a": {} } } } },
    ];
    const result = serverSideApply(live, { metadata: { labels: {} } }, entries, options);
    expect(result.object).toEqual({ spec: { replicas: 2, paused: false }, metadata: { labels: { a: "1" } } });
  });

  it("is a conflict to change another manager's field, unless forced (ownership then moves)", () => {
    const live: JsonObject = { spec: { replicas: 2 } };
    const entries: ManagedFieldsEntry[] = [{ manager: "autoscaler", operation: "Update", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:replicas": {} } } }];
    expect(() => serverSideApply(live, { spec: { replicas: 3 } }, entries, options)).toThrow(ApplyConflictError);
    expect(() => serverSideApply(live, { spec: { replicas: 3 } }, entries, options)).toThrow('Apply failed with 1 conflict: conflict with "autoscaler": .spec.replicas');
    // The same value is shared ownership, not a conflict.
    expect(serverSideApply(live, { spec: { replicas: 2 } }, entries, options).managedFields.map((e) => e.manager)).toEqual(["autoscaler", "berth-agent"]);
    const forced = serverSideApply(live, { spec: { replicas: 3 } }, entries, { ...options, force: true });
    expect(forced.object).toEqual({ spec: { replicas: 3 } });
    expect(forced.managedFields.map((e) => e.manager)).toEqual(["berth-agent"]);
  });

  it("merges keyed lists item by item and drops items the manager no longer applies", () => {
    const first = serverSideApply(undefined, { spec: { containers: [{ name: "a", image: "1" }, { name: "b", image: "2" }] } }, [], options);
    const second = serverSideApply(first.object, { spec: { containers: [{ name: "a", image: "3" }] } }, first.managedFields, options);
    expect(second.object).toEqual({ spec: { containers: [{ name: "a", image: "3" }] } });
  });
});

describe("ownership of ordinary writes", () => {
  it("gives the writer what it changed and takes removed fields from everyone", () => {
    const before: JsonObject = { data: { a: "1", b: "2" } };
    const entries = recordUpdate(undefined, before, [], { manager: "creator", apiVersion: "v1", time: "t" });
    const after = recordUpdate(before, { data: { a: "9" } }, entries, { manager: "editor", apiVersion: "v1", time: "t" });
    expect(after).toEqual([{ manager: "editor", operation: "Update", apiVersion: "v1", time: "t", fieldsType: "FieldsV1", fieldsV1: { "f:data": { "f:a": {} } } }]);
  });
});

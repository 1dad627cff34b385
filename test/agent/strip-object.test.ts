// stripForCache (pure): what the informers keep of an object — everything but metadata.managedFields.
import { describe, expect, it } from "vitest";
import { stripForCache } from "../../src/agent/strip-object.ts";

describe("stripForCache", () => {
  it("drops managedFields and keeps the rest of the object", () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "n", labels: { a: "b" }, managedFields: [{ manager: "berth-agent", operation: "Apply" }] },
      spec: { nodeName: "gpu-a" },
    };
    expect(stripForCache(pod)).toEqual({ apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "n", labels: { a: "b" } }, spec: { nodeName: "gpu-a" } });
  });

  it.each([["no metadata", { kind: "Status" }], ["no managedFields", { metadata: { name: "p" } }]])("leaves an object with %s as it is", (_name, object) => {
    const before = structuredClone(object);
    expect(stripForCache(object)).toEqual(before);
  });
});

// The JSON pointers berth apply reports as changed.
import { describe, expect, it } from "vitest";
import { diffJson } from "../../src/cli/user/json-diff.ts";

describe("diffJson", () => {
  it.each([
    ["equal values", { a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }, []],
    ["a changed leaf", { spec: { roles: [{ replicas: 1 }] } }, { spec: { roles: [{ replicas: 2 }] } }, ["/spec/roles/0/replicas"]],
    ["added and removed keys", { a: 1, b: 2 }, { b: 2, c: 3 }, ["/a", "/c"]],
    ["a longer array", { xs: [1] }, { xs: [1, 2, 3] }, ["/xs/1", "/xs/2"]],
    ["a type change", { a: { b: 1 } }, { a: [1] }, ["/a"]],
    ["escaped keys", { "berth.dev/x": "1", "a~b": 1 }, { "berth.dev/x": "2", "a~b": 2 }, ["/berth.dev~1x", "/a~0b"]],
    ["null versus absent", { a: null }, {}, ["/a"]],
  ])("%s", (_name, before, after, pointers) => {
    expect(diffJson(before, after).map((change) => change.pointer)).toEqual(pointers);
  });

  it("keeps both sides of each change", () => {
    expect(diffJson({ labels: { team: "a" } }, { labels: {} }, "")).toEqual([{ pointer: "/labels/team", before: "a", after: undefined }]);
  });
});

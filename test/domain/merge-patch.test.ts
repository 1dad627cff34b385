import { describe, expect, it } from "vitest";
import { InvalidRequest } from "../../src/domain/errors.ts";
import { applyMergePatch, findPrototypeKey } from "../../src/domain/merge-patch.ts";

describe("applyMergePatch (RFC 7396)", () => {
  it.each([
    [{ a: 1, b: { c: 2 } }, { b: { c: null, d: 3 } }, { a: 1, b: { d: 3 } }],
    [{ a: [1, 2] }, { a: [3] }, { a: [3] }],
    [{ a: 1 }, "text", "text"],
    [[1], { a: 1 }, { a: 1 }],
    [{ toString: 1 }, { toString: null }, {}],
  ])("%j + %j → %j", (target, patch, expected) => {
    expect(applyMergePatch(target, patch)).toEqual(expected);
  });

  // JSON.parse makes `__proto__` an own property, which Object.entries then yields.
  it.each([
    ['{"__proto__":{"polluted":true}}', "/spec/__proto__", "__proto__"],
    ['{"roles":[{"name":"main"}],"x":{"__proto__":{"polluted":true}}}', "/spec/x/__proto__", "__proto__"],
    ['{"a":{"b":{"constructor":{"prototype":{"polluted":true}}}}}', "/spec/a/b/constructor", "constructor"],
    ['{"list":[{"ok":1},{"prototype":1}]}', "/spec/list/1/prototype", "prototype"],
    ['{"a/b~c":{"constructor":null}}', "/spec/a~1b~0c/constructor", "constructor"],
  ])("%s is refused at %s", (body, pointer, key) => {
    const patch = JSON.parse(body);
    let caught: unknown;
    try {
      applyMergePatch({ roles: [] }, patch, "/spec");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidRequest);
    expect((caught as InvalidRequest).errors).toEqual([{ pointer, message: expect.stringContaining(`"${key}" is not allowed`) }]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    [{ a: 1 }, undefined],
    [JSON.parse('{"a":[{"b":{"__proto__":1}}]}'), { key: "__proto__", pointer: "/a/0/b/__proto__" }],
    [{ constructorName: 1, protos: 2 }, undefined],
  ])("findPrototypeKey(%j) → %j", (value, expected) => {
    expect(findPrototypeKey(value)).toEqual(expected);
  });
});

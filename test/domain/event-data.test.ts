import { describe, expect, it } from "vitest";
import { checkEventData, EVENT_DATA_LIMITS } from "../../src/domain/event-data.ts";

const nested = (levels: number): unknown => (levels === 0 ? 1 : { a: nested(levels - 1) });

describe("checkEventData", () => {
  it.each([
    [{}, true],
    [{ role: "main", from: 1, to: 2, signals: [{ name: "queue_depth", value: 3 }] }, true],
    [nested(EVENT_DATA_LIMITS.depth), true],
    [{ text: "x".repeat(EVENT_DATA_LIMITS.bytes - 20) }, true],
  ])("%j is accepted", (data, ok) => {
    expect(checkEventData(data).ok).toBe(ok);
  });

  it.each([
    [[], "/data", /must be a JSON object/],
    ["text", "/data", /must be a JSON object/],
    [null, "/data", /must be a JSON object/],
    [nested(EVENT_DATA_LIMITS.depth + 1), "/data/a/a/a/a/a/a/a/a", /more than 8 levels/],
    [{ list: [[[[[[[[1]]]]]]]] }, "/data/list/0/0/0/0/0/0/0", /more than 8 levels/],
    [Object.fromEntries(Array.from({ length: 513 }, (_, i) => [`k${i}`, i])), "/data", /more than 512 keys/],
    [JSON.parse('{"a":{"__proto__":{"x":1}}}'), "/data/a/__proto__", /not allowed as a key/],
    [JSON.parse('{"constructor":1}'), "/data/constructor", /not allowed as a key/],
    [{ "a/b": { prototype: 1 } }, "/data/a~1b/prototype", /not allowed as a key/],
  ])("%j is refused at %s", (data, pointer, message) => {
    const verdict = checkEventData(data);
    expect(verdict).toMatchObject({ ok: false, tooLarge: false });
    if (verdict.ok || verdict.tooLarge) return;
    expect(verdict.errors).toEqual([{ pointer, message: expect.stringMatching(message) }]);
  });

  it("refuses more than 16 KiB of JSON, counting UTF-8 bytes", () => {
    const verdict = checkEventData({ text: "é".repeat(EVENT_DATA_LIMITS.bytes / 2) });
    expect(verdict).toMatchObject({ ok: false, tooLarge: true, bytes: EVENT_DATA_LIMITS.bytes + 11 });
    if (verdict.ok || !verdict.tooLarge) return;
    expect(verdict.error).toEqual({ pointer: "/data", message: expect.stringContaining("the limit is 16384 bytes") });
  });
});

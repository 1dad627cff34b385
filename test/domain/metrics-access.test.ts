import { describe, expect, it } from "vitest";
import { constantTimeEqual, metricsAccess } from "../../src/domain/metrics-access.ts";

const TOKEN = "metrics-token-0123456789";

describe("metricsAccess", () => {
  it.each([
    [undefined, undefined, "allowed"], // no token configured: open, as before
    ["Bearer anything", undefined, "allowed"],
    [undefined, TOKEN, "missing"],
    ["", TOKEN, "missing"],
    [`Basic ${TOKEN}`, TOKEN, "missing"],
    ["Bearer", TOKEN, "missing"],
    [`Bearer ${TOKEN}`, TOKEN, "allowed"],
    [`bearer  ${TOKEN} `, TOKEN, "allowed"],
    [`Bearer ${TOKEN}x`, TOKEN, "wrong"],
    [`Bearer ${TOKEN.slice(0, -1)}`, TOKEN, "wrong"],
    [`Bearer ${TOKEN.toUpperCase()}`, TOKEN, "wrong"],
    [`Bearer ${TOKEN} extra`, TOKEN, "missing"],
  ] as const)("%j with token %j → %s", async (authorization, token, expected) => {
    expect(await metricsAccess(authorization, token)).toBe(expected);
  });
});

describe("constantTimeEqual", () => {
  it.each([
    ["", "", true],
    ["a", "a", true],
    ["a", "b", false],
    ["abc", "ab", false],
    ["ü", "ü", true],
    ["ü", "u", false],
  ])("%j = %j → %s", async (a, b, expected) => {
    expect(await constantTimeEqual(a, b)).toBe(expected);
  });
});

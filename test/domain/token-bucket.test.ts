import { describe, expect, it } from "vitest";
import { rateLimitHeaders, refill, retryAfterSeconds, secondsUntilFull, take, type BucketPolicy } from "../../src/domain/token-bucket.ts";

const policy: BucketPolicy = { name: "key", quota: 600, windowSeconds: 60 }; // 10 tokens per second
const small: BucketPolicy = { name: "address", quota: 3, windowSeconds: 60 }; // one token per 20 s

describe("token bucket", () => {
  it.each([
    ["a new bucket is full", undefined, 0, 600],
    ["one second refills ten tokens", { tokens: 0, updatedAtMs: 0 }, 1000, 10],
    ["refill is continuous", { tokens: 0, updatedAtMs: 0 }, 150, 1.5],
    ["refill stops at the quota", { tokens: 595, updatedAtMs: 0 }, 60_000, 600],
    ["a clock stepping back refills nothing", { tokens: 4, updatedAtMs: 10_000 }, 5_000, 4],
  ])("refill: %s", (_, state, nowMs, tokens) => {
    expect(refill(state, nowMs, policy).tokens).toBeCloseTo(tokens, 9);
  });

  it("keeps the later time when the clock steps back, so the step is not refilled twice", () => {
    expect(refill({ tokens: 4, updatedAtMs: 10_000 }, 5_000, policy).updatedAtMs).toBe(10_000);
  });

  it("allows a burst of exactly the quota, then refuses without taking", () => {
    let state = undefined as ReturnType<typeof take>["state"] | undefined;
    const answers: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      const result = take(state, 0, small);
      answers.push(result.allowed);
      state = result.state;
    }
    expect(answers).toEqual([true, true, true, false]);
    expect(state!.tokens).toBe(0);
  });

  it.each([
    // tokens left, Retry-After (s), t of RateLimit (s)
    [0, 20, 60],
    [0.5, 10, 50],
    [0.99, 1, 41],
    [1, 0, 40],
    [2.5, 0, 10],
    [3, 0, 0],
  ])("with %d of 3 tokens left: Retry-After %d s, full in %d s", (tokens, retry, full) => {
    expect(retryAfterSeconds(tokens, small)).toBe(retry);
    expect(secondsUntilFull(tokens, small)).toBe(full);
  });

  it("never says Retry-After 0 while refusing, however close the next token", () => {
    expect(retryAfterSeconds(0.99999, policy)).toBe(1);
  });

  it.each([
    [599, '"key";q=600;w=60', '"key";r=599;t=1'],
    [599.5, '"key";q=600;w=60', '"key";r=599;t=1'],
    [0.4, '"key";q=600;w=60', '"key";r=0;t=60'],
    [600, '"key";q=600;w=60', '"key";r=600;t=0'],
  ])("headers with %d tokens left", (tokens, policyHeader, limitHeader) => {
    expect(rateLimitHeaders(tokens, policy)).toEqual({ policy: policyHeader, limit: limitHeader });
  });

  it("quotes the policy name as a structured-field string", () => {
    expect(rateLimitHeaders(1, { name: 'a"b\\c', quota: 2, windowSeconds: 1 }).policy).toBe('"a\\"b\\\\c";q=2;w=1');
  });
});

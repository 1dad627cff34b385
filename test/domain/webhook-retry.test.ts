// The retry planner: schedule with jitter, Retry-After, 410, the 3-day rule, parsing.
import { describe, expect, it } from "vitest";
import {
  DEFAULT_RETRY_SCHEDULE_SECONDS,
  parseRetryAfter,
  parseRetrySchedule,
  planAfterAttempt,
  retryDelaySeconds,
  type PlanInput,
} from "../../src/domain/webhook-retry.ts";

const NOW = new Date("2026-11-30T12:00:00Z");
const DAY = 24 * 3600 * 1000;
const base: PlanInput = {
  outcome: { statusCode: 500 },
  runAttempts: 1,
  schedule: DEFAULT_RETRY_SCHEDULE_SECONDS,
  now: NOW,
  failingSince: null,
  disableAfterMs: 3 * DAY,
  random: () => 0.5,
};

describe("retry schedule", () => {
  it("is about 28 hours in all", () => {
    const total = DEFAULT_RETRY_SCHEDULE_SECONDS.reduce((sum, s) => sum + s, 0);
    expect(total / 3600).toBeCloseTo(27.6, 1);
  });

  it.each(DEFAULT_RETRY_SCHEDULE_SECONDS.map((step, i) => [i + 1, step]))("after attempt %i waits %i s, jittered by a tenth", (attempt, step) => {
    const at = (random: number) => retryDelaySeconds({ ...base, runAttempts: attempt, random: () => random });
    expect(at(0)).toBeCloseTo(step * 0.9);
    expect(at(0.5)).toBeCloseTo(step);
    expect(at(0.999999)! / step).toBeCloseTo(1.1, 4);
  });

  it("fails the delivery after the last step", () => {
    const plan = planAfterAttempt({ ...base, runAttempts: DEFAULT_RETRY_SCHEDULE_SECONDS.length + 1 });
    expect(plan.delivery).toEqual({ status: "failed" });
  });

  it("waits for Retry-After when it is longer, up to the longest step", () => {
    expect(retryDelaySeconds({ ...base, outcome: { statusCode: 429, retryAfterSeconds: 60 } })).toBe(60);
    expect(retryDelaySeconds({ ...base, outcome: { statusCode: 429, retryAfterSeconds: 1 } })).toBe(5);
    expect(retryDelaySeconds({ ...base, outcome: { statusCode: 503, retryAfterSeconds: 10 * 86400 } })).toBe(36000);
  });

  it("succeeds on any 2xx and clears the failure record", () => {
    for (const statusCode of [200, 201, 202, 204, 299]) {
      expect(planAfterAttempt({ ...base, outcome: { statusCode }, failingSince: new Date(NOW.getTime() - DAY) })).toEqual({
        delivery: { status: "succeeded" },
        failingSince: null,
      });
    }
  });

  it("retries everything else, including no answer and redirects", () => {
    for (const statusCode of [undefined, 301, 302, 400, 401, 404, 429, 500, 502]) {
      const plan = planAfterAttempt({ ...base, outcome: { statusCode } });
      expect(plan).toEqual({ delivery: { status: "pending", nextAttemptAt: new Date(NOW.getTime() + 5000) }, failingSince: NOW });
    }
  });

  it("disables at once on 410", () => {
    expect(planAfterAttempt({ ...base, outcome: { statusCode: 410 } })).toEqual({
      delivery: { status: "failed" },
      failingSince: NOW,
      disable: "gone",
    });
  });

  it("disables an endpoint failing for 3 days, not before", () => {
    const since = (ms: number) => new Date(NOW.getTime() - ms);
    expect(planAfterAttempt({ ...base, failingSince: since(3 * DAY - 1) }).disable).toBeUndefined();
    expect(planAfterAttempt({ ...base, failingSince: since(3 * DAY) })).toEqual({
      delivery: { status: "failed" },
      failingSince: since(3 * DAY),
      disable: "failing",
    });
  });
});

describe("parsing", () => {
  it("reads Retry-After as seconds or an HTTP date", () => {
    expect(parseRetryAfter("120", NOW)).toBe(120);
    expect(parseRetryAfter(" 0 ", NOW)).toBe(0);
    expect(parseRetryAfter(new Date(NOW.getTime() + 90_000).toUTCString(), NOW)).toBe(90);
    expect(parseRetryAfter(new Date(NOW.getTime() - 90_000).toUTCString(), NOW)).toBe(0);
    expect(parseRetryAfter("soon", NOW)).toBeUndefined();
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
  });

  it("reads BERTH_WEBHOOK_RETRY_SCHEDULE", () => {
    expect(parseRetrySchedule("5,300,1800,7200,18000,36000,36000")).toEqual([...DEFAULT_RETRY_SCHEDULE_SECONDS]);
    expect(parseRetrySchedule(" 1, 2 ,0.5")).toEqual([1, 2, 0.5]);
    for (const bad of ["", "1,,2", "-1", "0", "abc", "1e9"]) expect(() => parseRetrySchedule(bad), bad).toThrow();
  });
});

// Two reads of one pod → rates and interval means; restarts (every way they show) make the
// interval values missing as `reset`, a first read as `first-read`, and an idle interval has no mean.
import { describe, expect, it } from "vitest";
import { computeInterval, detectReset, meanMs } from "../../../src/agent/signals/interval.ts";
import { aPod, aSample } from "./support.ts";

const INTERVAL_KEYS = ["requestRate", "promptTokenRate", "generationTokenRate", "promptTokensPerRequest", "generationTokensPerRequest", "ttftMean", "itlMean", "queueTimeMean"];

describe("computeInterval", () => {
  it("turns counter differences over 10 s into rates and histogram differences into means", () => {
    const previous = aSample(1_000);
    const latest = aSample(11_000, {
      running: 7,
      waiting: 3,
      kvUsage: 0.8,
      requestsSucceeded: 150,
      promptTokens: 15_000,
      generationTokens: 30_000,
      ttft: { sum: 15, count: 150 },
      itl: { sum: 25, count: 4500 },
      queueTime: { sum: 3, count: 150 },
    });
    const interval = computeInterval(previous, latest);
    expect(interval).toEqual({
      pod: aPod(),
      at: 11_000,
      seconds: 10,
      running: 7,
      waiting: 3,
      kvUsage: 0.8,
      requests: 50,
      promptTokens: 5_000,
      generationTokens: 10_000,
      requestRate: 5,
      promptTokenRate: 500,
      generationTokenRate: 1000,
      ttft: { sum: 5, count: 50 },
      itl: { sum: 5, count: 2500 },
      queueTime: { sum: 1, count: 50 },
      missing: [],
    });
    expect(meanMs(interval.ttft)).toBe(100);
    expect(meanMs(interval.itl)).toBe(2);
    expect(meanMs(interval.queueTime)).toBe(20);
  });

  it("has no mean when no request finished in the interval (never a mean of 0)", () => {
    const interval = computeInterval(aSample(0), aSample(5_000));
    expect(interval.ttft).toEqual({ sum: 0, count: 0 });
    expect(meanMs(interval.ttft)).toBeUndefined();
    expect(interval.requestRate).toBe(0);
    expect(interval.missing).toEqual([]);
  });

  it("reports a first read: gauges yes, interval values missing as first-read", () => {
    const interval = computeInterval(undefined, aSample(5_000));
    expect(interval).toMatchObject({ running: 2, waiting: 1, kvUsage: 0.5 });
    expect(interval.seconds).toBeUndefined();
    expect(interval.requestRate).toBeUndefined();
    expect(interval.missing).toEqual(INTERVAL_KEYS.map((key) => ({ key, reason: "first-read" })));
  });

  it("treats a read of another pod uid as a first read", () => {
    const interval = computeInterval(aSample(0, {}, { pod: aPod({ uid: "other" }) }), aSample(5_000));
    expect(interval.missing.every((entry) => entry.reason === "first-read")).toBe(true);
  });

  it.each([
    ["a counter went down", aSample(0), aSample(5_000, { requestsSucceeded: 3 }), "counter-decreased"],
    ["a histogram count went down", aSample(0), aSample(5_000, { ttft: { sum: 11, count: 4 } }), "counter-decreased"],
    ["a histogram sum went down", aSample(0), aSample(5_000, { itl: { sum: 1, count: 2000 } }), "counter-decreased"],
    ["the process start time changed", aSample(0, {}, { processStartTime: 100 }), aSample(5_000, {}, { processStartTime: 200 }), "process-restarted"],
    ["the container restarted", aSample(0, {}, { pod: aPod({ restarts: 0 }) }), aSample(5_000, {}, { pod: aPod({ restarts: 1 }) }), "container-restarted"],
    ["the DP ranks changed (vLLM elastic resize)", aSample(0, {}, { ranks: ["0", "1"] }), aSample(5_000, {}, { ranks: ["0", "1", "2", "3"] }), "ranks-changed"],
  ])("detects a restart when %s", (_, previous, latest, cause) => {
    expect(detectReset(previous, latest)).toBe(cause);
    const interval = computeInterval(previous, latest);
    expect(interval.resetCause).toBe(cause);
    expect(interval.missing).toEqual(INTERVAL_KEYS.map((key) => ({ key, reason: "reset" })));
    expect(interval).not.toHaveProperty("requestRate");
    expect(interval).not.toHaveProperty("ttft");
    // Gauges describe the new process and are still good.
    expect(interval.running).toBe(2);
  });

  it("sees no restart when nothing went down and the identity is the same", () => {
    expect(detectReset(aSample(0, {}, { processStartTime: 1 }), aSample(5_000, {}, { processStartTime: 1 }))).toBeUndefined();
  });

  it("reports what the engine does not expose as not-exposed, before any other reason", () => {
    const interval = computeInterval(undefined, aSample(5_000, { kvUsage: undefined, itl: undefined }));
    expect(interval.missing).toContainEqual({ key: "kvUsage", reason: "not-exposed" });
    expect(interval.missing).toContainEqual({ key: "itlMean", reason: "not-exposed" });
    expect(interval.missing).toContainEqual({ key: "ttftMean", reason: "first-read" });
  });

  it("waits one more read for a metric that appeared since the previous one", () => {
    const interval = computeInterval(aSample(0, { itl: undefined }), aSample(5_000));
    expect(interval.missing).toEqual([{ key: "itlMean", reason: "first-read" }]);
    expect(interval.requests).toBe(0);
    expect(interval.requestRate).toBe(0);
  });

  it("takes no difference from a read that is not older", () => {
    const interval = computeInterval(aSample(5_000), aSample(5_000));
    expect(interval.missing.map((entry) => entry.reason)).toEqual(INTERVAL_KEYS.map(() => "first-read"));
  });
});

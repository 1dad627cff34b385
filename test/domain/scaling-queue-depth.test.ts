import { describe, expect, it } from "vitest";
import { recommendQueueDepth } from "../../src/domain/scaling-queue-depth.ts";
import { roleSignalsFromReport } from "../../src/domain/scaling-signals.ts";

describe("queue_depth: ⌈Σ(running + waiting) ÷ targetPerReplica⌉ with the HPA tolerance band", () => {
  it.each([
    // running, waiting, current, target, tolerance, replicas, reason
    [0, 0, 1, 8, 0.1, 0, "QueueDepth"],
    [30, 10, 2, 8, 0.1, 5, "QueueDepth"],
    [64, 0, 8, 8, 0.1, 8, "WithinTolerance"],
    [88, 0, 10, 8, 0.1, 10, "WithinTolerance"], // ratio 1.1: the upper edge is inside
    [89, 0, 10, 8, 0.1, 12, "QueueDepth"], // ratio 1.1125 → ⌈11.125⌉
    [72, 0, 10, 8, 0.1, 10, "WithinTolerance"], // ratio 0.9: the lower edge is inside
    [71, 0, 10, 8, 0.1, 9, "QueueDepth"], // ratio 0.8875 → ⌈8.875⌉
    [17, 0, 2, 8, 0.1, 2, "WithinTolerance"], // unrounded ratio 1.0625, though ⌈17 ÷ 8⌉ = 3
    [9, 0, 1, 8, 0.1, 2, "QueueDepth"], // ratio 1.125
    [65, 0, 8, 8, 0, 9, "QueueDepth"], // no band
    [64, 0, 8, 8, 0, 8, "WithinTolerance"],
    [3, 2, 0, 8, 0.1, 1, "QueueDepth"], // at zero there is no ratio
    [10, 30, 4, 2.5, 0.5, 16, "QueueDepth"], // ratio 4
    [25, 0, 4, 5, 0.25, 4, "WithinTolerance"], // ratio 1.25: edge
  ])("running %d + waiting %d at %d replicas, target %d, tolerance %d → %d (%s)", (running, waiting, current, targetPerReplica, tolerance, replicas, reason) => {
    const r = recommendQueueDepth({ running, waiting, current, targetPerReplica, tolerance });
    expect(r.replicas).toBe(replicas);
    expect(r.reason).toBe(reason);
  });

  it("never recommends fewer replicas for more load (fixed current replicas)", () => {
    for (const current of [1, 3, 10]) {
      let last = -1;
      for (let load = 0; load <= 300; load++) {
        const r = recommendQueueDepth({ running: load, waiting: 0, current, targetPerReplica: 8, tolerance: 0.1 });
        expect(r.replicas).toBeGreaterThanOrEqual(last);
        last = r.replicas;
      }
    }
  });
});

describe("the agent's metrics report as input", () => {
  const at = "2025-01-01T00:00:15.000Z";
  const report = (missing: { name: string; pod?: string; reason: string }[]) => ({
    signals: [
      { name: "requests_running", value: 12, podCount: 3, observedAt: at },
      { name: "requests_waiting", value: 4, podCount: 3, observedAt: at },
      { name: "ttft_mean", podCount: 3, observedAt: at },
      { name: "kv_cache_usage", value: 0.4, podCount: 3, observedAt: at },
    ],
    missing,
  });

  it.each([
    [[], []],
    [[{ name: "requests_running", reason: "not-exposed" }], ["running"]],
    [[{ name: "requests_waiting", pod: "p-1", reason: "unreachable" }], ["waiting"]],
    [[{ name: "ttft_mean", pod: "p-1", reason: "first-read" }], []],
  ])("missing %j → %j", (missing, expected) => {
    const s = roleSignalsFromReport(report(missing), "2025-01-01T00:00:00.000Z");
    expect(s).toEqual({ running: 12, waiting: 4, podCount: 3, observedAt: at, missing: expected });
  });
});

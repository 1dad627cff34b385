// Per-role aggregation: sums, means weighted by requests, podCount, observedAt, and a missing entry
// (with the pod) for every signal a pod could not give — an unreachable pod adds nothing, not 0.
import { describe, expect, it } from "vitest";
import { aggregateRoles } from "../../../src/agent/signals/aggregate.ts";
import { computeInterval } from "../../../src/agent/signals/interval.ts";
import { ENGINE_SIGNALS } from "../../../src/agent/signals/signals.ts";
import { aPod, aSample } from "./support.ts";

const T0 = Date.parse("2026-11-30T12:00:00.000Z");
const podA = aPod({ uid: "a", name: "chat-server-r0-m0" });
const podB = aPod({ uid: "b", name: "chat-server-r1-m0" });
const podP = aPod({ uid: "p", name: "chat-prefill-r0-m0", role: "prefill" });

/** An interval of `pod` over 10 s ending at T0 + endOffset. */
function intervalOf(pod: typeof podA, before: Parameters<typeof aSample>[1], after: Parameters<typeof aSample>[1], endOffset = 0) {
  return computeInterval(aSample(T0 - 10_000, before, { pod }), aSample(T0 + endOffset, after, { pod }));
}

const value = (signals: { name: string; value?: number }[], name: string) => signals.find((s) => s.name === name);

describe("aggregateRoles", () => {
  it("sums gauges and rates, averages KV usage, weights TTFT/ITL by each pod's requests", () => {
    const a = intervalOf(podA, {}, { running: 3, waiting: 2, kvUsage: 0.2, requestsSucceeded: 110, promptTokens: 11_000, ttft: { sum: 10 + 1, count: 110 }, itl: { sum: 20, count: 2000 }, queueTime: { sum: 2 + 0.1, count: 110 } });
    // Pod b served 30 requests at 300 ms: the role mean is (1 + 9) / (10 + 30) s = 250 ms, not (100 + 300) / 2.
    const b = intervalOf(podB, {}, { running: 1, waiting: 0, kvUsage: 0.6, requestsSucceeded: 130, promptTokens: 13_000, ttft: { sum: 10 + 9, count: 130 }, itl: { sum: 20, count: 2000 }, queueTime: { sum: 2 + 0.3, count: 130 } }, -2_000);
    const [server] = aggregateRoles({ roles: ["server"], intervals: [a, b], now: T0 + 500 });
    expect(server!.name).toBe("server");
    expect(server!.missing).toEqual([]);
    const at = new Date(T0).toISOString();
    expect(server!.signals).toEqual([
      { name: "requests_running", unit: "requests", value: 4, podCount: 2, observedAt: at },
      { name: "requests_waiting", unit: "requests", value: 2, podCount: 2, observedAt: at },
      { name: "kv_cache_usage", unit: "ratio", value: 0.4, podCount: 2, observedAt: at },
      // b's interval is 8 s: 30/8 requests/s, a's 10/10.
      { name: "requests_per_second", unit: "requests/s", value: 1 + 30 / 8, podCount: 2, observedAt: at },
      // a: 1 000 prompt tokens over 10 s; b: 3 000 over 8 s.
      { name: "prompt_tokens_per_second", unit: "tokens/s", value: 100 + 3000 / 8, podCount: 2, observedAt: at },
      { name: "generation_tokens_per_second", unit: "tokens/s", value: 0, podCount: 2, observedAt: at },
      // (1 000 + 3 000) prompt tokens over (10 + 30) requests, not the mean of 100 and 100.
      { name: "prompt_tokens_per_request", unit: "tokens", value: 100, podCount: 2, observedAt: at },
      { name: "generation_tokens_per_request", unit: "tokens", value: 0, podCount: 2, observedAt: at },
      // Means carry the observations they average.
      { name: "ttft_mean", unit: "ms", value: 250, podCount: 2, samples: 40, observedAt: at },
      // Both pods are idle on ITL: no mean, and no missing entry either (nothing is unknown).
      { name: "itl_mean", unit: "ms", podCount: 2, samples: 0, observedAt: at },
      // Weighted like TTFT: (0.1 + 0.3) s over 40 requests.
      { name: "queue_time_mean", unit: "ms", value: expect.closeTo(10, 9), podCount: 2, samples: 40, observedAt: at },
    ]);
  });

  it("takes tokens per request from vLLM's per-request histograms when every pod has them, else from the counters", () => {
    // 10 requests finished with 1 000 generated tokens each while 50 000 more were generated for
    // requests still running: the counter ratio says 6 000 per request, the histogram 1 000.
    const withHistograms = (pod: typeof podA) =>
      intervalOf(
        pod,
        { requestGenerationTokens: { sum: 100_000, count: 100 }, requestPromptTokens: { sum: 50_000, count: 100 } },
        { requestsSucceeded: 110, generationTokens: 20_000 + 60_000, requestGenerationTokens: { sum: 110_000, count: 110 }, requestPromptTokens: { sum: 55_000, count: 110 } },
      );
    const [both] = aggregateRoles({ roles: ["server"], intervals: [withHistograms(podA), withHistograms(podB)], now: T0 });
    expect(value(both!.signals, "generation_tokens_per_request")!.value).toBe(1000);
    expect(value(both!.signals, "prompt_tokens_per_request")!.value).toBe(500);
    const counterOnly = intervalOf(podB, {}, { requestsSucceeded: 110, generationTokens: 20_000 + 60_000 });
    const [mixed] = aggregateRoles({ roles: ["server"], intervals: [withHistograms(podA), counterOnly], now: T0 });
    expect(value(mixed!.signals, "generation_tokens_per_request")!.value).toBe(6000);
  });

  it("lists an unreachable pod under every engine signal and counts it nowhere", () => {
    const a = intervalOf(podA, {}, { running: 3 });
    const [server] = aggregateRoles({
      roles: ["server"],
      intervals: [a],
      failures: [{ pod: podB, reason: "unreachable", detail: "connect ECONNREFUSED" }],
      now: T0,
    });
    expect(value(server!.signals, "requests_running")).toMatchObject({ value: 3, podCount: 1 });
    expect(server!.missing).toEqual(Object.values(ENGINE_SIGNALS).map(({ name }) => ({ name, pod: "chat-server-r1-m0", reason: "unreachable" })));
  });

  it("gives a role whose pods all failed no values, podCount 0, observedAt = now", () => {
    const [server] = aggregateRoles({ roles: ["server"], intervals: [], failures: [{ pod: podA, reason: "not-exposed", detail: "404" }], now: T0 });
    expect(value(server!.signals, "requests_running")).toEqual({ name: "requests_running", unit: "requests", podCount: 0, observedAt: new Date(T0).toISOString() });
    expect(server!.missing.every((entry) => entry.reason === "not-exposed" && entry.pod === podA.name)).toBe(true);
  });

  it("reports first-read and reset pods per signal while their gauges still count", () => {
    const first = computeInterval(undefined, aSample(T0, { running: 4 }, { pod: podA }));
    const restarted = intervalOf(podB, {}, { running: 1, requestsSucceeded: 2 });
    const [server] = aggregateRoles({ roles: ["server"], intervals: [first, restarted], now: T0 });
    expect(value(server!.signals, "requests_running")).toMatchObject({ value: 5, podCount: 2 });
    expect(value(server!.signals, "requests_per_second")).toEqual({ name: "requests_per_second", unit: "requests/s", podCount: 0, observedAt: new Date(T0).toISOString() });
    expect(server!.missing).toContainEqual({ name: "requests_per_second", pod: podA.name, reason: "first-read" });
    expect(server!.missing).toContainEqual({ name: "ttft_mean", pod: podB.name, reason: "reset" });
    expect(server!.missing.filter((entry) => entry.pod === podB.name)).toHaveLength(8);
  });

  it("keeps roles apart, in the given order, and adds roles only seen in reads", () => {
    const roles = aggregateRoles({ roles: ["decode", "prefill"], intervals: [intervalOf(podP, {}, { running: 9 }), intervalOf(podA, {}, { running: 1 })], now: T0 });
    expect(roles.map((role) => role.name)).toEqual(["decode", "prefill", "server"]);
    expect(value(roles[0]!.signals, "requests_running")).toMatchObject({ podCount: 0 });
    expect(value(roles[0]!.signals, "requests_running")).not.toHaveProperty("value");
    expect(value(roles[1]!.signals, "requests_running")).toMatchObject({ value: 9, podCount: 1 });
  });

  it("appends the router's signals and missing entries to the role", () => {
    const extra = new Map([
      [
        "server",
        {
          signals: [{ name: "router_in_flight" as const, unit: "requests" as const, value: 7, podCount: 1, observedAt: new Date(T0).toISOString() }],
          missing: [{ name: "router_in_flight" as const, pod: "chat-router-x", reason: "unreachable" as const }],
        },
      ],
    ]);
    const [server] = aggregateRoles({ roles: ["server"], intervals: [], now: T0, extra });
    expect(server!.signals.at(-1)).toMatchObject({ name: "router_in_flight", value: 7 });
    expect(server!.missing).toEqual([{ name: "router_in_flight", pod: "chat-router-x", reason: "unreachable" }]);
  });
});

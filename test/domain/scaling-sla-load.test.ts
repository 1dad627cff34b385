// sla for an aggregated role under changing load: Little's law on the arrival rate (a backlog is
// not steady concurrency), corrections measured only from queue-free intervals and carried over
// the others, the engine's own batch limits from extraArgs, the ±10% tolerance band, and the
// early evaluation when the router holds more requests than the engines have batch slots.
import { describe, expect, it } from "vitest";
import { applySpecDefaults, type RoleInput } from "../../src/domain/deployment-spec.ts";
import { arrivalsPerSecond, decideScaling, rolesBeyondSlots, type RoleSignals, type ScalingSpec, type ScalingState } from "../../src/domain/scaling.ts";
import {
  batchLimitsOf,
  correctionFactor,
  largestConcurrency,
  QUEUE_FREE_SHARE,
  queueFreeTtft,
  recommendSlaAggregated,
  roleShape,
} from "../../src/domain/scaling-sla.ts";
import { estimateAggregated, type Workload } from "../../src/domain/serving-estimate.ts";

const MODEL = "Qwen/Qwen3-8B";
const W: Workload = { inputTokens: 1000, outputTokens: 1000 };
const TARGET = { ttftMs: 400, itlMs: 10 };
const T0 = Date.parse("2026-01-01T00:00:00Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function spec(role: RoleInput): ScalingSpec {
  return applySpecDefaults({
    model: { name: MODEL },
    engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
    router: { kind: "builtin" },
    roles: [role],
    scaling: { mode: "active", roles: [{ name: role.name, minReplicas: 1, maxReplicas: 16 }], algorithm: { type: "sla", ...TARGET } },
  });
}

const ROLE: RoleInput = { name: "main", replicas: 2, extraArgs: ["--max-num-seqs", "32"] };
const shape = roleShape(MODEL, "vllm", spec(ROLE).roles[0]!);
const estimate = (c: number) => estimateAggregated(shape.perf, W, c, shape.limits, "vllm");
/** c* uncorrected, by the module's search over the engine's 32 slots. */
const cStar = largestConcurrency(32, (c) => estimate(c).ttftMs <= TARGET.ttftMs && estimate(c).itlMs <= TARGET.itlMs);

describe("the engine's batch limits come from the role's extraArgs", () => {
  const defaults = { maxBatchedTokens: 8192, maxRunning: 1024 };

  it.each([
    [["--max-num-seqs", "32"], { maxBatchedTokens: 8192, maxRunning: 32 }],
    [["--max-num-seqs=48", "--max-num-batched-tokens", "2048"], { maxBatchedTokens: 2048, maxRunning: 48 }],
    [["--max_num_seqs", "16"], { maxBatchedTokens: 8192, maxRunning: 16 }],
    [["--max-num-seqs", "16", "--max-num-seqs", "64"], { maxBatchedTokens: 8192, maxRunning: 64 }],
    [["--max-num-seqs", "lots"], defaults],
    [["--max-num-seqs"], defaults],
    [["--enforce-eager"], defaults],
  ])("vLLM %j", (args, limits) => {
    expect(batchLimitsOf("vllm", defaults, args)).toEqual(limits);
  });

  it("SGLang names them --max-running-requests and --chunked-prefill-size", () => {
    expect(batchLimitsOf("sglang", { maxBatchedTokens: 16384, maxRunning: 256 }, ["--max-running-requests", "24", "--chunked-prefill-size=4096", "--max-num-seqs", "8"])).toEqual({
      maxBatchedTokens: 4096,
      maxRunning: 24,
    });
  });

  it("roleShape uses them: a role capped at 32 sequences is never sized beyond 32 per rank", () => {
    expect(shape.limits.maxRunning).toBe(32);
    const loose = recommendSlaAggregated(shape, { inputTokens: 100, outputTokens: 100 }, { inEngines: 1000 }, { samples: 0 }, { ttftMs: 60_000, itlMs: 1000 });
    expect(loose.capacityPerReplica).toBe(32);
  });
});

describe("arrivals: requests finished per second plus the growth of those in the engines", () => {
  it.each([
    // finished/s, requests now, requests 15 s before → arrivals
    [3, 30, 30, 3],
    [5, 70, 40, 7],
    [6, 20, 50, 4],
    [1, 0, 60, 0], // a pod lost with its requests: never below 0
  ])("%d/s finished, %d in the engines after %d → %d/s", (finished, now, before, expected) => {
    expect(arrivalsPerSecond(finished, { at: at(15), requests: now }, { at: at(0), requests: before })).toBeCloseTo(expected, 9);
  });

  it("is unknown without an earlier count, or with one that is not older", () => {
    expect(arrivalsPerSecond(3, { at: at(15), requests: 30 }, undefined)).toBeUndefined();
    expect(arrivalsPerSecond(3, { at: at(15), requests: 30 }, { at: at(15), requests: 20 })).toBeUndefined();
  });
});

describe("Little's law at the target operating point", () => {
  const perRequestSeconds = (estimate(cStar).ttftMs + (W.outputTokens - 1) * estimate(cStar).itlMs) / 1000;

  it.each([0.6, 1.8, 3, 6, 9.5])("%d requests/s → ⌈λ × W* ÷ c*⌉", (rate) => {
    const r = recommendSlaAggregated(shape, W, { inEngines: 0, arrivalsPerSecond: rate }, { samples: 0 }, TARGET);
    expect(r.capacityPerReplica).toBe(cStar);
    expect(r.needed).toBeCloseTo((rate * perRequestSeconds) / cStar, 9);
    expect(r.replicas).toBe(Math.ceil(Number(((rate * perRequestSeconds) / cStar).toFixed(6))));
    expect(r.message).toContain(`${rate} requests/s ×`);
  });

  it("a backlog does not count as steady concurrency: 90 requests queued at 6/s size as 6/s does", () => {
    const steady = recommendSlaAggregated(shape, W, { inEngines: 60, arrivalsPerSecond: 6 }, { samples: 0 }, TARGET);
    const backlog = recommendSlaAggregated(shape, W, { inEngines: 150, arrivalsPerSecond: 6 }, { samples: 0 }, TARGET);
    expect(backlog.replicas).toBe(steady.replicas);
    // Counting the 150 as concurrency would have asked for more.
    expect(recommendSlaAggregated(shape, W, { inEngines: 150 }, { samples: 0 }, TARGET).replicas).toBeGreaterThan(steady.replicas);
  });

  it("the corrections lengthen W* and shrink c*", () => {
    const plain = recommendSlaAggregated(shape, W, { inEngines: 0, arrivalsPerSecond: 6 }, { samples: 0 }, TARGET);
    const slower = recommendSlaAggregated(shape, W, { inEngines: 0, arrivalsPerSecond: 6 }, { samples: 0, carried: { itl: 1.1 } }, TARGET);
    expect(slower.capacityPerReplica).toBeLessThan(plain.capacityPerReplica);
    expect(slower.replicas).toBeGreaterThan(plain.replicas);
  });
});

describe("corrections come from queue-free intervals only, and are carried over the others", () => {
  const running = 20;
  const p = estimate(running);
  const observed = (o: object) => ({ ttftMs: 2 * p.ttftMs, itlMs: 1.5 * p.itlMs, concurrencyPerRank: running, waiting: 0, samples: 100, ...o });

  it("measures both in a queue-free interval", () => {
    const r = recommendSlaAggregated(shape, W, { inEngines: 40 }, observed({}), TARGET);
    expect(r.ttftCorrection).toMatchObject({ applied: true, measured: true });
    expect(r.ttftCorrection!.factor).toBeCloseTo(2, 9);
    expect(r.itlCorrection!.factor).toBeCloseTo(1.5, 9);
  });

  it.each([
    ["requests waiting at the read", { waiting: 3 }, "3 requests waiting for a slot"],
    ["a mean queue time over 10% of the TTFT target", { queueTimeMs: QUEUE_FREE_SHARE * TARGET.ttftMs + 1 }, "requests waited 41 ms for a slot"],
  ])("%s: neither is measured; without an earlier factor none applies", (_, extra, note) => {
    const r = recommendSlaAggregated(shape, W, { inEngines: 40 }, observed(extra), TARGET);
    expect(r.ttftCorrection).toMatchObject({ factor: 1, applied: false, measured: false });
    expect(r.itlCorrection).toMatchObject({ factor: 1, applied: false, measured: false });
    expect(r.ttftCorrection!.note).toContain(note);
    expect(r.message).toContain("TTFT correction off");
  });

  it("an earlier factor stays in use, and the message says where it comes from", () => {
    const r = recommendSlaAggregated(shape, W, { inEngines: 40 }, observed({ waiting: 3, carried: { ttft: 0.5, itl: 1.2 } }), TARGET);
    expect(r.ttftCorrection).toMatchObject({ factor: 0.5, applied: true, measured: false });
    expect(r.itlCorrection).toMatchObject({ factor: 1.2, applied: true, measured: false });
    expect(r.message).toContain("TTFT × 0.5 (kept from an earlier interval: 3 requests waiting for a slot");
  });

  it("a queue time of a step or two is no queue", () => {
    expect(queueFreeTtft({ ttftMs: 30, queueTimeMs: 5, waiting: 0, samples: 50 }, 400)).toEqual({ ttftMs: 30 });
    expect(queueFreeTtft({ waiting: 2, samples: 0 }, 400)).toEqual({});
  });

  it("too few finished requests keep the carried factor too", () => {
    expect(correctionFactor(100, 50, 9, 1.3)).toMatchObject({ factor: 1.3, applied: true, measured: false });
    // Measured 2 with 1.3 carried: halfway, geometrically.
    expect(correctionFactor(100, 50, 10, 1.3)).toMatchObject({ factor: Math.sqrt(2.6), applied: true, measured: true });
    expect(correctionFactor(100, 50, 10, 1.3).note).toBe("measured 2, moved halfway from 1.3");
  });
});

describe("decideScaling over consecutive intervals", () => {
  const s = spec(ROLE);
  const signals = (o: Partial<RoleSignals>): RoleSignals => ({
    running: 30, waiting: 0, requestsPerSecond: 3, inputTokens: 1000, outputTokens: 1000, podCount: 2, observedAt: at(0), missing: [], ...o,
  });
  const decide = (now: number, o: Partial<RoleSignals>, state?: ScalingState, current = 2) =>
    decideScaling({ now: at(now), spec: s, signals: { main: signals({ observedAt: at(now), ...o }) }, currentReplicas: { main: current }, retirementInFlight: false }, state);
  /** Two ready pods for a minute: latencies of the next interval may correct the model. */
  const steady: ScalingState = { roles: { main: { since: at(-60), history: [], readyPods: { count: 2, since: at(-60) } } } };

  it("the first sizes on the requests in the engines, the next on the arrival rate (finished + growth)", () => {
    const first = decide(0, {});
    expect(first.decision.roles[0]!.message).toContain("no arrival rate yet");
    expect(first.state.roles.main!.inEngines).toEqual({ at: at(0), requests: 30 });
    // 15 s later: 60 in the engines, 3/s finished → 3 + 30/15 = 5 arrivals/s.
    const second = decide(15, { running: 60 }, first.state);
    expect(second.decision.roles[0]!.message).toContain("5 requests/s ×");
    expect(second.state.roles.main!.inEngines).toEqual({ at: at(15), requests: 60 });
  });

  it("a measured correction is kept in the state and used by an interval that cannot measure one", () => {
    const p = estimate(15);
    const measured = decide(0, { ttftMs: 0.5 * p.ttftMs, itlMs: p.itlMs, firstTokens: 45 }, steady);
    expect(measured.state.roles.main!.corrections!.ttft).toBeCloseTo(0.5, 9);
    const queued = decide(15, { waiting: 4, ttftMs: 5000, itlMs: 2 * p.itlMs, firstTokens: 45 }, measured.state);
    expect(queued.decision.roles[0]!.message).toContain("TTFT × 0.5 (kept from an earlier interval");
    expect(queued.state.roles.main!.corrections!.ttft).toBeCloseTo(0.5, 9);
  });

  it("samples are the counted first tokens: 9 of them correct nothing, whatever the rate", () => {
    const p = estimate(15);
    const few = decide(0, { ttftMs: 0.5 * p.ttftMs, itlMs: p.itlMs, requestsPerSecond: 30, firstTokens: 9 }, steady);
    expect(few.decision.roles[0]!.message).toContain("9 requests finished, fewer than 10");
  });

  it("replicas joining make the next intervals a transient: no correction measured until the count held two intervals", () => {
    const p = estimate(15);
    const slow = { ttftMs: p.ttftMs, itlMs: 1.2 * p.itlMs, firstTokens: 45 };
    const joined = decide(0, { ...slow, podCount: 3 }, steady, 3);
    expect(joined.decision.roles[0]!.message).toContain("ITL correction off (3 ready pods for 0 s, under 2 intervals");
    expect(joined.state.roles.main!.readyPods).toEqual({ count: 3, since: at(0) });
    const next = decide(15, { ...slow, podCount: 3 }, joined.state, 3);
    expect(next.decision.roles[0]!.message).toContain("3 ready pods for 15 s");
    const settled = decide(30, { ...slow, podCount: 3 }, next.state, 3);
    expect(settled.decision.roles[0]!.message).toContain("ITL × 1.2");
    expect(settled.state.roles.main!.readyPods).toEqual({ count: 3, since: at(0) });
  });

  it("keeps the current count while the load needs within ±10% of it (WithinTolerance)", () => {
    const base = decide(0, {});
    const perRequest = (estimate(cStar).ttftMs + (W.outputTokens - 1) * estimate(cStar).itlMs) / 1000;
    // Arrivals that need 2.15 replicas' worth at 2 replicas: 7.5% over, kept; 2.4: raised to 3.
    const rateFor = (worth: number) => (worth * cStar) / perRequest;
    const near = decide(15, { requestsPerSecond: rateFor(2.15) }, base.state);
    expect(near.decision.roles[0]).toMatchObject({ recommended: 2, reason: "WithinTolerance" });
    expect(near.decision.roles[0]!.message).toContain("within 10% of 2, keeping 2");
    const over = decide(15, { requestsPerSecond: rateFor(2.4) }, base.state);
    expect(over.decision.roles[0]).toMatchObject({ recommended: 3, desired: 3, reason: "SlaCapacity" });
  });
});

describe("early evaluation: requests at the router beyond the ready engines' batch slots", () => {
  const s = spec(ROLE);

  it.each([
    // in flight, ready pods → beyond (2 pods × 32 slots = 64)
    [64, 2, false],
    [65, 2, true],
    [40, 1, true],
    [500, 0, false], // no ready pod: nothing to compare with (the next evaluation says MetricsMissing)
  ])("%d in flight over %d ready pods → %s", (inFlight, pods, beyond) => {
    const out = rolesBeyondSlots(s, { main: inFlight }, { main: pods });
    expect(out).toEqual(beyond ? [{ role: "main", inFlight, slots: 32 * pods }] : []);
  });

  it("leaves out roles at zero (their held requests decide), at maxReplicas, unread, or not managed by the autoscaler", () => {
    expect(rolesBeyondSlots(spec({ ...ROLE, replicas: 0 }), { main: 10 }, { main: 1 })).toEqual([]);
    expect(rolesBeyondSlots(spec({ ...ROLE, replicas: 16 }), { main: 1000 }, { main: 16 })).toEqual([]);
    expect(rolesBeyondSlots(s, {}, { main: 1 })).toEqual([]);
    const unmanaged = { ...s, scaling: { ...s.scaling!, roles: [] } };
    expect(rolesBeyondSlots(unmanaged, { main: 100 }, { main: 1 })).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { applySpecDefaults, type RoleInput } from "../../src/domain/deployment-spec.ts";
import { KV_TRANSFER_GBS } from "../../src/domain/planner.ts";
import { decideScaling, type RoleSignals, type ScalingSpec } from "../../src/domain/scaling.ts";
import {
  correctionFactor,
  MAX_PREFILL_UTILISATION,
  recommendSlaAggregated,
  recommendSlaDecode,
  recommendSlaPrefill,
  roleShape,
  type RoleShape,
} from "../../src/domain/scaling-sla.ts";
import { estimateAggregated, estimateDecode, estimatePrefill, type Workload } from "../../src/domain/serving-estimate.ts";

const MODEL = "Qwen/Qwen3-8B";
const W: Workload = { inputTokens: 1000, outputTokens: 200 };
const T0 = Date.parse("2025-01-01T00:00:00Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function spec(roles: RoleInput[], ttftMs = 500, itlMs = 50): ScalingSpec {
  return applySpecDefaults({
    model: { name: MODEL },
    engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
    router: { kind: "builtin" },
    roles,
    scaling: { mode: "active", roles: roles.map((r) => ({ name: r.name, minReplicas: 1, maxReplicas: 64 })), algorithm: { type: "sla", ttftMs, itlMs } },
  });
}

function shapeOf(role: RoleInput = { name: "server" }): RoleShape {
  const s = spec([role]);
  return roleShape(MODEL, "vllm", s.roles[0]!);
}

/** The SLA capacity by plain scan, independent of the module's search. */
function scanAggregated(shape: RoleShape, w: Workload, ttftMs: number, itlMs: number, kTtft = 1, kItl = 1): number {
  const limit = Math.min(shape.limits.maxRunning, Math.floor(shape.perf.kvCapacityTokens / (w.inputTokens + w.outputTokens)));
  let best = 0;
  for (let c = 1; c <= limit; c++) {
    const e = estimateAggregated(shape.perf, w, c, shape.limits, "vllm");
    if (kTtft * e.ttftMs <= ttftMs && kItl * e.itlMs <= itlMs) best = c;
    else break;
  }
  return best;
}

describe("aggregated, first interval (no arrival rate yet): ⌈Σ(running + waiting) ÷ (c* × ranks)⌉, c* the most concurrency meeting both targets", () => {
  const shape = shapeOf();

  it.each([
    [1000, 500, 50],
    [1000, 300, 30],
    [1000, 200, 20],
    [100, 1000, 100],
    [37, 150, 12],
    [0, 500, 50],
  ])("%d requests, TTFT %d ms, ITL %d ms", (demand, ttftMs, itlMs) => {
    const cStar = scanAggregated(shape, W, ttftMs, itlMs);
    expect(cStar).toBeGreaterThan(0);
    const r = recommendSlaAggregated(shape, W, { inEngines: demand }, { samples: 0 }, { ttftMs, itlMs });
    expect(r.capacityPerReplica).toBe(cStar);
    expect(r.replicas).toBe(Math.ceil(demand / cStar));
    expect(r.reason).toBe("SlaCapacity");
  });

  it("pins the numbers of one case (Qwen3-8B, H100 TP 1, 1000 in / 200 out, 500 ms / 50 ms): 185 per replica, 1000 requests → 6", () => {
    const r = recommendSlaAggregated(shape, W, { inEngines: 1000 }, { samples: 0 }, { ttftMs: 500, itlMs: 50 });
    expect([r.capacityPerReplica, r.replicas]).toEqual([185, 6]);
  });

  it("data-parallel ranks multiply a replica's capacity", () => {
    const dp = shapeOf({ name: "server", resources: { gpus: 2 }, parallelism: { tensor: 1, data: 2 } });
    expect(dp.ranksPerReplica).toBe(2);
    const one = recommendSlaAggregated(shape, W, { inEngines: 1000 }, { samples: 0 }, { ttftMs: 500, itlMs: 50 });
    const two = recommendSlaAggregated(dp, W, { inEngines: 1000 }, { samples: 0 }, { ttftMs: 500, itlMs: 50 });
    expect(two.capacityPerReplica).toBe(2 * one.capacityPerReplica);
    expect(two.replicas).toBe(Math.ceil(1000 / (2 * one.capacityPerReplica)));
  });

  it("an unreachable SLA sizes at one request per rank and says so", () => {
    const r = recommendSlaAggregated(shape, W, { inEngines: 40 }, { samples: 0 }, { ttftMs: 500, itlMs: 1 });
    expect(r).toMatchObject({ reason: "SlaUnreachable", capacityPerReplica: 1, replicas: 40 });
  });
});

describe("the correction: observed ÷ predicted at the observed load (Dynamo's planner)", () => {
  const shape = shapeOf();
  const load = 20;
  const predicted = estimateAggregated(shape.perf, W, load, shape.limits, "vllm");

  it.each([
    // observed ÷ predicted TTFT, samples, factor applied
    [1, 100, 1],
    [2, 100, 2],
    [0.5, 100, 0.5],
    [10, 100, 4], // clamped
    [0.1, 100, 0.25], // clamped
    [3, 9, 1], // too few requests finished
  ])("TTFT × %d with %d samples → factor %d", (k, samples, factor) => {
    const c = correctionFactor(predicted.ttftMs * k, predicted.ttftMs, samples);
    expect(c.factor).toBeCloseTo(factor, 9);
    const r = recommendSlaAggregated(shape, W, { inEngines: 1000 }, { ttftMs: predicted.ttftMs * k, itlMs: predicted.itlMs, concurrencyPerRank: load, samples }, { ttftMs: 500, itlMs: 50 });
    const cStar = scanAggregated(shape, W, 500, 50, factor, 1);
    expect(r.capacityPerReplica).toBe(cStar);
    expect(r.replicas).toBe(Math.ceil(1000 / cStar));
  });

  it("observed TTFT twice the predicted → about twice the replicas (6 → 12); ten times → clamped to four times", () => {
    const replicas = (k: number) =>
      recommendSlaAggregated(shape, W, { inEngines: 1000 }, { ttftMs: predicted.ttftMs * k, itlMs: predicted.itlMs, concurrencyPerRank: load, samples: 100 }, { ttftMs: 500, itlMs: 50 }).replicas;
    expect(replicas(1)).toBe(6);
    expect(replicas(2)).toBe(12);
    expect(replicas(10)).toBe(replicas(4));
    expect(replicas(4)).toBeGreaterThan(replicas(2));
  });

  it("through decideScaling: per-rank load from ready pods, samples from rate × interval", () => {
    const s = spec([{ name: "server", replicas: 2 }]);
    const perRank = 100;
    const p = estimateAggregated(shape.perf, W, perRank, shape.limits, "vllm");
    const signals = (k: number, rps: number): RoleSignals => ({
      running: 2 * perRank, waiting: 0, ttftMs: p.ttftMs * k, itlMs: p.itlMs, requestsPerSecond: rps, inputTokens: 1000, outputTokens: 200,
      podCount: 2, observedAt: at(0), missing: [],
    });
    // Two ready pods for a minute: a steady interval, whose latencies may correct the model.
    const steady = { roles: { server: { since: at(-60), history: [], readyPods: { count: 2, since: at(-60) } } } };
    const decide = (k: number, rps: number) =>
      decideScaling({ now: at(0), spec: s, signals: { server: signals(k, rps) }, currentReplicas: { server: 2 }, retirementInFlight: false }, steady).decision.roles[0]!;
    const plain = decide(1, 10);
    const doubled = decide(2, 10);
    expect(plain.recommended).toBe(Math.ceil(200 / scanAggregated(shape, W, 500, 50)));
    expect(doubled.recommended).toBe(Math.ceil(200 / scanAggregated(shape, W, 500, 50, 2, 1)));
    expect(doubled.message).toContain("TTFT × 2");
    // 0.5 requests/s × 15 s = 7.5 finished requests: too few to correct.
    expect(decide(2, 0.5).recommended).toBe(plain.recommended);
    expect(plain.signals.map((x) => x.name)).toEqual(["running", "waiting", "requestsPerSecond", "ttftMs", "itlMs", "inputTokens", "outputTokens"]);
  });
});

describe("PD: prefill sized by TTFT on the request rate, decode by ITL on the streams", () => {
  const prefillShape = shapeOf({ name: "prefill", kind: "prefill" });
  const decodeShape = shapeOf({ name: "decode", kind: "decode" });

  it.each([
    [20, 500],
    [100, 500],
    [100, 250],
    [7.5, 2000],
  ])("prefill: %d requests/s, TTFT %d ms → ⌈R ÷ (capacity × u*)⌉", (rate, ttftMs) => {
    const est = estimatePrefill(prefillShape.perf, W, prefillShape.limits, KV_TRANSFER_GBS);
    let u = 0;
    for (let h = Math.round(MAX_PREFILL_UTILISATION * 100); h >= 1; h--) {
      if (est.ttftAt(h / 100) <= ttftMs) {
        u = h / 100;
        break;
      }
    }
    expect(u).toBeGreaterThan(0);
    const r = recommendSlaPrefill(prefillShape, W, rate, { ranks: 0, samples: 0 }, ttftMs);
    expect(r.replicas).toBe(Math.ceil(rate / (est.capacityRps * u)));
  });

  it.each([
    [1000, 30],
    [1000, 15],
    [50, 10],
  ])("decode: %d streams, ITL %d ms → ⌈streams ÷ c*⌉", (streams, itlMs) => {
    let cStar = 0;
    for (let c = 1; c <= decodeShape.limits.maxRunning; c++) {
      if (estimateDecode(decodeShape.perf, W, c).itlMs <= itlMs && c * (W.inputTokens + W.outputTokens) <= decodeShape.perf.kvCapacityTokens) cStar = c;
      else break;
    }
    const r = recommendSlaDecode(decodeShape, W, streams, { samples: 0 }, itlMs);
    expect(r.capacityPerReplica).toBe(cStar);
    expect(r.replicas).toBe(Math.ceil(streams / cStar));
  });

  it("prefill observed TTFT twice the predicted at its utilisation → more prefill replicas", () => {
    const est = estimatePrefill(prefillShape.perf, W, prefillShape.limits, KV_TRANSFER_GBS);
    const rate = 100;
    const ranks = 5;
    const observedTtft = 2 * est.ttftAt(rate / (ranks * est.capacityRps));
    // A target the idle TTFT meets 2.5 times over, so that u* sits below its 0.85 cap.
    const target = 2.5 * est.ttftAt(0);
    const plain = recommendSlaPrefill(prefillShape, W, rate, { ranks, samples: 1000 }, target);
    const corrected = recommendSlaPrefill(prefillShape, W, rate, { ranks, samples: 1000, ttftMs: observedTtft }, target);
    expect(corrected.ttftCorrection!.factor).toBeCloseTo(2, 9);
    expect(corrected.replicas).toBeGreaterThan(plain.replicas);
  });

  it("decideScaling sizes each side by its own signals, then the ratio", () => {
    const s = { ...spec([{ name: "prefill", kind: "prefill" }, { name: "decode", kind: "decode" }], 500, 30) };
    s.scaling = { ...s.scaling!, pdRatio: { min: 0.5, max: 2 } };
    const sig = (o: Partial<RoleSignals>): RoleSignals => ({ running: 0, waiting: 0, requestsPerSecond: 0, inputTokens: 1000, outputTokens: 200, podCount: 1, observedAt: at(0), missing: [], ...o });
    const d = decideScaling({
      now: at(0), spec: s, currentReplicas: { prefill: 1, decode: 1 }, retirementInFlight: false,
      signals: { prefill: sig({ requestsPerSecond: 20 }), decode: sig({ running: 1000, requestsPerSecond: 20 }) },
    }).decision;
    const prefill = d.roles.find((r) => r.name === "prefill")!;
    const decode = d.roles.find((r) => r.name === "decode")!;
    expect(prefill.recommended).toBe(recommendSlaPrefill(prefillShape, W, 20, { ranks: 1, samples: 0 }, 500).replicas);
    expect(decode.recommended).toBe(recommendSlaDecode(decodeShape, W, 1000, { samples: 0 }, 30).replicas);
    expect(prefill.desired / decode.desired).toBeGreaterThanOrEqual(0.5);
    expect(prefill.signals.map((x) => x.name)).toEqual(["requestsPerSecond", "inputTokens"]);
  });
});

describe("monotonicity", () => {
  const shape = shapeOf();

  it("more load never fewer replicas (at a fixed correction: observed 1.5 × predicted at each load)", () => {
    let last = 0;
    for (let demand = 0; demand <= 3000; demand += 25) {
      const perRank = Math.max(1, demand / 4);
      const p = estimateAggregated(shape.perf, W, perRank, shape.limits, "vllm");
      const r = recommendSlaAggregated(shape, W, { inEngines: demand }, { ttftMs: 1.5 * p.ttftMs, itlMs: 1.5 * p.itlMs, concurrencyPerRank: perRank, samples: 100 }, { ttftMs: 500, itlMs: 50 });
      expect(r.replicas).toBeGreaterThanOrEqual(last);
      last = r.replicas;
    }
    expect(last).toBeGreaterThan(10);
  });

  it("a stricter SLA never fewer replicas", () => {
    const targets = [2000, 1000, 700, 500, 400, 300, 250, 200, 150, 120, 100, 80, 60];
    for (const itl of [100, 50, 30, 20, 15, 10, 8, 5]) {
      let last = 0;
      for (const ttft of targets) {
        const r = recommendSlaAggregated(shape, W, { inEngines: 1000 }, { samples: 0 }, { ttftMs: ttft, itlMs: itl });
        expect(r.replicas).toBeGreaterThanOrEqual(last);
        last = r.replicas;
      }
    }
    for (const ttft of targets) {
      let last = 0;
      for (const itl of [100, 50, 30, 20, 15, 10, 8, 5]) {
        const r = recommendSlaAggregated(shape, W, { inEngines: 1000 }, { samples: 0 }, { ttftMs: ttft, itlMs: itl });
        expect(r.replicas).toBeGreaterThanOrEqual(last);
        last = r.replicas;
      }
    }
    let lastPrefill = 0;
    let lastDecode = 0;
    for (const t of [2000, 1000, 500, 300, 200, 150, 100, 60, 30, 10]) {
      const p = recommendSlaPrefill(shapeOf({ name: "prefill", kind: "prefill" }), W, 50, { ranks: 0, samples: 0 }, t).replicas;
      const d = recommendSlaDecode(shapeOf({ name: "decode", kind: "decode" }), W, 1000, { samples: 0 }, t / 10).replicas;
      expect(p).toBeGreaterThanOrEqual(lastPrefill);
      expect(d).toBeGreaterThanOrEqual(lastDecode);
      lastPrefill = p;
      lastDecode = d;
    }
  });

  it("more load never fewer replicas through decideScaling (queue_depth and sla)", () => {
    for (const algorithm of [{ type: "queue_depth" as const, targetPerReplica: 8, tolerance: 0.1 }, { type: "sla" as const, ttftMs: 300, itlMs: 30 }]) {
      const s = spec([{ name: "server", replicas: 3 }]);
      s.scaling = { ...s.scaling!, algorithm };
      let last = 0;
      for (let load = 0; load <= 2000; load += 10) {
        const d = decideScaling({
          now: at(0), spec: s, currentReplicas: { server: 3 }, retirementInFlight: false,
          signals: { server: { running: load, waiting: 0, requestsPerSecond: 0, podCount: 3, observedAt: at(0), missing: [] } },
        }).decision.roles[0]!;
        expect(d.recommended!).toBeGreaterThanOrEqual(last);
        last = d.recommended!;
      }
    }
  });
});

import { describe, expect, it } from "vitest";
import { applySpecDefaults, type DeploymentSpecInput, type RoleInput } from "../../src/domain/deployment-spec.ts";
import {
  decideScaling,
  emptyScalingState,
  type RoleSignals,
  type ScalingDecision,
  type ScalingInput,
  type ScalingSpec,
  type ScalingState,
} from "../../src/domain/scaling.ts";

const T0 = Date.parse("2025-01-01T00:00:00Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

type ScalingBody = NonNullable<DeploymentSpecInput["scaling"]>;

/** A defaulted spec: one `server` role unless told otherwise, queue_depth (8, tolerance 0), window 300 s. */
function aSpec(o: { roles?: RoleInput[]; scaling?: Partial<ScalingBody>; router?: DeploymentSpecInput["router"] } = {}): ScalingSpec {
  const roles = o.roles ?? [{ name: "server", replicas: 2 }];
  return applySpecDefaults({
    model: { name: "Qwen/Qwen3-8B" },
    engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
    roles,
    router: o.router ?? { kind: "builtin" },
    scaling: {
      mode: "active",
      roles: roles.map((r) => ({ name: r.name, minReplicas: 1, maxReplicas: 10 })),
      algorithm: { type: "queue_depth", targetPerReplica: 8, tolerance: 0 },
      ...o.scaling,
    },
  });
}

const pd = (prefill = 1, decode = 1): RoleInput[] => [
  { name: "prefill", kind: "prefill", replicas: prefill },
  { name: "decode", kind: "decode", replicas: decode },
];

function signals(s: Partial<RoleSignals> & { at?: number } = {}): RoleSignals {
  const { at: t, ...rest } = s;
  return { running: 0, waiting: 0, podCount: 1, observedAt: at(t ?? 0), missing: [], ...rest };
}

function input(spec: ScalingSpec, o: Partial<ScalingInput> & { t?: number } = {}): ScalingInput {
  const { t, ...rest } = o;
  return {
    now: at(t ?? 0),
    spec,
    signals: {},
    currentReplicas: Object.fromEntries(spec.roles.map((r) => [r.name, r.replicas])),
    retirementInFlight: false,
    ...rest,
  };
}

const role = (d: ScalingDecision, name = "server") => d.roles.find((r) => r.name === name)!;

/**
 * Runs evaluations every `interval` seconds as the agent would: state carried over, an active
 * write applied to the current count at once.
 */
function simulate(
  spec: ScalingSpec,
  steps: { load?: number; loads?: Record<string, number>; free?: Record<string, number>; held?: number; retiring?: boolean }[],
  o: { interval?: number; start?: Record<string, number> } = {},
): { decisions: ScalingDecision[]; current: Record<string, number>[] } {
  let state: ScalingState = emptyScalingState();
  let current: Record<string, number> = o.start ?? Object.fromEntries(spec.roles.map((r) => [r.name, r.replicas]));
  const decisions: ScalingDecision[] = [];
  const seen: Record<string, number>[] = [];
  steps.forEach((step, i) => {
    const t = i * (o.interval ?? 15);
    const loads = step.loads ?? { [spec.roles[0]!.name]: step.load ?? 0 };
    const sig = Object.fromEntries(Object.entries(loads).map(([name, load]) => [name, signals({ running: load, podCount: Math.max(1, current[name] ?? 1), at: t })]));
    seen.push({ ...current });
    const r = decideScaling(
      input(spec, {
        t,
        signals: sig,
        currentReplicas: current,
        ...(step.free && { freeGpus: step.free }),
        ...(step.held !== undefined && { held: step.held }),
        retirementInFlight: step.retiring ?? false,
      }),
      state,
    );
    state = r.state;
    decisions.push(r.decision);
    current = { ...current };
    for (const a of r.decision.actions) current[a.role] = a.to;
  });
  return { decisions, current: seen };
}

describe("stabilization", () => {
  it("a burst: scale-up at once, scale-down only once the window holds no higher recommendation", () => {
    // 16 requests → 2, a burst of 64 → 8 at t = 15, then 16 again.
    const loads = [16, 64, ...Array.from({ length: 30 }, () => 16)];
    const { decisions } = simulate(aSpec(), loads.map((load) => ({ load })));
    expect(decisions[1]!.actions).toEqual([{ type: "scaleUp", role: "server", from: 2, to: 8 }]);
    const downs = decisions.flatMap((d, i) => d.actions.filter((a) => a.type === "scaleDown").map((a) => ({ t: i * 15, ...a })));
    // The 8 recorded at t = 15 leaves the window (entries newer than now − 300 s) at t = 315.
    expect(downs).toEqual([{ t: 315, type: "scaleDown", role: "server", from: 8, to: 2 }]);
    expect(role(decisions[20]!)).toMatchObject({ current: 8, recommended: 2, desired: 8, limitedBy: "Stabilization" });
  });

  it.each([
    // spike at (s), first scale-down at (s)
    [150, 450],
    [300, 600],
    [0, 300],
  ])("a single high sample at t = %d s holds the count until t = %d s", (spike, firstDown) => {
    const steps = Array.from({ length: 50 }, (_, i) => ({ load: i * 15 === spike ? 64 : 16 }));
    const { decisions } = simulate(aSpec(), steps, { start: { server: 8 } });
    const firstDownAt = decisions.findIndex((d) => d.actions.some((a) => a.type === "scaleDown")) * 15;
    expect(firstDownAt).toBe(firstDown);
  });

  it("no scale-down before a whole window has been observed (a restart with no state waits a window)", () => {
    const steps = Array.from({ length: 25 }, () => ({ load: 8 }));
    const { decisions } = simulate(aSpec(), steps, { start: { server: 5 } });
    expect(decisions.findIndex((d) => d.actions.length > 0) * 15).toBe(300);
    expect(role(decisions[3]!).message).toContain("45 s of the 300 s window observed");
  });

  it("a window of 0 scales down at once", () => {
    const { decisions } = simulate(aSpec({ scaling: { scaleDownStabilizationSeconds: 0 } }), [{ load: 8 }], { start: { server: 5 } });
    expect(decisions[0]!.actions).toEqual([{ type: "scaleDown", role: "server", from: 5, to: 1 }]);
  });

  it("a retirement in flight blocks a scale-down but not a scale-up", () => {
    const spec = aSpec({ scaling: { scaleDownStabilizationSeconds: 0 } });
    const down = decideScaling(input(spec, { signals: { server: signals({ running: 8 }) }, currentReplicas: { server: 5 }, retirementInFlight: true }));
    expect(down.decision.actions).toEqual([]);
    expect(role(down.decision)).toMatchObject({ recommended: 1, desired: 5, limitedBy: "RetirementInFlight" });
    const up = decideScaling(input(spec, { signals: { server: signals({ running: 80 }) }, currentReplicas: { server: 5 }, retirementInFlight: true }));
    expect(up.decision.actions).toEqual([{ type: "scaleUp", role: "server", from: 5, to: 10 }]);
  });

  it("only one role scales down per interval; the whole target is written, the agent retires one replica at a time", () => {
    const spec = aSpec({ roles: pd(4, 4), scaling: { scaleDownStabilizationSeconds: 0 } });
    const r = decideScaling(input(spec, { signals: { prefill: signals({ running: 8 }), decode: signals({ running: 8 }) } }));
    expect(r.decision.actions).toEqual([{ type: "scaleDown", role: "prefill", from: 4, to: 1 }]);
    expect(role(r.decision, "decode")).toMatchObject({ desired: 4, limitedBy: "RetirementInFlight" });
  });
});

describe("bounds", () => {
  const gpuRole = (o: Partial<RoleInput> = {}): RoleInput => ({ name: "server", replicas: 2, resources: { gpus: 2, gpuType: "nvidia-h100-80gb" }, ...o });

  it.each([
    // name, load, capacity, desired, limitedBy, condition reason
    ["max", 200, {}, 10, "MaxReplicas", "ScaledUp"],
    ["quota", 40, { quotaGpusLeft: 4 }, 4, "Quota", "CapacityShort"],
    ["free GPUs", 40, { freeGpus: { "nvidia-h100-80gb": 3 } }, 3, "InsufficientGPU", "CapacityShort"],
    ["free GPUs of another type", 40, { freeGpus: { "nvidia-l4-24gb": 64 } }, 2, "InsufficientGPU", "CapacityShort"],
    ["quota before free GPUs", 40, { quotaGpusLeft: 2, freeGpus: { "nvidia-h100-80gb": 0 } }, 2, "Quota", "CapacityShort"],
    ["unknown free GPUs, no quota", 40, {}, 5, undefined, "ScaledUp"],
  ])("%s: %d requests, capacity %j → %d (%s)", (_, load, capacity, desired, limitedBy, reason) => {
    const r = decideScaling(input(aSpec({ roles: [gpuRole()] }), { signals: { server: signals({ running: load }) }, ...capacity }));
    expect(role(r.decision)).toMatchObject({ desired, ...(limitedBy && { limitedBy }) });
    expect(r.decision.condition!.reason).toBe(reason);
  });

  it("min: no load keeps minReplicas", () => {
    const spec = aSpec({ scaling: { roles: [{ name: "server", minReplicas: 2, maxReplicas: 10 }], scaleDownStabilizationSeconds: 0 } });
    const r = decideScaling(input(spec, { signals: { server: signals({ running: 0 }) }, currentReplicas: { server: 6 } }));
    expect(role(r.decision)).toMatchObject({ recommended: 0, desired: 2, limitedBy: "MinReplicas" });
  });

  it("CapacityShort names the GPUs needed and free", () => {
    const r = decideScaling(input(aSpec({ roles: [gpuRole()] }), { signals: { server: signals({ running: 40 }) }, freeGpus: { "nvidia-h100-80gb": 3 } }));
    expect(r.decision.condition).toEqual({
      type: "Scaling",
      status: "False",
      reason: "CapacityShort",
      message: "role server wants 5 replicas (now 2, 2 GPUs each): 6 nvidia-h100-80gb GPUs needed, 3 nvidia-h100-80gb GPUs free; holding at 3",
    });
  });

  it.each([
    ["free toggling 3/4 around a need of 4", [3, 4, 3, 4, 3, 4]],
    ["free toggling 4/5", [4, 5, 4, 5, 4]],
    ["free stuck at 3", [3, 3, 3, 3]],
  ])("%s: never a scale-down, at most the one scale-up that fits", (_, free) => {
    // One more replica of 4 GPUs is wanted (24 requests, 3 × 8), 2 are running.
    const spec = aSpec({ roles: [gpuRole({ resources: { gpus: 4, gpuType: "nvidia-h100-80gb" } })] });
    const { decisions } = simulate(spec, free.map((n) => ({ load: 24, free: { "nvidia-h100-80gb": n } })));
    const actions = decisions.flatMap((d) => d.actions);
    expect(actions.every((a) => a.type === "scaleUp" && a.to === 3)).toBe(true);
    expect(actions.length).toBe(free.some((n) => n >= 4) ? 1 : 0);
    for (const d of decisions) expect(role(d).desired).toBeGreaterThanOrEqual(role(d).current);
    // While short, the condition says the same thing every interval.
    const short = decisions.filter((d) => d.condition!.reason === "CapacityShort").map((d) => d.condition!.message);
    expect(new Set(short).size).toBeLessThanOrEqual(1);
    if (short.length > 0) expect(short[0]).toContain("4 nvidia-h100-80gb GPUs needed, 3 nvidia-h100-80gb GPUs free");
  });

  it("capacity holds back a scale-up of a count that is already short without scaling down", () => {
    // 4 replicas in the spec, no GPU free, the load wants 2: stabilization decides the scale-down, not capacity.
    const spec = aSpec({ roles: [gpuRole({ replicas: 4 })] });
    const r = decideScaling(input(spec, { signals: { server: signals({ running: 16 }) }, freeGpus: { "nvidia-h100-80gb": 0 } }));
    expect(role(r.decision)).toMatchObject({ desired: 4, limitedBy: "Stabilization" });
  });

  it.each([
    // prefill load, decode load, ratio, expected prefill, decode
    [8, 64, { min: 0.5, max: 2 }, 4, 8],
    [72, 8, { min: 0.5, max: 2 }, 9, 5],
    [16, 16, { min: 0.5, max: 2 }, 2, 2],
    [0, 80, { min: 0.25, max: 4 }, 3, 10],
  ])("PD ratio: loads %d/%d within %j → %d:%d", (pLoad, dLoad, pdRatio, p, d) => {
    const spec = aSpec({ roles: pd(), scaling: { pdRatio } });
    const r = decideScaling(input(spec, { signals: { prefill: signals({ running: pLoad }), decode: signals({ running: dLoad }) } }));
    expect([role(r.decision, "prefill").desired, role(r.decision, "decode").desired]).toEqual([p, d]);
    expect(r.decision.roles.some((x) => x.limitedBy === "PdRatio")).toBe(p !== Math.max(1, Math.ceil(pLoad / 8)) || d !== Math.max(1, Math.ceil(dLoad / 8)));
  });

  it("PD ratio holds at every step of a changing load", () => {
    const pdRatio = { min: 0.5, max: 2 };
    const spec = aSpec({ roles: pd(), scaling: { pdRatio, scaleDownStabilizationSeconds: 60 } });
    const wave = Array.from({ length: 40 }, (_, i) => ({ loads: { prefill: Math.round(40 + 38 * Math.sin(i / 3)), decode: Math.round(50 + 30 * Math.cos(i / 4)) } }));
    const { decisions } = simulate(spec, wave);
    for (const d of decisions) {
      const p = role(d, "prefill").desired;
      const dd = role(d, "decode").desired;
      expect(p / dd).toBeGreaterThanOrEqual(pdRatio.min);
      expect(p / dd).toBeLessThanOrEqual(pdRatio.max);
    }
  });
});

describe("PD scale-down under a ratio", () => {
  it("both sides reach their targets one scale-down at a time, never leaving the ratio", () => {
    // Prefill wants 1, decode 4; with prefill ≥ 0.5 × decode, prefill cannot go first alone.
    const pdRatio = { min: 0.5, max: 2 };
    const spec = aSpec({ roles: pd(10, 10), scaling: { pdRatio, scaleDownStabilizationSeconds: 0 } });
    const { decisions, current } = simulate(spec, Array.from({ length: 6 }, () => ({ loads: { prefill: 8, decode: 32 } })));
    expect(decisions.map((d) => d.actions.filter((a) => a.type === "scaleDown").length)).toEqual(decisions.map((d) => Math.min(1, d.actions.length)));
    expect(decisions[0]!.actions).toEqual([{ type: "scaleDown", role: "prefill", from: 10, to: 5 }]);
    expect(current.at(-1)).toEqual({ prefill: 2, decode: 4 });
    for (const c of current) expect(c.prefill! / c.decode!).toBeGreaterThanOrEqual(pdRatio.min);
  });
});

describe("missing metrics", () => {
  it.each([
    ["no read for the role", undefined],
    ["running missing", signals({ running: undefined, missing: ["running"] })],
    ["waiting unread", signals({ waiting: undefined })],
    ["no ready pod", signals({ running: 40, podCount: 0 })],
  ])("%s → no decision", (_, s) => {
    const r = decideScaling(input(aSpec(), { signals: { server: s }, currentReplicas: { server: 3 } }));
    const d = role(r.decision);
    expect(d).toMatchObject({ current: 3, desired: 3, reason: "MetricsMissing" });
    expect(d.recommended).toBeUndefined();
    expect(r.decision.actions).toEqual([]);
    expect(r.decision.condition!.reason).toBe("MetricsMissing");
    expect(r.state.roles.server).toBeUndefined();
  });

  it("sla: a latency read that failed blocks the decision, a latency with no sample does not", () => {
    const spec = aSpec({ scaling: { algorithm: { type: "sla", ttftMs: 500, itlMs: 50 } } });
    const base = { running: 40, requestsPerSecond: 0, inputTokens: 1000, outputTokens: 200 };
    const failed = decideScaling(input(spec, { signals: { server: signals({ ...base, missing: ["ttftMs"] }) } }));
    expect(role(failed.decision).reason).toBe("MetricsMissing");
    const noSample = decideScaling(input(spec, { signals: { server: signals(base) } }));
    expect(role(noSample.decision).reason).toBe("SlaCapacity");
  });

  it("a gap keeps the window's evidence: history is not recorded while metrics are missing", () => {
    const spec = aSpec();
    const first = decideScaling(input(spec, { signals: { server: signals({ running: 64 }) } }));
    const gap = decideScaling(input(spec, { t: 15, signals: {}, currentReplicas: { server: 8 } }), first.state);
    expect(gap.state.roles.server!.history).toEqual(first.state.roles.server!.history);
  });
});

describe("modes", () => {
  const scenarios: [string, ScalingSpec, Parameters<typeof simulate>[1], Record<string, number>?][] = [
    ["scale-up", aSpec(), [{ load: 64 }]],
    ["scale-down after the window", aSpec({ scaling: { scaleDownStabilizationSeconds: 0 } }), [{ load: 8 }], { server: 6 }],
    ["held requests at zero", aSpec({ scaling: { roles: [{ name: "server", minReplicas: 0, maxReplicas: 4 }] } }), [{ held: 3 }], { server: 0 }],
    ["PD", aSpec({ roles: pd(), scaling: { pdRatio: { min: 0.5, max: 2 } } }), [{ loads: { prefill: 8, decode: 64 } }]],
  ];

  it.each(scenarios)("shadow never returns an action, and recommends what active does: %s", (_, spec, steps, start) => {
    const shadowSpec = { ...spec, scaling: { ...spec.scaling!, mode: "shadow" as const } };
    const active = simulate(spec, steps, start ? { start } : {});
    const shadow = simulate(shadowSpec, steps, start ? { start } : {});
    expect(active.decisions.some((d) => d.actions.length > 0)).toBe(true);
    for (const d of shadow.decisions) expect(d.actions).toEqual([]);
    expect(shadow.decisions.map((d) => d.roles.map((r) => r.desired))).toEqual(active.decisions.map((d) => d.roles.map((r) => r.desired)));
    expect(shadow.decisions[0]!.condition!.reason).toBe("Recommended");
  });

  it("off decides nothing and drops the state", () => {
    const spec = aSpec({ scaling: { mode: "off" } });
    const r = decideScaling(input(spec, { signals: { server: signals({ running: 64 }) } }), { roles: { server: { since: at(0), history: [] } } });
    expect(r.decision).toEqual({ mode: "off", evaluatedAt: at(0), roles: [], actions: [], events: [] });
    expect(r.state).toEqual(emptyScalingState());
  });

  it("events: one per write in active mode, marked as the autoscaler's", () => {
    const r = decideScaling(input(aSpec(), { signals: { server: signals({ running: 64 }) } }));
    expect(r.decision.events).toEqual([
      expect.objectContaining({ role: "server", from: 2, to: 8, mode: "active", applied: true, reason: "QueueDepth", by: "autoscaler" }),
    ]);
  });

  it("events: in shadow mode only when the recommendation changes", () => {
    const spec = aSpec({ scaling: { mode: "shadow" } });
    const steps = [64, 64, 80, 80, 16].map((load) => ({ load }));
    const { decisions } = simulate(spec, steps);
    // Back to 2 is a change too: the recommendation no longer asks for more.
    expect(decisions.map((d) => d.events.map((e) => [e.from, e.to, e.applied]))).toEqual([[[2, 8, false]], [], [[2, 10, false]], [], [[2, 2, false]]]);
  });

  it("status report: signals used carry values, units and timestamps", () => {
    const r = decideScaling(input(aSpec(), { t: 30, signals: { server: signals({ running: 30, waiting: 10, at: 29 }) } }));
    expect(role(r.decision)).toEqual({
      name: "server",
      current: 2,
      recommended: 5,
      desired: 5,
      reason: "QueueDepth",
      message: "40 requests (running 30 + waiting 10) ÷ 8 per replica = 5",
      signals: [
        { name: "running", value: 30, unit: "requests", observedAt: at(29) },
        { name: "waiting", value: 10, unit: "requests", observedAt: at(29) },
      ],
      mode: "active",
    });
  });
});

describe("scale to zero", () => {
  const zero = (router: DeploymentSpecInput["router"] = { kind: "builtin" }) =>
    aSpec({ router, scaling: { roles: [{ name: "server", minReplicas: 0, maxReplicas: 4 }] } });

  it.each([
    [3, 1, "RequestsHeld"],
    [0, 0, "Idle"],
  ])("at zero with %d held → %d (%s)", (held, desired, reason) => {
    const r = decideScaling(input(zero(), { held, currentReplicas: { server: 0 } }));
    expect(role(r.decision)).toMatchObject({ current: 0, desired, reason });
    expect(r.decision.actions).toEqual(desired > 0 ? [{ type: "scaleUp", role: "server", from: 0, to: 1 }] : []);
  });

  it("at zero with the held count unread → no decision", () => {
    const r = decideScaling(input(zero(), { currentReplicas: { server: 0 } }));
    expect(role(r.decision).reason).toBe("MetricsMissing");
  });

  it("1 → 0 only after a whole window without load", () => {
    const steps = [{ held: 2 }, { load: 3 }, ...Array.from({ length: 30 }, () => ({ load: 0, held: 0 }))];
    const { decisions, current } = simulate(zero(), steps, { start: { server: 0 } });
    expect(decisions[0]!.actions).toEqual([{ type: "scaleUp", role: "server", from: 0, to: 1 }]);
    const down = decisions.findIndex((d) => d.actions.some((a) => a.type === "scaleDown"));
    // Load 3 at t = 15 recommends 1; zero from t = 30; the 1 leaves the window at t = 315.
    expect(down * 15).toBe(315);
    expect(current[down + 1]).toEqual({ server: 0 });
  });

  it("minReplicas 0 needs the built-in router: otherwise the floor is 1", () => {
    const r = decideScaling(
      input(zero({ kind: "vllm-router" }), { signals: { server: signals({ running: 0 }) }, currentReplicas: { server: 1 } }),
      { roles: { server: { since: at(-1000), history: [] } } },
    );
    expect(role(r.decision)).toMatchObject({ recommended: 0, desired: 1, limitedBy: "MinReplicas" });
  });
});

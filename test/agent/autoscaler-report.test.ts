// The autoscaler's pure edges: pods to read, metrics → the decision's signals, and the decision
// in the API's strict shapes (status.scaling, a shadow deployment.scaled event's data).
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  enginePodsToRead,
  evaluationPeriodMs,
  freeGpusByType,
  rolesAfterActions,
  routerPodsToRead,
  scalingSignalsOf,
  scalingStatusOf,
  shadowEventsOf,
} from "../../src/agent/autoscaler-report.ts";
import { AgentScaledData } from "../../src/domain/cluster.ts";
import { applySpecDefaults, DeploymentStatus, type DeploymentSpecInput, ScalingStatus } from "../../src/domain/deployment-spec.ts";
import { decideScaling, emptyScalingState, type RoleSignals, type ScalingSpec } from "../../src/domain/scaling.ts";
import { aggregated, observed, statusAnswered } from "./support.ts";

const NOW = "2026-01-01T00:00:00.000Z";

function aSpec(scaling: Partial<NonNullable<DeploymentSpecInput["scaling"]>> = {}, replicas = 2) {
  return applySpecDefaults({
    model: { name: "Qwen/Qwen3-8B" },
    engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
    router: { kind: "builtin" },
    roles: [{ name: "main", replicas }],
    scaling: { mode: "shadow", roles: [{ name: "main", minReplicas: 1, maxReplicas: 6 }], algorithm: { type: "queue_depth", targetPerReplica: 2, tolerance: 0 }, ...scaling },
  });
}

const signals = (s: Partial<RoleSignals>): RoleSignals => ({ running: 0, waiting: 0, podCount: 2, observedAt: NOW, missing: [], ...s });
const decide = (spec: ScalingSpec, s: Record<string, RoleSignals | undefined>, held?: number) =>
  decideScaling(
    { now: NOW, spec, signals: s, ...(held !== undefined && { held }), currentReplicas: Object.fromEntries(spec.roles.map((r) => [r.name, r.replicas])), retirementInFlight: false },
    emptyScalingState(),
  ).decision;

function aPod(name: string, o: { ready?: boolean; serving?: boolean; role?: string; ip?: string; terminating?: boolean; restarts?: number } = {}): V1Pod {
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      labels: { "berth.dev/role": o.role ?? "main", "berth.dev/serving": o.serving === false ? "false" : "true" },
      ...(o.terminating && { deletionTimestamp: new Date(NOW) }),
    },
    status: {
      ...(o.ip !== "" && { podIP: o.ip ?? "10.0.0.7" }),
      conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }],
      containerStatuses: [{ name: "engine", image: "x", imageID: "", ready: true, restartCount: o.restarts ?? 0 }],
    },
  };
}

describe("pods to read", () => {
  it("takes ready, serving, live engine pods of the spec's roles, with their engine URL and restarts", () => {
    const pods = [
      aPod("chat-main-r0-m0", { restarts: 2 }),
      aPod("chat-main-r1-m0", { ready: false }),
      aPod("chat-main-r2-m0", { serving: false }),
      aPod("chat-main-r3-m0", { terminating: true }),
      aPod("chat-main-r4-m0", { ip: "" }),
      aPod("chat-old-r0-m0", { role: "old" }),
      aPod("chat-main-r5-m0", { ip: "fd00::5" }),
    ];
    expect(enginePodsToRead(aSpec(), pods, 8000)).toEqual([
      { uid: "uid-chat-main-r0-m0", name: "chat-main-r0-m0", role: "main", engine: "vllm", url: "http://10.0.0.7:8000", restarts: 2 },
      { uid: "uid-chat-main-r5-m0", name: "chat-main-r5-m0", role: "main", engine: "vllm", url: "http://[fd00::5]:8000", restarts: 0 },
    ]);
  });

  it("takes ready router pods with their admin URL", () => {
    expect(routerPodsToRead([aPod("chat-router-a"), aPod("chat-router-b", { ready: false })], 8080)).toEqual([
      { uid: "uid-chat-router-a", name: "chat-router-a", url: "http://10.0.0.7:8080" },
    ]);
  });
});

describe("metrics → the decision's signals", () => {
  const report = (missing: Array<{ name: string; pod?: string; reason: string }>) => ({
    name: "main",
    signals: [
      { name: "requests_running" as const, value: 3, unit: "requests" as const, podCount: 1, observedAt: NOW },
      { name: "requests_waiting" as const, value: 1, unit: "requests" as const, podCount: 1, observedAt: NOW },
    ],
    missing: missing as never,
  });

  it.each([
    ["every pod read", [], []],
    ["a first read leaves gauges standing", [{ name: "requests_per_second", pod: "p1", reason: "first-read" }], []],
    ["an unreachable pod makes the sums missing", [{ name: "requests_running", pod: "p1", reason: "unreachable" }, { name: "requests_waiting", pod: "p1", reason: "unreachable" }], ["running", "waiting"]],
    ["a pod without /metrics makes them missing too", [{ name: "requests_running", pod: "p1", reason: "not-exposed" }], ["running"]],
  ])("%s", (_, missing, expected) => {
    const s = scalingSignalsOf(report(missing), NOW);
    expect([...s.missing].sort()).toEqual(expected);
    expect(s).toMatchObject({ running: 3, waiting: 1, podCount: 1 });
  });

  it("gives no decision for a role whose pod was unreachable, rather than a smaller sum", () => {
    const s = scalingSignalsOf(report([{ name: "requests_running", pod: "p1", reason: "unreachable" }]), NOW);
    const d = decide(aSpec(), { main: s });
    expect(d.roles[0]).toMatchObject({ reason: "MetricsMissing", desired: 2 });
    expect(d.roles[0]!.recommended).toBeUndefined();
  });
});

describe("decision → status.scaling", () => {
  it.each([
    ["a scale-up recommendation", aSpec(), { main: signals({ running: 6, waiting: 4 }) }, undefined],
    ["no decision (metrics missing)", aSpec(), { main: undefined }, undefined],
    ["capped at maxReplicas, active", aSpec({ mode: "active" }), { main: signals({ running: 40, waiting: 40 }) }, undefined],
    ["a role at zero with held requests", aSpec({ roles: [{ name: "main", minReplicas: 0, maxReplicas: 3 }] }, 0), { main: signals({ podCount: 0 }) }, 2],
  ])("%s validates against the strict schema, mode top-level only", (_, spec, s, held) => {
    const decision = decide(spec, s, held);
    const status = scalingStatusOf(decision, NOW);
    expect(ScalingStatus.safeParse(status).error).toBeUndefined();
    expect(status.mode).toBe(spec.scaling!.mode);
    expect(status.lastScaleAt).toBe(NOW);
    for (const role of status.roles) expect(role).not.toHaveProperty("mode");
    const [role] = status.roles;
    expect(role).toMatchObject({ name: "main", current: spec.roles[0]!.replicas, desired: decision.roles[0]!.desired, reason: decision.roles[0]!.reason });
    if (decision.roles[0]!.recommended === undefined) expect(role).not.toHaveProperty("recommended");
  });

  it("carries the recommendation, the bound and the signals used with values and times", () => {
    const status = scalingStatusOf(decide(aSpec({ mode: "active" }), { main: signals({ running: 40, waiting: 40 }) }));
    expect(status.roles[0]).toMatchObject({ recommended: 40, desired: 6, limitedBy: "MaxReplicas" });
    expect(status.roles[0]!.signals).toEqual([
      { name: "running", value: 40, unit: "requests", observedAt: NOW },
      { name: "waiting", value: 40, unit: "requests", observedAt: NOW },
    ]);
    expect(status).not.toHaveProperty("lastScaleAt");
  });
});

describe("decision → shadow event", () => {
  it("is AgentScaledData without applied/by, for shadow only", () => {
    const decision = decide(aSpec(), { main: signals({ running: 6, waiting: 4 }) });
    const events = shadowEventsOf(decision);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ role: "main", from: 2, to: 5, mode: "shadow", reason: "QueueDepth" });
    expect(AgentScaledData.safeParse(events[0]).error).toBeUndefined();
    expect(events[0]).not.toHaveProperty("applied");
    expect(events[0]).not.toHaveProperty("by");
    expect(events[0]!.signals.map((s) => s.name)).toEqual(["running", "waiting"]);
    expect(shadowEventsOf(decide(aSpec({ mode: "active" }), { main: signals({ running: 6, waiting: 4 }) }))).toEqual([]);
  });
});

describe("active writes", () => {
  it("sets each action's target on the stored roles, and nothing when the spec moved", () => {
    const spec = aSpec({ mode: "active" });
    const decision = decide(spec, { main: signals({ running: 6, waiting: 4 }) });
    expect(rolesAfterActions(spec.roles, decision)).toEqual([{ ...spec.roles[0], replicas: 5 }]);
    expect(rolesAfterActions([{ ...spec.roles[0]!, replicas: 3 }], decision)).toBeUndefined();
    expect(rolesAfterActions(spec.roles, decide(spec, { main: signals({ running: 2, waiting: 2 }) }))).toBeUndefined();
  });
});

describe("inventory and cadence", () => {
  it("sums free GPUs per type; unknown before the first heartbeat", () => {
    expect(freeGpusByType(undefined)).toBeUndefined();
    const node = (name: string, gpuFree: number, gpuType?: string) => ({ name, ...(gpuType && { gpuType }), gpuCapacity: 8, gpuAllocatable: 8, gpuFree });
    expect(freeGpusByType({ nodes: [node("a", 3, "nvidia-h100-80gb"), node("b", 2, "nvidia-h100-80gb"), node("c", 1)] })).toEqual({ "nvidia-h100-80gb": 5, "": 1 });
  });

  it("evaluates every second while a role that may rest at zero is at zero", () => {
    expect(evaluationPeriodMs(aSpec({ intervalSeconds: 7 }))).toBe(7_000);
    expect(evaluationPeriodMs(aSpec({ intervalSeconds: 7, roles: [{ name: "main", minReplicas: 0, maxReplicas: 3 }] }, 0))).toBe(1_000);
    expect(evaluationPeriodMs(aSpec({ intervalSeconds: 7, roles: [{ name: "main", minReplicas: 0, maxReplicas: 3 }] }, 1))).toBe(7_000);
  });
});

describe("status through the reconcile pass", () => {
  it("puts status.scaling and the Scaling condition into the one status, valid against the strict schema", () => {
    const input = aggregated(2);
    const decision = decide(aSpec({ mode: "active" }), { main: signals({ running: 6, waiting: 4 }) });
    const scaling = { status: scalingStatusOf(decision), condition: decision.condition! };
    const when = new Date(NOW);
    const status = statusAnswered({ render: input, deleting: false, observed: observed(input, ["ready", "ready"]), now: when, scaling });
    expect(DeploymentStatus.safeParse(status).error).toBeUndefined();
    expect(status.scaling).toEqual(scaling.status);
    expect(status.conditions?.find((c) => c.type === "Scaling")).toEqual({
      type: "Scaling",
      status: "True",
      reason: "ScaledUp",
      message: "main 2 → 5",
      observedGeneration: 1,
      lastTransitionTime: NOW,
    });
    const off = statusAnswered({ render: input, deleting: false, observed: observed(input, ["ready", "ready"]), now: when });
    expect(off).not.toHaveProperty("scaling");
    expect(off.conditions?.some((c) => c.type === "Scaling")).toBe(false);
  });
});

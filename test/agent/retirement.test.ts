// planRetirement (pure): each step's exit condition, budgets as limits measured from the recorded
// step start, two consecutive zero reads, an unreadable engine or router never counting as 0, and
// aborts (capacity kept) only before deletion.
import { describe, expect, it } from "vitest";
import {
  type EngineLoadReading,
  planRetirement,
  paramsOf,
  READ_GAP_MS,
  retiringWanted,
  type RetirementObserved,
  type RetirementRecord,
  type RouterInFlightReading,
  stepStartedAt,
  stepsAfter,
} from "../../src/agent/retirement.ts";
import { disaggregated, groupPods, observedPod, aggregated, tp16 } from "./support.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const input = aggregated(2);
const pod = observedPod(input, 2, "ready");
const terminating = observedPod(input, 2, "terminating");

const record = (step: string, startedSecondsAgo = 0, now = T0): RetirementRecord => ({
  id: "op_1",
  role: "main",
  replica: 2,
  phase: "Running",
  step,
  steps:
    step === "Withdrawing"
      ? [{ name: step, startedAt: new Date(now - startedSecondsAgo * 1000).toISOString() }]
      : [
          { name: "Withdrawing", startedAt: new Date(now - 600_000).toISOString(), finishedAt: new Date(now - startedSecondsAgo * 1000).toISOString() },
          { name: step, startedAt: new Date(now - startedSecondsAgo * 1000).toISOString() },
        ],
  params: { withdrawSeconds: 30, drainSeconds: 240, settleSeconds: 30, podUids: ["uid-2"], podNames: ["chat-main-r2-m0"] },
});

const base = (over: Partial<RetirementObserved> = {}): RetirementObserved => ({
  pods: [pod],
  wanted: false,
  builtinRouter: true,
  routers: { ready: 2, acked: 2 },
  ...over,
});

const routersZero: RouterInFlightReading[] = [
  { router: "chat-router-a", inFlight: 0 },
  { router: "chat-router-b", inFlight: 0 },
];
const engineZero: EngineLoadReading[] = [{ pod: "chat-main-r2-m0", load: 0 }];

describe("planRetirement", () => {
  it("measures a step's budget from its recorded startedAt, not from a restart", () => {
    expect(stepStartedAt(record("Draining", 100))).toBe(T0 - 100_000);
    expect(stepStartedAt(record("Withdrawing", 5))).toBe(T0 - 5_000);
  });

  it.each<[string, RetirementObserved, string, string?]>([
    ["every Ready router pod confirmed → Draining", base(), "advance:Draining"],
    ["no builtin router → Draining at once", base({ builtinRouter: false, routers: { ready: 0, acked: 0 } }), "advance:Draining"],
    ["no Ready router pod → Draining (nobody routes to it)", base({ routers: { ready: 0, acked: 0 } }), "advance:Draining"],
    ["1 of 2 confirmed, within budget → wait", base({ routers: { ready: 2, acked: 1 } }), "wait"],
    ["the replica is wanted again → Aborted, kept", base({ wanted: true }), "abort", "ReplicaWanted"],
    ["its pods are gone already → Settling", base({ pods: [terminating] }), "advance:Settling"],
  ])("Withdrawing: %s", (_name, observed, expected, reason) => {
    const decision = planRetirement(record("Withdrawing", 5), observed, [], [], T0);
    expect(decision.kind === "advance" ? `advance:${decision.to}` : decision.kind).toBe(expected);
    if (reason) expect(decision).toMatchObject({ reason });
  });

  it("Withdrawing past its budget without every confirmation → Aborted, the instance keeps its capacity", () => {
    const decision = planRetirement(record("Withdrawing", 31), base({ routers: { ready: 2, acked: 1 } }), [], [], T0);
    expect(decision).toMatchObject({ kind: "abort", reason: "WithdrawBudgetExceeded" });
    expect((decision as { message: string }).message).toMatch(/keeps its capacity/);
  });

  it("a budget is a limit, not a wait: a condition that holds past the budget still advances", () => {
    expect(planRetirement(record("Withdrawing", 600), base(), [], [], T0)).toMatchObject({ kind: "advance", to: "Draining" });
  });

  describe("Draining", () => {
    const drain = (observed: RetirementObserved, routers: RouterInFlightReading[], engines: EngineLoadReading[], secondsIn = 10, now = T0) =>
      planRetirement(record("Draining", secondsIn, now), observed, routers, engines, now);

    it("needs two consecutive zero reads READ_GAP_MS apart", () => {
      const first = drain(base(), routersZero, engineZero);
      expect(first).toMatchObject({ kind: "wait", firstZeroAt: T0 });
      // A second pass too soon is the same read.
      expect(drain(base({ firstZeroAt: T0 }), routersZero, engineZero, 10, T0 + 200)).toMatchObject({ kind: "wait", firstZeroAt: T0 });
      expect(drain(base({ firstZeroAt: T0 }), routersZero, engineZero, 10, T0 + READ_GAP_MS)).toMatchObject({ kind: "advance", to: "Deleting" });
    });

    it.each<[string, RouterInFlightReading[], EngineLoadReading[], RegExp]>([
      ["a request in flight at one router", [{ router: "chat-router-a", inFlight: 0 }, { router: "chat-router-b", inFlight: 1 }], engineZero, /1 request\(s\) in flight at the router/],
      ["running + waiting on the engine", routersZero, [{ pod: "chat-main-r2-m0", load: 2 }], /2 request\(s\) running or waiting/],
      ["an unreachable engine is not 0", routersZero, [{ pod: "chat-main-r2-m0", error: "connect ECONNREFUSED" }], /engine chat-main-r2-m0 unreadable/],
      ["an engine not read at all is not 0", routersZero, [], /engine chat-main-r2-m0 unreadable/],
      ["a router pod that did not answer is not 0", [{ router: "chat-router-a", inFlight: 0 }, { router: "chat-router-b", error: "timeout" }], engineZero, /router chat-router-b unreadable/],
      ["fewer router answers than Ready router pods", [{ router: "chat-router-a", inFlight: 0 }], engineZero, /1\/2 router pods answered/],
    ])("not drained: %s (and a non-zero read restarts the run of zero reads)", (_name, routers, engines, why) => {
      const decision = drain(base({ firstZeroAt: T0 - 5_000 }), routers, engines);
      expect(decision.kind).toBe("wait");
      expect(decision).not.toHaveProperty("firstZeroAt");
      expect((decision as { message: string }).message).toMatch(why);
    });

    it("a multi-host instance (size 2): only the serving leader is read; the headless follower is never 'unreadable'", () => {
      const group = tp16(3);
      const members = groupPods(group, 2, ["ready", "ready"]);
      const observed = base({ pods: members, firstZeroAt: T0 - 2_000 });
      const leaderZero = [{ pod: "chat-main-r2-m0", load: 0 }];
      expect(drain(observed, routersZero, leaderZero)).toMatchObject({ kind: "advance", to: "Deleting" });
      const busy = drain(observed, routersZero, [{ pod: "chat-main-r2-m0", load: 1 }]);
      expect(busy).toMatchObject({ kind: "wait" });
      expect((busy as { message: string }).message).not.toMatch(/m1/);
      // The leader unread is still "not drained", never 0.
      expect((drain(observed, routersZero, []) as { message: string }).message).toMatch(/engine chat-main-r2-m0 unreadable/);
    });

    it("a decode replica waits for the router's in-flight count on its endpoint (its decode legs, KV transfers included)", () => {
      const pd = disaggregated("vllm", 1, 1);
      const decode = observedPod(pd, 1, "ready", "decode");
      const rec = { ...record("Draining", 10), role: "decode", replica: 1, params: { ...record("Draining").params, podUids: [decode.metadata!.uid!], podNames: [decode.metadata!.name!] } };
      const observed = base({ pods: [decode], routers: { ready: 1, acked: 1 }, firstZeroAt: T0 - 2_000 });
      const engines = [{ pod: decode.metadata!.name!, load: 0 }];
      expect(planRetirement(rec, observed, [{ router: "pd-router-a", inFlight: 1 }], engines, T0)).toMatchObject({ kind: "wait" });
      expect(planRetirement(rec, observed, [{ router: "pd-router-a", inFlight: 0 }], engines, T0)).toMatchObject({ kind: "advance", to: "Deleting" });
    });

    it("without a builtin router only the engine counts", () => {
      expect(drain(base({ builtinRouter: false, routers: { ready: 0, acked: 0 }, firstZeroAt: T0 - 1_500 }), [], engineZero)).toMatchObject({ kind: "advance", to: "Deleting" });
    });

    it.each<[string, RouterInFlightReading[], EngineLoadReading[]]>([
      ["still busy", [{ router: "chat-router-a", inFlight: 3 }, { router: "chat-router-b", inFlight: 0 }], engineZero],
      ["engine unreachable", routersZero, [{ pod: "chat-main-r2-m0", error: "timeout" }]],
      ["only one zero read so far", routersZero, engineZero],
    ])("past drainSeconds → Aborted with the capacity kept (%s)", (_name, routers, engines) => {
      const decision = drain(base(), routers, engines, 241);
      expect(decision).toMatchObject({ kind: "abort", reason: "DrainBudgetExceeded" });
      expect((decision as { message: string }).message).toMatch(/eligible again and keeps its capacity/);
    });

    it("two zero reads complete the step even past the budget (limits, not waits)", () => {
      expect(drain(base({ firstZeroAt: T0 - 1_000 }), routersZero, engineZero, 241)).toMatchObject({ kind: "advance", to: "Deleting" });
    });

    it("the replica wanted again aborts the drain", () => {
      expect(drain(base({ wanted: true }), routersZero, engineZero)).toMatchObject({ kind: "abort", reason: "ReplicaWanted" });
    });
  });

  it.each<[string, RetirementObserved, string]>([
    ["deletes the live pods by UID", base(), "delete"],
    ["once every pod is terminating → Settling", base({ pods: [terminating] }), "advance:Settling"],
    ["deletion is not aborted by a wanted replica (the pods go; plan.ts recreates the index)", base({ wanted: true, pods: [terminating] }), "advance:Settling"],
  ])("Deleting: %s", (_name, observed, expected) => {
    const decision = planRetirement(record("Deleting", 1), observed, [], [], T0);
    expect(decision.kind === "advance" ? `advance:${decision.to}` : decision.kind).toBe(expected);
    if (decision.kind === "delete") expect(decision.pods).toEqual([{ name: "chat-main-r2-m0", namespace: "berth-team", uid: "uid-2" }]);
  });

  it.each<[string, RetirementObserved, number, string]>([
    ["pods gone and GPUs free → Succeeded", base({ pods: [], gpuHolders: 0 }), 1, "succeed"],
    ["a pod still terminating → wait", base({ pods: [terminating] }), 1, "wait"],
    ["gone from the cache but a fresh list still counts its GPUs → wait", base({ pods: [], gpuHolders: 1 }), 1, "wait"],
    ["not settled within settleSeconds → Failed (deleted: no capacity left to keep)", base({ pods: [terminating] }), 31, "fail"],
  ])("Settling: %s", (_name, observed, secondsIn, expected) => {
    expect(planRetirement(record("Settling", secondsIn), observed, [], [], T0).kind).toBe(expected);
  });

  it("stepsAfter closes the open step and opens the next at the same instant", () => {
    const now = new Date(T0);
    const steps = stepsAfter(record("Draining", 10), "Deleting", now);
    expect(steps.map((s) => [s.name, s.finishedAt !== undefined])).toEqual([
      ["Withdrawing", true],
      ["Draining", true],
      ["Deleting", false],
    ]);
    expect(steps[1]!.finishedAt).toBe(now.toISOString());
    expect(steps[2]!.startedAt).toBe(now.toISOString());
  });
});

describe("retiringWanted: a rollout's stale instance is below replicas yet leaves", () => {
  it.each<[string, Parameters<typeof retiringWanted>, boolean]>([
    ["scale-down: above replicas is not wanted", ["scale-down", 2, 2, true], false],
    ["scale-down: replicas grew back past it", ["scale-down", 2, 3, true], true],
    ["rollout: a stale instance below replicas still leaves", ["rollout", 0, 1, false], false],
    ["rollout: back at the current revision (the spec went back) it is wanted", ["rollout", 0, 1, true], true],
    ["rollout: a stale surge instance above replicas leaves", ["rollout", 1, 1, true], false],
  ])("%s", (_name, args, expected) => {
    expect(retiringWanted(...args)).toBe(expected);
  });

  it("records without a reason read as a scale-down; a rollout's abort message says why", () => {
    expect(paramsOf(record("Withdrawing")).reason).toBe("scale-down");
    const rollout = { ...record("Draining"), params: { ...record("Draining").params, reason: "rollout" } };
    expect(paramsOf(rollout).reason).toBe("rollout");
    expect(planRetirement(rollout, base({ wanted: true }), routersZero, engineZero, T0)).toMatchObject({
      kind: "abort",
      reason: "ReplicaWanted",
      message: "main r2 is wanted again (it runs the current revision again); it keeps serving",
    });
  });
});

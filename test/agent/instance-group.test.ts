// Instance groups (pure): a multi-host instance judged, recreated and placed as one unit.
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { renderInstancePods, specHashOf } from "../../k8s/render/index.ts";
import type { Inventory } from "../../src/domain/cluster.ts";
import {
  groupFits,
  judgeGroup,
  memberFailure,
  nextPauses,
  placementHold,
  planGroup,
  planGroups,
  readyGroups,
  servesHttp,
} from "../../src/agent/instance-group.ts";
import { aggregated, groupPods, type MemberState, memberPod, tp16 } from "./support.ts";

const node = (name: string, gpuFree: number, gpuType = "nvidia-h100-80gb") => ({ name, gpuType, gpuCapacity: 8, gpuAllocatable: 8, gpuFree });

describe("judgeGroup", () => {
  const input = tp16();
  const role = input.deployment.spec.roles[0]!;
  const hash = specHashOf(input.deployment.spec, "main", input.options);
  it.each<[string, Array<MemberState | null>, boolean, boolean, string | undefined, number | undefined]>([
    ["both members Ready", ["ready", "ready"], true, true, undefined, undefined],
    ["only the leader observed", ["ready", null], false, false, "MemberMissing", 1],
    ["the follower starting", ["ready", "starting"], false, true, "MemberNotReady", 1],
    ["the follower terminating", ["ready", "terminating"], false, true, "MemberTerminating", 1],
    ["the follower's pod Failed", ["ready", "failed"], false, true, "MemberFailed", 1],
    ["the follower crash-looping", ["ready", "crashloop"], false, true, "MemberFailed", 1],
    ["the follower restarted and Ready again", ["ready", "restarted"], false, true, "MemberFailed", 1],
    ["the follower cannot be placed", ["starting", "unschedulable"], false, true, "MemberNotReady", 0],
    ["the leader missing", [null, "ready"], false, false, "MemberMissing", 0],
    ["mixed revisions", ["ready", "stale"], false, false, "MemberStale", 1],
    ["a whole group of the old revision serves, not updated", ["stale", "stale"], true, false, undefined, undefined],
  ])("%s", (_name, states, ready, updated, reason, member) => {
    const verdict = judgeGroup(input, role, 0, groupPods(input, 0, states), hash);
    expect(verdict.ready).toBe(ready);
    expect(verdict.updated).toBe(updated);
    expect(verdict.problem?.reason).toBe(reason);
    expect(verdict.problem?.member).toBe(member);
    if (verdict.problem) expect(verdict.problem.message).toContain(`chat-main-r0-m${member}`);
  });

  it("a single-pod instance that restarted and is Ready again is ready (only a group loses its collective)", () => {
    const single = aggregated(1);
    const pod = structuredClone(renderInstancePods(single, "main", 0)[0]!);
    pod.status = {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [{ name: "engine", image: "x", imageID: "", ready: true, restartCount: 1, state: { running: {} } }],
    };
    const verdict = judgeGroup(single, single.deployment.spec.roles[0]!, 0, [pod], specHashOf(single.deployment.spec, "main", single.options));
    expect(verdict).toEqual({ ready: true, updated: true });
  });

  it("memberFailure names why", () => {
    expect(memberFailure(memberPod(input, 0, 1, "restarted"))).toBe("container engine restarted 1× (exit 137)");
    expect(memberFailure(memberPod(input, 0, 1, "restarted"), false)).toBeUndefined();
    expect(memberFailure(memberPod(input, 0, 1, "ready"))).toBeUndefined();
  });

  it("the render marks which members serve HTTP: vLLM TP over hosts and SGLang multi-node, the leader only", () => {
    for (const engine of ["vllm", "sglang"] as const) {
      const pods = renderInstancePods(tp16(1, engine), "main", 0);
      expect(pods.map(servesHttp), engine).toEqual([true, false]);
    }
  });
});

describe("planGroup: recreated as a unit", () => {
  const input = tp16();
  const role = input.deployment.spec.roles[0]!;
  const names = (pods: V1Pod[]) => pods.map((p) => p.metadata!.name);
  it.each<[string, Array<MemberState | null>, string[], boolean]>([
    ["intact group: nothing", ["ready", "ready"], [], false],
    ["starting group: nothing", ["starting", "starting"], [], false],
    ["not started, a member missing: it is simply created", ["pending", null], [], false],
    ["started, the follower gone: the leader goes too", ["ready", null], ["chat-main-r0-m0"], true],
    ["started, the follower terminating: the leader goes, nothing is created", ["ready", "terminating"], ["chat-main-r0-m0"], true],
    ["the follower's pod Failed: every live member goes", ["ready", "failed"], ["chat-main-r0-m0", "chat-main-r0-m1"], true],
    ["the leader restarted: every live member goes", ["restarted", "ready"], ["chat-main-r0-m0", "chat-main-r0-m1"], true],
    ["every member terminating: wait, create nothing", ["terminating", "terminating"], [], true],
  ])("%s", (_name, states, deleted, hold) => {
    const plan = planGroup(input, role, 0, groupPods(input, 0, states), undefined);
    expect(names(plan.delete)).toEqual(deleted);
    expect(plan.hold).toBe(hold);
    if (deleted.length > 0) expect(plan.why).toMatch(/^main r0: member m\d \(chat-main-r0-m\d\) (was lost|failed: .+); the group is recreated$/);
  });

  it("a single-pod role and an elastic role are not recreated as groups", () => {
    const single = aggregated(1);
    expect(planGroup(single, single.deployment.spec.roles[0]!, 0, [], { nodes: [] })).toEqual({ delete: [], hold: false });
  });
});

describe("all-or-nothing placement", () => {
  const input = tp16();
  const role = input.deployment.spec.roles[0]!;
  it.each<[string, Inventory["nodes"], boolean, number]>([
    ["two free 8-GPU nodes", [node("gpu-0", 8), node("gpu-1", 8)], true, 16],
    ["one free node", [node("gpu-0", 8), node("gpu-1", 0)], false, 8],
    ["16 free but fragmented (6 + 6 + 4)", [node("a", 6), node("b", 6), node("c", 4)], false, 16],
    ["the free nodes are of another type", [node("a", 8, "nvidia-l4-24gb"), node("b", 8, "nvidia-l4-24gb")], false, 0],
  ])("fits: %s", (_name, nodes, fits, free) => {
    expect(groupFits(role, { nodes })).toEqual({ fits, needed: 16, free });
  });

  it("the group's own pods count as free: deleting them frees their GPUs", () => {
    const own = groupPods(input, 0, ["starting", "unschedulable"]); // m0 on gpu-0
    expect(groupFits(role, { nodes: [node("gpu-0", 0), node("gpu-1", 8)] }, own)?.fits).toBe(true);
    expect(groupFits(role, { nodes: [node("gpu-0", 0), node("gpu-1", 4)] }, own)?.fits).toBe(false);
  });

  it("a refused member with no room for the whole group: every member not Ready is deleted and the group held", () => {
    const pods = groupPods(input, 0, ["starting", "unschedulable"]);
    const hold = placementHold(input, role, 0, pods, { nodes: [node("gpu-0", 0), node("gpu-1", 2)] });
    expect(hold.delete.map((p) => p.metadata!.name)).toEqual(["chat-main-r0-m0", "chat-main-r0-m1"]);
    expect(hold.hold).toBe(true);
    expect(hold.message).toBe(
      "chat-main-r0 needs 16 nvidia-h100-80gb GPUs (2 × 8) placed together; 10 free: the group holds no GPUs until they are",
    );
  });

  it.each<[string, Array<MemberState | null>, Inventory | undefined, number, boolean]>([
    ["refused, but the inventory has room (stale or another constraint): keep waiting, no flapping", ["starting", "unschedulable"], { nodes: [node("gpu-0", 0), node("gpu-1", 8)] }, 0, false],
    ["no inventory yet: nothing is held", ["starting", "unschedulable"], undefined, 0, false],
    ["no member and no room: create nothing", [null, null], { nodes: [node("a", 8), node("b", 4)] }, 0, true],
    ["no member and room: create", [null, null], { nodes: [node("a", 8), node("b", 8)] }, 0, false],
    ["every member placed and none refused: never held", ["ready", "ready"], { nodes: [node("gpu-0", 0), node("gpu-1", 0)] }, 0, false],
  ])("%s", (_name, states, inventory, deletes, hold) => {
    const result = placementHold(input, role, 0, groupPods(input, 0, states), inventory);
    expect(result.delete).toHaveLength(deletes);
    expect(result.hold).toBe(hold);
  });

  it("is level-triggered: the same inventory can never both create and delete a group", () => {
    for (const free of [0, 4, 8]) {
      const inventory = { nodes: [node("gpu-0", 8), node("gpu-1", free)] };
      const creates = !placementHold(input, role, 0, [], inventory).hold;
      // After the create the scheduler binds m0 (the inventory, crediting it, is the same view) and refuses m1.
      const deletes = placementHold(input, role, 0, groupPods(input, 0, ["starting", "unschedulable"]), { nodes: [node("gpu-0", 0), node("gpu-1", free)] }).delete.length > 0;
      expect(creates && deletes, `gpu-1 has ${free} free`).toBe(false);
    }
  });
});

describe("placement pauses: a freed group is not created again at once", () => {
  const input = tp16(2);
  const role = input.deployment.spec.roles[0]!;
  const T = Date.parse("2026-01-01T00:00:00Z");
  const roomy = { nodes: [node("a", 8), node("b", 8), node("c", 8), node("d", 8)] };
  it("each release doubles the pause (30 s, 60 s, … at most 10 min); a group seen whole and ready ends it", () => {
    let pauses = nextPauses(new Map(), [{ role: "main", replica: 1 }, { role: "main", replica: 1 }], new Set(), T);
    expect(pauses.get("main/1")).toEqual({ releases: 1, until: T + 30_000 });
    pauses = nextPauses(pauses, [{ role: "main", replica: 1 }], new Set(), T);
    expect(pauses.get("main/1")).toEqual({ releases: 2, until: T + 60_000 });
    for (let i = 0; i < 8; i++) pauses = nextPauses(pauses, [{ role: "main", replica: 1 }], new Set(), T);
    expect(pauses.get("main/1")!.until).toBe(T + 600_000);
    expect(nextPauses(pauses, [], new Set(["main/1"]), T).size).toBe(0);
  });

  it("while paused, a group with no pod is held even with room, and says until when; after the pause it is created", () => {
    const pauses = new Map([["main/1", { releases: 2, until: T + 60_000 }]]);
    const byReplica = new Map([[0, groupPods(input, 0, ["ready", "ready"])]]);
    const during = planGroups(input, role, byReplica, 2, roomy, pauses, T + 1_000)(1);
    expect(during).toEqual({
      delete: [],
      hold: true,
      insufficient: "chat-main-r1 was freed 2× for lack of GPUs to place it whole; it is tried again at 2026-01-01T00:01:00.000Z",
    });
    expect(planGroups(input, role, byReplica, 2, roomy, pauses, T + 60_000)(1)).toEqual({ delete: [], hold: false });
  });

  it("readyGroups names the groups observed whole and ready", () => {
    const pods = [...groupPods(input, 0, ["ready", "ready"]), ...groupPods(input, 1, ["ready", null])];
    expect([...readyGroups(input, pods)]).toEqual(["main/0"]);
  });
});

describe("planGroups: the room of one pass", () => {
  const input = tp16(2);
  const role = input.deployment.spec.roles[0]!;
  const T = Date.parse("2026-01-01T00:00:10Z");
  const twoFree = { nodes: [node("a", 8), node("b", 8), node("c", 0), node("d", 0)] };
  const boundAt = (pods: V1Pod[], at: number) =>
    pods.map((p) => ({ ...p, status: { ...p.status, conditions: [...(p.status!.conditions ?? []), { type: "PodScheduled", status: "True", lastTransitionTime: new Date(at) }] } }));
  it.each<[string, number, boolean]>([
    ["r0 bound after the inventory's pod list was read: not in it yet, r1 waits", T + 500, true],
    ["r0 bound before it: counted in it, r1 fits what is left", T - 5_000, false],
  ])("%s", (_name, at, held) => {
    const r0 = boundAt(groupPods(input, 0, ["starting", "starting"]), at);
    const inventory = at > T ? twoFree : { nodes: [node("a", 0), node("b", 0), node("c", 8), node("d", 8)] };
    expect(planGroups(input, role, new Map([[0, r0]]), 2, inventory, new Map(), T, T)(1).hold).toBe(held);
  });
});

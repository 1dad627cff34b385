// planDeployment (pure): which objects to create, which replicas to delete, and the plan's side of a
// rollout (surge instances created and kept; stale ones leave through the protocol, see rollout.test.ts).
import { describe, expect, it } from "vitest";
import { emptyObserved } from "../../src/agent/observe.ts";
import { type Action, isRetirement, planDeployment, retirementCandidates } from "../../src/agent/plan.ts";
import type { Inventory } from "../../src/domain/cluster.ts";
import { aggregated, disaggregated, groupPods, type MemberState, merged, observed, type PodState, tp16, withRouter } from "./support.ts";

/** The heartbeat inventory of the one node the observed pods run on. */
const freeGpus = (gpuFree: number): Inventory => ({
  nodes: [{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree }],
});

/** `observed` with replica `replica`'s pod no longer Ready (an instance that never served). */
function notReady(cluster: ReturnType<typeof observed>, replica: number) {
  const pod = cluster.pods.find((p) => p.metadata!.labels!["berth.dev/replica"] === String(replica))!;
  pod.status!.conditions = [{ type: "Ready", status: "False" }];
  return cluster;
}

/** A compact view of the actions: `create r1`, `delete r2 (surplus)`, `service chat-main`, `namespace`. */
function summary(actions: Action[]): string[] {
  return actions.map((action): string => {
    switch (action.kind) {
      case "applyNamespace":
        return `namespace ${action.object.metadata!.name}`;
      case "applyService":
        return `service ${action.object.metadata!.name}`;
      case "applyClaim":
        return `claim ${action.object.metadata!.name}`;
      case "applyNetworkPolicy":
        return `netpol ${action.object.metadata!.name}`;
      case "createPod":
        return `create ${action.object.metadata!.name}`;
      case "deletePod":
        return `delete ${action.name} ${action.uid} (${action.reason})`;
      case "deleteService":
        return `delete service ${action.name}`;
      case "applyRouterObject":
        return `apply ${action.object.kind} ${action.object.metadata!.name}`;
      case "createTokenSecret":
        return `create secret ${action.name} (key ${action.key})`;
      case "deleteObject":
        return `delete ${action.ref.kind} ${action.ref.name} ${action.ref.uid}`;
    }
  });
}

describe("planDeployment", () => {
  it("creates the namespace, its policies and the deployment's (before any pod), role Service and every instance on an empty cluster", () => {
    const input = aggregated(2);
    expect(summary(planDeployment({ render: input, deleting: false, observed: observed(input, [], { namespace: false }) }))).toEqual([
      "namespace berth-team",
      "netpol berth-default-deny",
      "netpol berth-allow-dns",
      "netpol chat-engines",
      "service chat-main",
      "create chat-main-r0-m0",
      "create chat-main-r1-m0",
    ]);
  });

  it.each<[string, number, Array<PodState | null>, string[]]>([
    ["converged", 2, ["ready", "ready"], []],
    ["still starting: nothing more to do", 2, ["ready", "starting"], []],
    ["scale up creates only the missing index", 3, ["ready", "ready"], ["create chat-main-r2-m0"]],
    ["a lost replica in the middle is recreated", 3, ["ready", null, "ready"], ["create chat-main-r1-m0"]],
    // A Ready surplus instance retires through the protocol (retirementCandidates), never directly.
    ["scale down deletes no Ready instance directly", 1, ["ready", "ready", "ready"], []],
    [
      "a surplus instance that never became Ready is deleted directly, highest first, by UID",
      1,
      ["ready", "starting", "unschedulable"],
      ["delete chat-main-r2-m0 uid-2 (surplus)", "delete chat-main-r1-m0 uid-1 (surplus)"],
    ],
    ["a terminating surplus pod is not deleted twice", 1, ["ready", "terminating"], []],
    ["a terminating pod is recreated only once it is gone", 2, ["ready", "terminating"], []],
    ["scale to zero retires too", 0, ["ready"], []],
    ["a stale instance starting at a new revision is left alone", 3, ["stale", "starting", "stale"], []],
    ["a stale role waits for the inventory before it surges", 3, ["stale", "stale", "stale"], []],
    ["a missing instance is recreated while stale ones stay", 3, ["stale", null, "stale"], ["create chat-main-r1-m0"]],
  ])("%s", (_name, replicas, states, expected) => {
    const input = aggregated(replicas);
    expect(summary(planDeployment({ render: input, deleting: false, observed: observed(input, states) }))).toEqual(expected);
  });

  it("re-applies a namespace that lacks a Pod Security label, not one whose value an admin changed; a missing or drifted policy is applied again", () => {
    const input = aggregated(1);
    const steady = observed(input, ["ready"]);
    expect(summary(planDeployment({ render: input, deleting: false, observed: steady }))).toEqual([]);
    const { ["pod-security.kubernetes.io/enforce"]: _dropped, ...unlabelled } = steady.namespaceLabels;
    expect(summary(planDeployment({ render: input, deleting: false, observed: { ...steady, namespaceLabels: unlabelled } }))).toEqual(["namespace berth-team"]);
    const privileged = { ...steady.namespaceLabels, "pod-security.kubernetes.io/enforce": "privileged" };
    expect(summary(planDeployment({ render: input, deleting: false, observed: { ...steady, namespaceLabels: privileged } }))).toEqual([]);
    const drifted = steady.networkPolicies.map((p) => ({ ...p, metadata: { ...p.metadata!, labels: { ...p.metadata!.labels!, "berth.dev/spec-hash": "0000000000000000" } } }));
    expect(summary(planDeployment({ render: input, deleting: false, observed: { ...steady, networkPolicies: drifted, namespacePolicies: ["berth-allow-dns"] } }))).toEqual([
      "netpol berth-default-deny",
      "netpol chat-engines",
    ]);
  });

  it("deleting removes every pod (highest index first), Service and the deployment's policy, by UID; the namespace's policies stay", () => {
    const input = aggregated(2);
    expect(summary(planDeployment({ render: input, deleting: true, observed: observed(input, ["ready", "terminating", "ready"]) }))).toEqual([
      "delete chat-main-r2-m0 uid-2 (deleting)",
      "delete chat-main-r0-m0 uid-0 (deleting)",
      "delete service chat-main",
      "delete NetworkPolicy chat-engines uid-netpol-chat-engines",
    ]);
  });

  it("deleting with nothing left plans nothing", () => {
    const input = aggregated(2);
    expect(planDeployment({ render: input, deleting: true, observed: emptyObserved(true) })).toEqual([]);
  });
});

describe("planDeployment during a rollout (surge 1, unavailable 0)", () => {
  it.each<[string, number, Array<PodState | null>, number, string[], string[]]>([
    ["the surge is created at the first free index", 3, ["stale", "stale", "stale"], 8, ["create chat-main-r3-m0"], []],
    ["Ready stale instances never go by a plain delete", 1, ["stale", "ready"], 8, [], ["main r0 (rollout)"]],
    ["a starting surge instance is kept, not deleted as surplus", 1, ["stale", "starting"], 8, [], []],
    ["while the replaced r0 starts, the Ready surge keeps serving", 1, ["starting", "ready"], 8, [], []],
    ["once r0 is Ready the surge retires as a scale-down", 1, ["ready", "ready"], 8, [], ["main r1 (scale-down)"]],
    ["no room: no surge, the stale instance retires first", 1, ["stale"], 0, [], ["main r0 (rollout)"]],
    ["no room: a surge waiting for a node is deleted directly", 1, ["stale", "unschedulable"], 0, ["delete chat-main-r1-m0 uid-1 (surplus)"], ["main r0 (rollout)"]],
    ["the spec changed again: the stale surge retires first", 1, ["stale", "stale"], 8, [], ["main r1 (rollout)"]],
  ])("%s", (_name, replicas, states, free, actions, candidates) => {
    const input = aggregated(replicas);
    const cluster = observed(input, states);
    expect(summary(planDeployment({ render: input, deleting: false, observed: cluster, inventory: freeGpus(free) }))).toEqual(actions);
    expect(retirementCandidates(input, cluster, freeGpus(free)).map((c) => `${c.role} r${c.replica} (${c.reason})`)).toEqual(candidates);
  });

  it("a stale instance that never became Ready is deleted directly, and is no retirement candidate", () => {
    const input = aggregated(2);
    const cluster = notReady(observed(input, ["stale", "stale"]), 1);
    expect(summary(planDeployment({ render: input, deleting: false, observed: cluster, inventory: freeGpus(8) }))).toEqual([
      "create chat-main-r2-m0",
      "delete chat-main-r1-m0 uid-1 (stale)",
    ]);
    expect(retirementCandidates(input, cluster, freeGpus(8))).toEqual([]);
  });

  it("changing only the rollout strategy rolls nothing", () => {
    const input = aggregated(2);
    const cluster = observed(input, ["ready", "ready"]);
    input.deployment.spec.roles[0]!.rollout = { maxSurge: 0, maxUnavailable: 1 };
    expect(planDeployment({ render: input, deleting: false, observed: cluster, inventory: freeGpus(8) })).toEqual([]);
  });
});

describe("planDeployment with a router", () => {
  const routed = (replicas: number, kind: "builtin" | "vllm-router" = "builtin") =>
    aggregated(replicas, { router: { kind, policy: "least_load" } });

  it("applies the token Secret and every router object when none exists, dependencies before the Deployment", () => {
    const input = routed(1);
    expect(summary(planDeployment({ render: input, deleting: false, observed: observed(input, ["ready"]) }))).toEqual([
      "create secret chat-router-admin (key token)",
      "apply ConfigMap chat-router",
      "apply Service chat",
      "apply Deployment chat-router",
    ]);
  });

  it("external routers get their discovery ServiceAccount, Role and RoleBinding, and no token Secret", () => {
    const input = routed(1, "vllm-router");
    expect(summary(planDeployment({ render: input, deleting: false, observed: observed(input, ["ready"]) }))).toEqual([
      "apply ConfigMap chat-router",
      "apply ServiceAccount chat-router",
      "apply Role chat-router",
      "apply RoleBinding chat-router",
      "apply Service chat",
      "apply Deployment chat-router",
    ]);
  });

  it.each<[string, Parameters<typeof withRouter>[2], (input: ReturnType<typeof routed>) => void, string[]]>([
    ["converged: nothing is re-applied", {}, () => {}, []],
    ["only the missing Secret is created, never rewritten otherwise", { secret: false }, () => {}, ["create secret chat-router-admin (key token)"]],
    [
      "a spec-hash drift re-applies every router object",
      { drifted: true },
      () => {},
      ["apply ConfigMap chat-router", "apply Service chat", "apply Deployment chat-router"],
    ],
    [
      "a new router replica count re-applies them too",
      {},
      (input) => {
        input.deployment.spec.router!.replicas = 2;
      },
      ["apply ConfigMap chat-router", "apply Service chat", "apply Deployment chat-router"],
    ],
  ])("%s", (_name, state, edit, expected) => {
    const input = routed(1);
    const cluster = withRouter(input, observed(input, ["ready"]), state);
    edit(input);
    expect(summary(planDeployment({ render: input, deleting: false, observed: cluster }))).toEqual(expected);
  });

  it("a missing router object alone is applied", () => {
    const input = routed(1);
    const cluster = withRouter(input, observed(input, ["ready"]));
    cluster.configMaps = [];
    expect(summary(planDeployment({ render: input, deleting: false, observed: cluster }))).toEqual(["apply ConfigMap chat-router"]);
  });

  it("router pods are never planned as engine pods", () => {
    const input = routed(1);
    const cluster = withRouter(input, observed(input, ["ready"]), { pods: ["ready", "ready"] });
    expect(planDeployment({ render: input, deleting: false, observed: cluster })).toEqual([]);
  });

  it("replacement deletes are retirements (drained through the router first); deletion deletes are not", () => {
    const input = routed(2);
    const cluster = withRouter(input, notReady(observed(input, ["stale", "stale"]), 1));
    const actions = planDeployment({ render: input, deleting: false, observed: cluster });
    expect(summary(actions.filter(isRetirement))).toEqual(["delete chat-main-r1-m0 uid-1 (stale)"]);
    expect(planDeployment({ render: input, deleting: true, observed: cluster }).filter(isRetirement)).toEqual([]);
  });

  it.each<[string, number, Array<PodState | null>, string[]]>([
    ["none when converged", 2, ["ready", "ready"], []],
    ["Ready surplus instances, highest index first", 1, ["ready", "ready", "ready"], ["main r2", "main r1"]],
    ["not one that never became Ready (deleted directly) nor one terminating", 1, ["ready", "starting", "terminating", "ready"], ["main r3"]],
    ["scale to zero", 0, ["ready"], ["main r0"]],
  ])("retirementCandidates: %s", (_name, replicas, states, expected) => {
    const input = routed(replicas);
    const cluster = withRouter(input, observed(input, states));
    expect(retirementCandidates(input, cluster).map((c) => `${c.role} r${c.replica}`)).toEqual(expected);
  });

  it("deleting removes the router objects and the token Secret, by UID", () => {
    const input = routed(1);
    const cluster = withRouter(input, observed(input, ["ready"]));
    expect(summary(planDeployment({ render: input, deleting: true, observed: cluster }))).toEqual([
      "delete chat-main-r0-m0 uid-0 (deleting)",
      "delete service chat-main",
      "delete service chat",
      "delete Deployment chat-router uid-deployment",
      "delete ConfigMap chat-router uid-configmap",
      "delete Secret chat-router-admin uid-secret",
      "delete NetworkPolicy chat-engines uid-netpol-chat-engines",
      "delete NetworkPolicy chat-router uid-netpol-chat-router",
    ]);
  });

  it("deleting removes the discovery RBAC of an external router", () => {
    const input = routed(1, "vllm-router");
    const cluster = withRouter(input, emptyObserved(true));
    expect(summary(planDeployment({ render: input, deleting: true, observed: cluster }))).toEqual([
      "delete service chat",
      "delete Deployment chat-router uid-deployment",
      "delete ConfigMap chat-router uid-configmap",
      "delete ServiceAccount chat-router uid-serviceaccount",
      "delete Role chat-router uid-role",
      "delete RoleBinding chat-router uid-rolebinding",
    ]);
  });

  it("a router pod left after its Deployment is gone is deleted; one still owned is left to garbage collection", () => {
    const input = routed(1);
    const cluster = withRouter(input, emptyObserved(true), { secret: false });
    cluster.services = [];
    cluster.configMaps = [];
    expect(summary(planDeployment({ render: input, deleting: true, observed: cluster }))).toEqual(["delete Deployment chat-router uid-deployment"]);
    cluster.deployments = [];
    expect(summary(planDeployment({ render: input, deleting: true, observed: cluster }))).toEqual(["delete Pod chat-router-abc-0 uid-router-0"]);
  });

  it("plans every role of a PD deployment, with the router", () => {
    const input = disaggregated("vllm", 1, 2);
    const cluster = withRouter(input, merged(observed(input, ["ready"], { role: "prefill" }), observed(input, ["ready"], { role: "decode" })));
    expect(summary(planDeployment({ render: input, deleting: false, observed: cluster }))).toEqual(["create chat-decode-r1-m0"]);
  });
});

describe("planDeployment of multi-host instances (size 2: TP16 over two 8-GPU pods)", () => {
  const input = tp16(2);
  const h100 = (name: string, gpuFree: number) => ({ name, gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree });
  const plan = (r0: Array<MemberState | null>, r1: Array<MemberState | null>, inventory?: Inventory, render = input) =>
    summary(
      planDeployment({
        render,
        deleting: false,
        observed: { ...observed(render, []), pods: [...groupPods(render, 0, r0), ...groupPods(render, 1, r1)] },
        ...(inventory && { inventory }),
      }),
    ).filter((line) => !line.startsWith("service "));

  it.each<[string, Array<MemberState | null>, Array<MemberState | null>, string[]]>([
    ["nothing yet: every member of every instance", [null, null], [null, null], ["create chat-main-r0-m0", "create chat-main-r0-m1", "create chat-main-r1-m0", "create chat-main-r1-m1"]],
    ["converged", ["ready", "ready"], ["ready", "ready"], []],
    ["a member not yet created of a group not started is created", ["ready", "ready"], ["pending", null], ["create chat-main-r1-m1"]],
    ["the follower lost after the start: its leader is deleted, nothing created", ["ready", "ready"], ["ready", null], ["delete chat-main-r1-m0 uid-1-0 (group)"]],
    ["the follower's pod deleted: its leader is deleted", ["ready", "ready"], ["ready", "terminating"], ["delete chat-main-r1-m0 uid-1-0 (group)"]],
    ["the follower failed: every live member is deleted", ["ready", "ready"], ["ready", "failed"], ["delete chat-main-r1-m0 uid-1-0 (group)", "delete chat-main-r1-m1 uid-1-1 (group)"]],
    ["the leader restarted: every member is deleted", ["ready", "ready"], ["restarted", "ready"], ["delete chat-main-r1-m0 uid-1-0 (group)", "delete chat-main-r1-m1 uid-1-1 (group)"]],
    ["the group terminating: nothing is created until every member is gone", ["ready", "ready"], ["terminating", "terminating"], []],
    ["the group gone: recreated whole", ["ready", "ready"], [null, null], ["create chat-main-r1-m0", "create chat-main-r1-m1"]],
    ["rollout: a stale Ready group is never deleted by the plan (it retires through the protocol)", ["stale", "stale"], ["stale", "stale"], []],
    ["rollout: no second replacement while the first is terminating", ["stale", "stale"], ["terminating", "terminating"], []],
    ["rollout: the replaced instance is created whole, the next waits", ["stale", "stale"], [null, null], ["create chat-main-r1-m0", "create chat-main-r1-m1"]],
  ])("%s", (_name, r0, r1, expected) => {
    expect(plan(r0, r1)).toEqual(expected);
  });

  it("rollout with room: the surge instance is created whole, and the stale groups stay until it serves", () => {
    const room: Inventory = { nodes: [h100("gpu-2", 8), h100("gpu-3", 8)] };
    expect(plan(["stale", "stale"], ["stale", "stale"], room)).toEqual(["create chat-main-r2-m0", "create chat-main-r2-m1"]);
  });

  it("scale down: a Ready group retires through the protocol with both its pods, never deleted directly", () => {
    const one = tp16(1);
    expect(plan(["ready", "ready"], ["ready", "ready"], undefined, one)).toEqual([]);
    const observedPods = { ...observed(one, []), pods: [...groupPods(one, 0, ["ready", "ready"]), ...groupPods(one, 1, ["ready", "ready"])] };
    expect(retirementCandidates(one, observedPods).map((c) => [c.replica, c.pods.map((p) => p.metadata!.name)])).toEqual([
      [1, ["chat-main-r1-m0", "chat-main-r1-m1"]],
    ]);
  });

  it.each<[string, Array<MemberState | null>, Inventory["nodes"], string[]]>([
    [
      "a member refused for GPUs with no room for the group: the members holding or waiting for GPUs go",
      ["starting", "unschedulable"],
      [h100("gpu-0", 0), h100("gpu-1", 4), h100("gpu-2", 0), h100("gpu-3", 0)],
      ["delete chat-main-r1-m0 uid-1-0 (group)", "delete chat-main-r1-m1 uid-1-1 (group)"],
    ],
    ["held: no member is created until the inventory has room for the whole group", [null, null], [h100("gpu-0", 8), h100("gpu-1", 4)], []],
    ["room for the whole group: created whole", [null, null], [h100("gpu-0", 8), h100("gpu-1", 8)], ["create chat-main-r1-m0", "create chat-main-r1-m1"]],
    ["refused while the inventory still shows room: left to the scheduler (no flapping)", ["starting", "unschedulable"], [h100("gpu-0", 0), h100("gpu-1", 8)], []],
  ])("%s", (_name, r1, nodes, expected) => {
    expect(plan(["ready", "ready"], r1, { nodes })).toEqual(expected);
  });

  it("the deletes that free a group carry it, so the agent pauses its next try (counted once per pass)", () => {
    const actions = planDeployment({
      render: input,
      deleting: false,
      observed: { ...observed(input, []), pods: [...groupPods(input, 0, ["ready", "ready"]), ...groupPods(input, 1, ["starting", "unschedulable"])] },
      inventory: { nodes: [h100("gpu-0", 0), h100("gpu-1", 0)] },
    });
    expect(actions.filter((a) => a.kind === "deletePod").map((a) => a.kind === "deletePod" && a.release)).toEqual([
      { role: "main", replica: 1 },
      { role: "main", replica: 1 },
    ]);
  });

  it.each<[string, Array<MemberState | null>, Array<MemberState | null>, string[]]>([
    ["room for one group of two: only r0 is created, r1 waits (they never race for the same GPUs)", [null, null], [null, null], ["create chat-main-r0-m0", "create chat-main-r0-m1"]],
    ["r0's members created but not yet bound take their room first", ["pending", "pending"], [null, null], []],
  ])("%s", (_name, r0, r1, expected) => {
    expect(plan(r0, r1, { nodes: [h100("gpu-a", 8), h100("gpu-b", 8), h100("gpu-c", 0), h100("gpu-d", 0)] })).toEqual(expected);
  });
});

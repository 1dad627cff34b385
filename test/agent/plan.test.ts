// planDeployment (pure): which objects to create, which replicas to delete, and the pace of a
// spec-change replacement (one instance per role, only while the others are Ready).
import { describe, expect, it } from "vitest";
import { emptyObserved } from "../../src/agent/observe.ts";
import { type Action, isRetirement, planDeployment, retirementCandidates } from "../../src/agent/plan.ts";
import { aggregated, disaggregated, merged, observed, type PodState, withRouter } from "./support.ts";

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
  it("creates the namespace, role Service and every instance on an empty cluster", () => {
    const input = aggregated(2);
    expect(summary(planDeployment({ render: input, deleting: false, observed: observed(input, [], { namespace: false }) }))).toEqual([
      "namespace berth-team",
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
    ["one stale instance is replaced, highest first", 3, ["stale", "stale", "stale"], ["delete chat-main-r2-m0 uid-2 (stale)"]],
    ["no replacement while another instance is not Ready", 3, ["stale", "starting", "stale"], []],
    ["no replacement while one is being replaced", 3, ["stale", "stale", "terminating"], []],
    ["no replacement while an instance is missing", 3, ["stale", null, "stale"], ["create chat-main-r1-m0"]],
  ])("%s", (_name, replicas, states, expected) => {
    const input = aggregated(replicas);
    expect(summary(planDeployment({ render: input, deleting: false, observed: observed(input, states) }))).toEqual(expected);
  });

  it("deleting removes every pod (highest index first) and Service, by UID", () => {
    const input = aggregated(2);
    expect(summary(planDeployment({ render: input, deleting: true, observed: observed(input, ["ready", "terminating", "ready"]) }))).toEqual([
      "delete chat-main-r2-m0 uid-2 (deleting)",
      "delete chat-main-r0-m0 uid-0 (deleting)",
      "delete service chat-main",
    ]);
  });

  it("deleting with nothing left plans nothing", () => {
    const input = aggregated(2);
    expect(planDeployment({ render: input, deleting: true, observed: emptyObserved(true) })).toEqual([]);
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
    const cluster = withRouter(input, observed(input, ["stale", "stale"]));
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

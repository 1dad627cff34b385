// planDeployment (pure): which objects to create, which replicas to delete, and the pace of a
// spec-change replacement (one instance per role, only while the others are Ready).
import { describe, expect, it } from "vitest";
import { type Action, planDeployment } from "../../src/agent/plan.ts";
import { aggregated, observed, type PodState } from "./support.ts";

/** A compact view of the actions: `create r1`, `delete r2 (surplus)`, `service chat-main`, `namespace`. */
function summary(actions: Action[]): string[] {
  return actions.map((action) => {
    switch (action.kind) {
      case "applyNamespace":
        return `namespace ${action.object.metadata!.name}`;
      case "applyService":
        return `service ${action.object.metadata!.name}`;
      case "createPod":
        return `create ${action.object.metadata!.name}`;
      case "deletePod":
        return `delete ${action.name} ${action.uid} (${action.reason})`;
      case "deleteService":
        return `delete service ${action.name}`;
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
    [
      "scale down deletes the highest indexes first, by UID",
      1,
      ["ready", "ready", "ready"],
      ["delete chat-main-r2-m0 uid-2 (surplus)", "delete chat-main-r1-m0 uid-1 (surplus)"],
    ],
    ["a terminating surplus pod is not deleted twice", 1, ["ready", "terminating"], []],
    ["a terminating pod is recreated only once it is gone", 2, ["ready", "terminating"], []],
    ["scale to zero", 0, ["ready"], ["delete chat-main-r0-m0 uid-0 (surplus)"]],
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
    expect(planDeployment({ render: input, deleting: true, observed: { namespaceExists: true, pods: [], services: [] } })).toEqual([]);
  });
});

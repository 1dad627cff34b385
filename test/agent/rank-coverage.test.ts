// External DP coverage (pure): declared / eligible / serving ranks per role from observed pods
// and the router pods' admin views, and the RouterCoverage condition that Ready waits for.
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { renderInstancePods, type RenderInput } from "../../k8s/render/index.ts";
import { rankCoverage, routerCoverageCondition, type RouterViews } from "../../src/agent/rank-coverage.ts";
import { buildEndpointList, endpointsHash, buildEndpointsBody, routerAckKey } from "../../src/agent/router-endpoint-list.ts";
import type { AdminView } from "../../src/agent/signals/router.ts";
import type { DeploymentStatus } from "../../src/domain/deployment-spec.ts";
import { aggregated, observed, statusAnswered, withRouter } from "./support.ts";

const NOW = new Date("2026-11-30T12:00:00.000Z");
const MODEL = "Qwen/Qwen3-8B";

const externalDP = (replicas: number, opts: { data?: number; size?: number; router?: "builtin" | "vllm-router" } = {}): RenderInput => {
  const data = opts.data ?? 4;
  const size = opts.size ?? data;
  return aggregated(0, {
    router: { kind: opts.router ?? "builtin" },
    roles: [{ name: "main", replicas, size, resources: { gpus: (data / size) | 0 || 1 }, parallelism: { data, tensor: 1, externalDP: true } }],
  });
};

/** Every member pod of `replicas` instances, Ready unless listed in `notReady` (by pod name). */
function pods(input: RenderInput, replicas: number, notReady: string[] = []): V1Pod[] {
  return Array.from({ length: replicas }, (_, replica) => renderInstancePods(input, "main", replica)).flatMap((members, replica) =>
    members.map((template, member) => {
      const pod = structuredClone(template);
      pod.metadata!.uid = `uid-${replica}-${member}`;
      const ready = !notReady.includes(pod.metadata!.name!);
      pod.status = { phase: "Running", podIP: `127.0.${replica + 1}.${member + 1}`, conditions: [{ type: "Ready", status: ready ? "True" : "False" }] };
      return pod;
    }),
  );
}

/** A router pod's view holding the list the pods give, each endpoint's models read, except `unread`. */
function viewOf(input: RenderInput, all: V1Pod[], changes: { unread?: string[]; absent?: string[]; failed?: string[]; draining?: string[] } = {}): AdminView {
  return {
    held: 0,
    endpoints: buildEndpointList(input, all)
      .filter((e) => !changes.absent?.includes(e.id))
      .map((e) => ({
        id: e.id,
        role: e.role,
        url: e.url,
        ...(e.rank !== undefined && { rank: e.rank }),
        state: changes.draining?.includes(e.id) ? "draining" : e.state,
        inFlight: 0,
        models: changes.unread?.includes(e.id) || changes.failed?.includes(e.id) ? null : [MODEL],
        ...(changes.failed?.includes(e.id) && { modelsError: "GET /v1/models: HTTP 503" }),
      })),
  };
}

describe("rankCoverage", () => {
  it.each<[string, number, string[], (input: RenderInput, all: V1Pod[]) => RouterViews, { declared: number; eligible: number; serving?: number }, string | undefined]>([
    ["every rank confirmed", 1, [], (i, a) => ({ views: [viewOf(i, a)], failures: [] }), { declared: 4, eligible: 4, serving: 4 }, undefined],
    ["a pod not Ready: neither eligible nor serving", 1, ["chat-main-r0-m2"], (i, a) => ({ views: [viewOf(i, a)], failures: [] }), { declared: 4, eligible: 3, serving: 3 }, "r0 rank 2"],
    ["models not read yet", 1, [], (i, a) => ({ views: [viewOf(i, a, { unread: ["chat-main-r0-m2", "chat-main-r0-m3"] })], failures: [] }), { declared: 4, eligible: 4, serving: 2 }, "r0 ranks 2, 3"],
    ["a models read failed", 1, [], (i, a) => ({ views: [viewOf(i, a, { failed: ["chat-main-r0-m1"] })], failures: [] }), { declared: 4, eligible: 4, serving: 3 }, "r0 rank 1"],
    ["the router marks it draining", 1, [], (i, a) => ({ views: [viewOf(i, a, { draining: ["chat-main-r0-m0"] })], failures: [] }), { declared: 4, eligible: 4, serving: 3 }, "r0 rank 0"],
    [
      "one of two router pods lacks it: every router pod must hold it",
      1,
      [],
      (i, a) => ({ views: [viewOf(i, a), viewOf(i, a, { absent: ["chat-main-r0-m3"] })], failures: [] }),
      { declared: 4, eligible: 4, serving: 3 },
      "r0 rank 3",
    ],
    ["no Ready router pod: nothing is routed", 1, [], () => ({ views: [], failures: [] }), { declared: 4, eligible: 4, serving: 0 }, "r0 ranks 0, 1, 2, 3"],
    ["a router pod unreadable: serving unknown", 1, [], (i, a) => ({ views: [viewOf(i, a)], failures: ["chat-router-x: timeout"] }), { declared: 4, eligible: 4 }, undefined],
    ["two replicas: ranks per instance", 2, ["chat-main-r1-m0"], (i, a) => ({ views: [viewOf(i, a)], failures: [] }), { declared: 8, eligible: 7, serving: 7 }, "r1 rank 0"],
  ])("%s", (_name, replicas, notReady, views, ranks, unserved) => {
    const input = externalDP(replicas);
    const all = pods(input, replicas, notReady);
    const read = views(input, all);
    const [coverage] = rankCoverage(input, all, new Set(), read);
    expect(coverage!.ranks).toEqual(ranks);
    const condition = routerCoverageCondition(input, [coverage!], read)!;
    if (ranks.serving === undefined) expect(condition).toMatchObject({ status: "Unknown", reason: "RouterUnreadable", gatesReady: true });
    else if (unserved === undefined) expect(condition).toMatchObject({ status: "True", reason: "AllRanksRouted" });
    else {
      expect(condition).toMatchObject({ status: "False", reason: "RanksNotRouted", gatesReady: true });
      expect(condition.message.startsWith(`${unserved} `)).toBe(true);
    }
  });

  it("a pod at another address than the router holds (recreated) is not confirmed", () => {
    const input = externalDP(1);
    const before = pods(input, 1);
    const now = structuredClone(before);
    now[1]!.status!.podIP = "127.0.9.9";
    const [coverage] = rankCoverage(input, now, new Set(), { views: [viewOf(input, before)], failures: [] });
    expect(coverage!.ranks).toEqual({ declared: 4, eligible: 4, serving: 3 });
  });

  it("a pod pushed as draining is not eligible; a surplus instance is not declared", () => {
    const input = externalDP(1);
    const all = [...pods(input, 1), ...pods(externalDP(2), 2).filter((p) => p.metadata!.name!.includes("-r1-"))];
    const [coverage] = rankCoverage(input, all, new Set(["chat-main-r0-m3"]), { views: [viewOf(input, all, { draining: ["chat-main-r0-m3"] })], failures: [] });
    expect(coverage!.ranks).toEqual({ declared: 4, eligible: 3, serving: 3 });
  });

  it("hybrid LB: a pod's endpoint covers its dataLocal ranks", () => {
    const input = externalDP(1, { data: 4, size: 2 });
    const all = pods(input, 1);
    const read = { views: [viewOf(input, all, { unread: ["chat-main-r0-m1"] })], failures: [] };
    const [coverage] = rankCoverage(input, all, new Set(), read);
    expect(coverage!.ranks).toEqual({ declared: 4, eligible: 4, serving: 2 });
    expect(routerCoverageCondition(input, [coverage!], read)!.message).toMatch(/^r0 ranks 2, 3 /);
  });

  it("not external DP: no ranks, no condition", () => {
    const input = aggregated(2, { router: { kind: "builtin" } });
    expect(rankCoverage(input, [], new Set(), { views: [], failures: [] })).toEqual([]);
    expect(routerCoverageCondition(input, [], undefined)).toBeUndefined();
  });

  it("a router other than builtin: serving absent, Unknown, Ready not held", () => {
    const input = externalDP(1, { router: "vllm-router" });
    const all = pods(input, 1);
    const coverage = rankCoverage(input, all, new Set(), undefined);
    expect(coverage[0]!.ranks).toEqual({ declared: 4, eligible: 4 });
    expect(routerCoverageCondition(input, coverage, undefined)).toMatchObject({ status: "Unknown", reason: "CoverageNotObservable", gatesReady: false });
  });
});

describe("computeStatus with external DP", () => {
  const conditionOf = (status: DeploymentStatus, type: string) => status.conditions?.find((c) => c.type === type);
  const statusOf = (input: RenderInput, all: V1Pod[], routerViews?: RouterViews) => {
    const cluster = withRouter(input, { ...observed(input, []), pods: all });
    const hash = endpointsHash(buildEndpointsBody(input, cluster.pods));
    const routerAcks = new Map(cluster.routerPods.map((pod) => [routerAckKey(pod), hash]));
    return statusAnswered({ render: input, deleting: false, observed: cluster, routerAcks, now: NOW, ...(routerViews && { routerViews }) });
  };

  it("Ready with every rank serving: ranks in the role status, RouterCoverage True", () => {
    const input = externalDP(1);
    const all = pods(input, 1);
    const status = statusOf(input, all, { views: [viewOf(input, all)], failures: [] });
    expect(status.phase).toBe("Ready");
    expect(status.roles).toEqual([{ name: "main", kind: "server", desired: 1, ready: 1, updated: 1, draining: 0, ranks: { declared: 4, eligible: 4, serving: 4 } }]);
    expect(conditionOf(status, "RouterCoverage")).toMatchObject({ status: "True", reason: "AllRanksRouted", message: "main 4/4 ranks serving; every Ready router pod holds each rank" });
  });

  it("a rank the router has not confirmed holds Ready back, named in the condition", () => {
    const input = externalDP(1);
    const all = pods(input, 1);
    const status = statusOf(input, all, { views: [viewOf(input, all, { unread: ["chat-main-r0-m2"] })], failures: [] });
    expect(status.phase).toBe("Starting");
    expect(conditionOf(status, "RouterCoverage")).toMatchObject({ status: "False", reason: "RanksNotRouted" });
    expect(conditionOf(status, "RouterCoverage")!.message).toBe("r0 rank 2 not confirmed by every Ready router pod (main 3/4 ranks serving)");
    expect(conditionOf(status, "Ready")).toMatchObject({ status: "False", reason: "RanksNotRouted" });
  });

  it("the router's view not read: serving absent and not Ready", () => {
    const input = externalDP(1);
    const status = statusOf(input, pods(input, 1));
    expect(status.roles![0]!.ranks).toEqual({ declared: 4, eligible: 4 });
    expect(conditionOf(status, "RouterCoverage")).toMatchObject({ status: "Unknown", reason: "RouterNotRead" });
    expect(status.phase).not.toBe("Ready");
  });
});

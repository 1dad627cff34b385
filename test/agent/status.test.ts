// computeStatus (pure): phase, per-role instance counts, endpoint and specific "why not ready"
// conditions, from observed pods only.
import { describe, expect, it } from "vitest";
import { buildEndpointList, endpointsHash, routerAckKey } from "../../src/agent/router-endpoint-list.ts";
import { computeStatus, freeGpusFor } from "../../src/agent/status.ts";
import type { Observed } from "../../src/agent/observe.ts";
import type { RenderInput } from "../../k8s/render/index.ts";
import type { DeploymentStatus } from "../../src/domain/deployment-spec.ts";
import type { V1Pod } from "@kubernetes/client-node";
import type { Inventory } from "../../src/domain/cluster.ts";
import { aggregated, disaggregated, groupPods, type MemberState, merged, observed, type PodState, statusAnswered, tp16, withRouter } from "./support.ts";

const NOW = new Date("2026-11-30T12:00:00.000Z");
const conditionOf = (status: DeploymentStatus, type: string) => status.conditions?.find((c) => c.type === type);

describe("computeStatus", () => {
  it.each<[string, number, Array<PodState | null>, DeploymentStatus["phase"], { ready: number; updated: number; draining: number }, string]>([
    ["all ready", 2, ["ready", "ready"], "Ready", { ready: 2, updated: 2, draining: 0 }, "Ready"],
    ["one starting", 2, ["ready", "starting"], "Starting", { ready: 1, updated: 2, draining: 0 }, "WeightsLoading"],
    ["nothing observed yet", 2, [], "Starting", { ready: 0, updated: 0, draining: 0 }, "WeightsLoading"],
    ["a surplus replica drains", 1, ["ready", "terminating"], "Ready", { ready: 1, updated: 1, draining: 1 }, "Ready"],
    ["no GPU free", 2, ["ready", "unschedulable"], "Degraded", { ready: 1, updated: 2, draining: 0 }, "InsufficientGPU"],
    ["image cannot be pulled", 1, ["imagepull"], "Degraded", { ready: 0, updated: 1, draining: 0 }, "ImagePullBackOff"],
    ["engine crashes", 1, ["crashloop"], "Degraded", { ready: 0, updated: 1, draining: 0 }, "CrashLoopBackOff"],
    ["stale but ready", 2, ["stale", "ready"], "Ready", { ready: 2, updated: 1, draining: 0 }, "Ready"],
  ])("%s", (_name, replicas, states, phase, counts, readyReason) => {
    const input = aggregated(replicas);
    const status = statusAnswered({ render: input, deleting: false, observed: observed(input, states), now: NOW });
    expect(status.phase).toBe(phase);
    expect(status.observedGeneration).toBe(1);
    expect(status.roles).toEqual([{ name: "main", kind: "server", desired: replicas, ...counts }]);
    expect(conditionOf(status, "Ready")?.reason).toBe(readyReason);
  });

  it.each<[string, Array<PodState | null>, number, string]>([
    ["every instance current", ["ready", "ready"], 8, "True AllUpdated: every instance runs generation 1"],
    ["a rollout with room for the surge", ["stale", "ready"], 8, "False RollingOut: main: 1/2 updated"],
    ["the surge Ready, counted apart from the instances below replicas", ["stale", "ready", "ready"], 0, "False RollingOut: main: 1/2 updated"],
    [
      "no room for the surge",
      ["stale", "ready"],
      0,
      "False SurgeDoesNotFit: main: 1/2 updated; a surge of 1 instance(s) needs 1 GPUs (1 pod(s) × 1), 0 free; replacing one instance at a time",
    ],
  ])("UpToDate from the rollout planner: %s", (_name, states, gpuFree, expected) => {
    const input = aggregated(2);
    const inventory = { nodes: [{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree }] };
    const status = statusAnswered({ render: input, deleting: false, observed: observed(input, states), now: NOW, inventory });
    const upToDate = conditionOf(status, "UpToDate")!;
    expect(`${upToDate.status} ${upToDate.reason}: ${upToDate.message}`).toBe(expected);
  });

  it("a surge instance the rollout keeps is capacity, not draining; once no stale instance remains it is surplus and drains", () => {
    const input = aggregated(2);
    const inventory = { nodes: [{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 0 }] };
    const rolling = statusAnswered({ render: input, deleting: false, observed: observed(input, ["stale", "ready", "ready"]), now: NOW, inventory });
    expect(rolling.roles?.[0]).toMatchObject({ desired: 2, ready: 2, updated: 1, draining: 0 });
    const done = statusAnswered({ render: input, deleting: false, observed: observed(input, ["ready", "ready", "terminating"]), now: NOW, inventory });
    expect(done.roles?.[0]).toMatchObject({ desired: 2, ready: 2, updated: 2, draining: 1 });
  });

  it("names the GPU shortage in Scheduled and the endpoint from the role Service's ClusterIP", () => {
    const input = aggregated(2);
    const status = statusAnswered({ render: input, deleting: false, observed: observed(input, ["ready", "unschedulable"]), now: NOW });
    expect(status.endpoint).toBe("http://127.0.200.7:8000");
    expect(conditionOf(status, "Scheduled")).toEqual({
      type: "Scheduled",
      status: "False",
      reason: "InsufficientGPU",
      message: "chat-main-r1-m0 needs 1 GPU: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
      observedGeneration: 1,
      lastTransitionTime: NOW.toISOString(),
    });
  });

  it.each([
    ["unknown inventory: nothing said about free GPUs", undefined, "chat-main-r1-m0 needs 1 GPU: 0/1"],
    [
      "the largest free count on one node and the total",
      { nodes: [{ name: "a", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 0 }, { name: "b", gpuCapacity: 4, gpuAllocatable: 4, gpuFree: 0 }] },
      "chat-main-r1-m0 needs 1 GPU; 0 free on the best node, 0 free on 2 nodes: 0/1",
    ],
  ])("InsufficientGPU names needed and free GPUs: %s", (_name, inventory, prefix) => {
    const input = aggregated(2);
    const status = statusAnswered({ render: input, deleting: false, observed: observed(input, ["ready", "unschedulable"]), now: NOW, ...(inventory && { inventory }) });
    expect(conditionOf(status, "Scheduled")?.message.startsWith(prefix)).toBe(true);
  });

  it.each([
    ["nvidia-h100-80gb", "4 free on the best node, 6 free on 2 nodes"],
    ["nvidia-a100-80gb", "no node has nvidia-a100-80gb"],
    [undefined, "4 free on the best node, 7 free on 3 nodes"],
  ])("free GPUs for type %s", (gpuType, expected) => {
    const inventory = {
      nodes: [
        { name: "a", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 4 },
        { name: "b", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 2 },
        { name: "c", gpuType: "nvidia-l4-24gb", gpuCapacity: 4, gpuAllocatable: 4, gpuFree: 1 },
        { name: "cpu", gpuCapacity: 0, gpuAllocatable: 0, gpuFree: 0 },
      ],
    };
    expect(freeGpusFor(gpuType, inventory)).toBe(expected);
  });

  it("carries the crash's last log line", () => {
    const input = aggregated(1);
    const status = statusAnswered({ render: input, deleting: false, observed: observed(input, ["crashloop"]), now: NOW });
    expect(conditionOf(status, "RolesReady")?.message).toContain("exit 1: CUDA out of memory");
  });

  it("is never Ready without an endpoint or after a failed apply", () => {
    const input = aggregated(1);
    const noService = observed(input, ["ready"]);
    noService.services = [];
    expect(statusAnswered({ render: input, deleting: false, observed: noService, now: NOW }).phase).not.toBe("Ready");
    const failed = statusAnswered({ render: input, deleting: false, observed: observed(input, ["ready"]), applyError: "forbidden", now: NOW });
    expect(failed.phase).toBe("Degraded");
    expect(conditionOf(failed, "Ready")).toMatchObject({ status: "False", reason: "ApplyFailed", message: "forbidden" });
  });

  describe("Ready needs the endpoint to answer the agent", () => {
    const input = aggregated(1);
    const seen = observed(input, ["ready"]);
    const endpoint = "http://127.0.200.7:8000";
    it.each([
      ["not asked yet", undefined, "EndpointNotChecked", /has not been asked yet/],
      ["refused", { endpoint, answered: false, misses: 1, detail: "ECONNREFUSED" }, "EndpointNotAnswering", /GET http:\/\/127\.0\.200\.7:8000\/v1\/models got no answer \(ECONNREFUSED\); the Service may not route/],
      ["answered at an address the Service no longer has", { endpoint: "http://10.96.0.99:8000", answered: true, misses: 0, detail: "answered 200" }, "EndpointNotChecked", /has not been asked yet/],
    ] as const)("%s: Starting, Ready False", (_, endpointCheck, reason, message) => {
      const status = computeStatus({ render: input, deleting: false, observed: seen, now: NOW, ...(endpointCheck && { endpointCheck }) });
      expect(status.phase).toBe("Starting");
      expect(status.endpoint).toBe(endpoint);
      expect(conditionOf(status, "RolesReady")?.status).toBe("True");
      expect(conditionOf(status, "Ready")).toMatchObject({ status: "False", reason, message: expect.stringMatching(message) });
    });
    it("answered: Ready, serving at the endpoint", () => {
      const status = computeStatus({ render: input, deleting: false, observed: seen, now: NOW, endpointCheck: { endpoint, answered: true, misses: 0, detail: "answered 404" } });
      expect(conditionOf(status, "Ready")).toMatchObject({ status: "True", message: `serving at ${endpoint}` });
    });
    it("an answer does not hide pods that are not Ready", () => {
      const starting = computeStatus({ render: input, deleting: false, observed: observed(input, ["starting"]), now: NOW, endpointCheck: { endpoint, answered: true, misses: 0, detail: "answered 200" } });
      expect(conditionOf(starting, "Ready")).toMatchObject({ status: "False", reason: "WeightsLoading" });
    });
  });

  it("reports no counts when nothing was observed", () => {
    const status = statusAnswered({ render: aggregated(2), deleting: false, observed: undefined, now: NOW });
    expect(status.roles).toBeUndefined();
    expect(status.phase).toBe("Pending");
  });

  it("keeps lastTransitionTime until a condition's status flips", () => {
    const input = aggregated(1);
    const first = statusAnswered({ render: input, deleting: false, observed: observed(input, ["starting"]), now: NOW });
    const later = new Date(NOW.getTime() + 60_000);
    const same = statusAnswered({ render: input, deleting: false, observed: observed(input, ["starting"]), previous: first, now: later });
    expect(conditionOf(same, "Ready")?.lastTransitionTime).toBe(NOW.toISOString());
    const flipped = statusAnswered({ render: input, deleting: false, observed: observed(input, ["ready"]), previous: same, now: later });
    expect(conditionOf(flipped, "Ready")).toMatchObject({ status: "True", lastTransitionTime: later.toISOString() });
    expect(conditionOf(flipped, "Accepted")?.lastTransitionTime).toBe(NOW.toISOString());
  });

  it("says Deleting while objects are removed", () => {
    const input = aggregated(1);
    const status = statusAnswered({ render: input, deleting: true, observed: observed(input, ["terminating"]), now: NOW });
    expect(status.phase).toBe("Deleting");
    expect(status.roles?.[0]).toMatchObject({ ready: 0, draining: 1 });
  });
});

describe("computeStatus with a router", () => {
  const routed = (replicas: number, kind: "builtin" | "sglang-gateway" = "builtin") => aggregated(replicas, { router: { kind } });
  /** Every Ready router pod acknowledged the list the observed engine pods give. */
  const ackedAll = (input: RenderInput, cluster: Observed) => {
    const hash = endpointsHash({ endpoints: buildEndpointList(input, cluster.pods) });
    return new Map(cluster.routerPods.map((pod) => [routerAckKey(pod), hash]));
  };

  it("the endpoint is the router Service, and Ready waits until the router pods acknowledged the endpoints", () => {
    const input = routed(2);
    const cluster = withRouter(input, observed(input, ["ready", "ready"]));
    const before = statusAnswered({ render: input, deleting: false, observed: cluster, now: NOW });
    expect(before.endpoint).toBe("http://127.0.200.9:8080");
    expect(before.phase).toBe("Starting");
    expect(conditionOf(before, "RolesReady")?.status).toBe("True");
    expect(conditionOf(before, "RouterReady")).toMatchObject({ status: "False", reason: "EndpointsNotPushed" });
    expect(conditionOf(before, "Ready")).toMatchObject({ status: "False", reason: "EndpointsNotPushed" });

    const after = statusAnswered({ render: input, deleting: false, observed: cluster, routerAcks: ackedAll(input, cluster), now: NOW });
    expect(after.phase).toBe("Ready");
    expect(conditionOf(after, "RouterReady")).toMatchObject({ status: "True", reason: "RouterReady" });
    expect(conditionOf(after, "Ready")?.message).toBe("serving at http://127.0.200.9:8080");
  });

  it("an acknowledgement of an older list does not count", () => {
    const input = routed(2);
    const one = withRouter(input, observed(input, ["ready", "starting"]));
    const acks = ackedAll(input, one);
    const two = withRouter(input, observed(input, ["ready", "ready"]));
    const status = statusAnswered({ render: input, deleting: false, observed: two, routerAcks: acks, now: NOW });
    expect(status.phase).toBe("Starting");
    expect(conditionOf(status, "RouterReady")).toMatchObject({ status: "False", reason: "EndpointsNotPushed", message: "router 1/1 ready; 0/1 router pods hold the current endpoints" });
  });

  it.each<[string, Parameters<typeof withRouter>[2], string]>([
    ["the router Deployment has no ready replica", { readyReplicas: 0, pods: ["starting"] }, "RouterStarting"],
    ["the router Deployment is not observed", { pods: [] }, "RouterStarting"],
  ])("not Ready while %s", (_name, state, reason) => {
    const input = routed(1);
    const cluster = withRouter(input, observed(input, ["ready"]), state);
    if (state?.pods?.length === 0) cluster.deployments = [];
    const status = statusAnswered({ render: input, deleting: false, observed: cluster, routerAcks: ackedAll(input, cluster), now: NOW });
    expect(status.phase).toBe("Starting");
    expect(conditionOf(status, "RouterReady")).toMatchObject({ status: "False", reason });
    expect(conditionOf(status, "Ready")).toMatchObject({ status: "False", reason });
  });

  it("a failed push is Degraded, never Ready", () => {
    const input = routed(1);
    const cluster = withRouter(input, observed(input, ["ready"]));
    const status = statusAnswered({
      render: input,
      deleting: false,
      observed: cluster,
      routerAcks: ackedAll(input, cluster),
      pushError: "router endpoint push failed: chat-router-abc-0: 401",
      now: NOW,
    });
    expect(status.phase).toBe("Degraded");
    expect(conditionOf(status, "RouterReady")).toMatchObject({ status: "False", reason: "EndpointPushFailed" });
    expect(conditionOf(status, "Ready")).toMatchObject({ status: "False", reason: "EndpointPushFailed" });
  });

  it("no router Service ClusterIP: no endpoint, not Ready", () => {
    const input = routed(1);
    const cluster = withRouter(input, observed(input, ["ready"]));
    cluster.services = cluster.services.filter((s) => s.metadata?.name !== "chat");
    const status = statusAnswered({ render: input, deleting: false, observed: cluster, routerAcks: ackedAll(input, cluster), now: NOW });
    expect(status.endpoint).toBeUndefined();
    expect(status.phase).not.toBe("Ready");
  });

  it("an external router is ready on its Deployment's readiness alone (it discovers pods itself)", () => {
    const input = routed(1, "sglang-gateway");
    const status = statusAnswered({ render: input, deleting: false, observed: withRouter(input, observed(input, ["ready"])), now: NOW });
    expect(status.phase).toBe("Ready");
    expect(conditionOf(status, "RouterReady")).toMatchObject({ status: "True", message: "router 1/1 ready" });
  });

  it("without a router there is no RouterReady condition", () => {
    const input = aggregated(1);
    const status = statusAnswered({ render: input, deleting: false, observed: observed(input, ["ready"]), now: NOW });
    expect(conditionOf(status, "RouterReady")).toBeUndefined();
  });

  it("PD: counts per role, Ready through the router", () => {
    const input = disaggregated("vllm", 1, 2);
    const cluster = withRouter(input, merged(observed(input, ["ready"], { role: "prefill" }), observed(input, ["ready", "starting"], { role: "decode" })));
    const status = statusAnswered({ render: input, deleting: false, observed: cluster, routerAcks: ackedAll(input, cluster), now: NOW });
    expect(status.roles).toEqual([
      { name: "prefill", kind: "prefill", desired: 1, ready: 1, updated: 1, draining: 0 },
      { name: "decode", kind: "decode", desired: 2, ready: 1, updated: 2, draining: 0 },
    ]);
    expect(status.phase).toBe("Starting");
    expect(status.endpoint).toBe("http://127.0.200.9:8080");
  });
});

describe("computeStatus of multi-host instances (size 2: TP16 over two 8-GPU pods)", () => {
  const input = tp16(1);
  const withPods = (pods: V1Pod[]): Observed => ({ ...observed(input, []), pods });
  const status = (pods: V1Pod[], inventory?: Inventory) =>
    statusAnswered({ render: input, deleting: false, observed: withPods(pods), now: NOW, ...(inventory && { inventory }) });

  it("both members Ready: Ready 1/1", () => {
    const s = status(groupPods(input, 0, ["ready", "ready"]));
    expect(s.phase).toBe("Ready");
    expect(s.roles).toEqual([{ name: "main", kind: "server", desired: 1, ready: 1, updated: 1, draining: 0 }]);
  });

  it.each<[string, Array<MemberState | null>, DeploymentStatus["phase"], string, string]>([
    ["only the leader observed: not ready, the follower named", ["ready", null], "Degraded", "MemberMissing", "member m1 of main r0 (chat-main-r0-m1) is missing"],
    ["the follower starting", ["ready", "starting"], "Starting", "WeightsLoading", "member m1 of main r0 (chat-main-r0-m1) is not Ready"],
    ["the follower failed", ["ready", "failed"], "Degraded", "MemberFailed", "chat-main-r0-m1) failed: pod phase Failed"],
    ["the follower restarted", ["ready", "restarted"], "Degraded", "MemberFailed", "restarted 1× (exit 137)"],
    ["members of two revisions", ["ready", "stale"], "Degraded", "MemberStale", "runs another revision than its leader"],
  ])("%s", (_name, states, phase, reason, message) => {
    const s = status(groupPods(input, 0, states));
    expect(s.phase).toBe(phase);
    expect(s.roles![0]).toMatchObject({ ready: 0 });
    expect(conditionOf(s, "RolesReady")).toMatchObject({ status: "False", reason });
    expect(conditionOf(s, "RolesReady")!.message).toContain(message);
    expect(conditionOf(s, "Ready")).toMatchObject({ status: "False", reason });
  });

  it("a group that cannot be placed whole says InsufficientGPU for the group: needed gpus × size and free", () => {
    const inventory = { nodes: [{ name: "gpu-0", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 8 }] };
    for (const pods of [[], groupPods(input, 0, ["starting", "unschedulable"])]) {
      const s = status(pods, inventory);
      expect(s.phase).toBe("Degraded");
      const expected = "chat-main-r0 needs 16 nvidia-h100-80gb GPUs (2 × 8) placed together;";
      expect(conditionOf(s, "Scheduled")).toMatchObject({ status: "False", reason: "InsufficientGPU" });
      expect(conditionOf(s, "Scheduled")!.message.startsWith(expected)).toBe(true);
      expect(conditionOf(s, "Ready")).toMatchObject({ reason: "InsufficientGPU" });
    }
  });

  it("of two groups with room for one, the second is the one held, as the plan holds it", () => {
    const two = tp16(2);
    const inventory = { nodes: ["a", "b"].map((n) => ({ name: n, gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 8 })) };
    const s = statusAnswered({ render: two, deleting: false, observed: { ...observed(two, []), pods: groupPods(two, 0, ["pending", "pending"]) }, now: NOW, inventory });
    expect(conditionOf(s, "Scheduled")!.message).toBe(
      "chat-main-r1 needs 16 nvidia-h100-80gb GPUs (2 × 8) placed together; 0 free: the group holds no GPUs until they are",
    );
  });
});

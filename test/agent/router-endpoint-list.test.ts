// buildEndpointList (pure): which engine pods the builtin router gets, in which state; and when
// every Ready router pod holds the current list.
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { renderInstancePods } from "../../k8s/render/index.ts";
import {
  buildEndpointList,
  endpointsHash,
  type RouterEndpoint,
  routerAckKey,
  routersAcknowledged,
} from "../../src/agent/router-endpoint-list.ts";
import { aggregated, disaggregated, groupPods, type MemberState, observed, observedPod, type PodState, tp16, withRouter } from "./support.ts";

const routed = (replicas: number) => aggregated(replicas, { router: { kind: "builtin" } });

describe("buildEndpointList", () => {
  it.each<[string, Array<PodState | null>, string[], Array<Pick<RouterEndpoint, "id" | "state">>]>([
    ["every Ready pod is eligible", ["ready", "ready"], [], [{ id: "chat-main-r0-m0", state: "eligible" }, { id: "chat-main-r1-m0", state: "eligible" }]],
    ["a starting pod is left out", ["ready", "starting"], [], [{ id: "chat-main-r0-m0", state: "eligible" }]],
    ["a terminating pod is left out", ["ready", "terminating"], [], [{ id: "chat-main-r0-m0", state: "eligible" }]],
    ["a pod the plan deletes is draining", ["ready", "ready"], ["chat-main-r1-m0"], [{ id: "chat-main-r0-m0", state: "eligible" }, { id: "chat-main-r1-m0", state: "draining" }]],
    ["a stale but Ready pod still serves", ["stale", "ready"], [], [{ id: "chat-main-r0-m0", state: "eligible" }, { id: "chat-main-r1-m0", state: "eligible" }]],
    ["a pod to delete that is not Ready is simply gone", ["ready", "starting"], ["chat-main-r1-m0"], [{ id: "chat-main-r0-m0", state: "eligible" }]],
    ["nothing Ready: an empty list", ["unschedulable", "crashloop"], [], []],
  ])("%s", (_name, states, draining, expected) => {
    const input = routed(states.length);
    const pods = observed(input, states).pods;
    expect(buildEndpointList(input, pods, new Set(draining)).map(({ id, state }) => ({ id, state }))).toEqual(expected);
  });

  it.each<[string, ReturnType<typeof routed>, V1Pod[], RouterEndpoint[]]>([
    [
      "aggregated vLLM: pod address and engine port, role server",
      routed(1),
      [observedPod(routed(1), 0)],
      [{ id: "chat-main-r0-m0", url: "http://127.0.1.1:8000", role: "server", state: "eligible" }],
    ],
    [
      "vLLM PD: prefill and decode roles, no bootstrap port",
      disaggregated("vllm", 1, 1),
      [observedPod(disaggregated("vllm", 1, 1), 0, "ready", "decode"), observedPod(disaggregated("vllm", 1, 1), 0, "ready", "prefill")],
      [
        { id: "chat-decode-r0-m0", url: "http://127.0.3.1:8000", role: "decode", state: "eligible" },
        { id: "chat-prefill-r0-m0", url: "http://127.0.2.1:8000", role: "prefill", state: "eligible" },
      ],
    ],
    [
      "SGLang PD: prefill carries the bootstrap port 8998, engine port 30000",
      disaggregated("sglang", 1, 1),
      [observedPod(disaggregated("sglang", 1, 1), 0, "ready", "prefill"), observedPod(disaggregated("sglang", 1, 1), 0, "ready", "decode")],
      [
        { id: "chat-decode-r0-m0", url: "http://127.0.3.1:30000", role: "decode", state: "eligible" },
        { id: "chat-prefill-r0-m0", url: "http://127.0.2.1:30000", role: "prefill", state: "eligible", bootstrapPort: 8998 },
      ],
    ],
  ])("%s", (_name, input, pods, expected) => {
    expect(buildEndpointList(input, pods)).toEqual(expected);
  });

  it("external DP: every rank's pod is an endpoint with its rank; each with its rank", () => {
    const input = aggregated(1, {
      router: { kind: "builtin" },
      roles: [{ name: "main", size: 2, resources: { gpus: 1 }, parallelism: { data: 2, dataLocal: 1, externalDP: true } }],
    });
    const pods = renderInstancePods(input, "main", 0).map((pod, i) => ({
      ...pod,
      status: { podIP: `127.0.1.${i + 1}`, conditions: [{ type: "Ready", status: "True" }] },
    }));
    expect(buildEndpointList(input, pods)).toEqual([
      { id: "chat-main-r0-m0", url: "http://127.0.1.1:8000", role: "server", rank: 0, state: "eligible" },
      { id: "chat-main-r0-m1", url: "http://127.0.1.2:8000", role: "server", rank: 1, state: "eligible" },
    ]);
  });

  it("a pod without an address or without the serving label is left out", () => {
    const input = routed(2);
    const [a, b] = observed(input, ["ready", "ready"]).pods;
    delete a!.status!.podIP;
    b!.metadata!.labels!["berth.dev/serving"] = "false";
    expect(buildEndpointList(input, [a!, b!])).toEqual([]);
  });

  it("equal clusters give equal bodies (order-independent)", () => {
    const input = routed(2);
    const pods = observed(input, ["ready", "ready"]).pods;
    const one = endpointsHash({ endpoints: buildEndpointList(input, pods) });
    expect(endpointsHash({ endpoints: buildEndpointList(input, [...pods].reverse()) })).toBe(one);
    expect(endpointsHash({ endpoints: buildEndpointList(input, pods, new Set(["chat-main-r1-m0"])) })).not.toBe(one);
  });
});

describe("routersAcknowledged", () => {
  const input = routed(1);
  it.each<[string, Array<"ready" | "starting" | "terminating">, (pods: V1Pod[]) => Array<[string, string]>, { acked: number; ready: number }]>([
    ["no acknowledgement yet", ["ready"], () => [], { acked: 0, ready: 1 }],
    ["the current hash acknowledged", ["ready"], (pods) => [[routerAckKey(pods[0]!), "H"]], { acked: 1, ready: 1 }],
    ["an older list acknowledged", ["ready"], (pods) => [[routerAckKey(pods[0]!), "OLD"]], { acked: 0, ready: 1 }],
    ["a router pod not Ready is not waited for", ["ready", "starting"], (pods) => [[routerAckKey(pods[0]!), "H"]], { acked: 1, ready: 1 }],
    ["a second Ready router pod must acknowledge too", ["ready", "ready"], (pods) => [[routerAckKey(pods[0]!), "H"]], { acked: 1, ready: 2 }],
  ])("%s", (_name, states, acks, expected) => {
    const pods = withRouter(input, observed(input, ["ready"]), { pods: states }).routerPods;
    expect(routersAcknowledged(pods, new Map(acks(pods)), "H")).toEqual(expected);
  });

  it("a restarted router container needs the list again (its ack key changes)", () => {
    const [pod] = withRouter(input, observed(input, ["ready"])).routerPods;
    const before = routerAckKey(pod!);
    pod!.status!.containerStatuses![0]!.restartCount = 1;
    expect(routerAckKey(pod!)).not.toBe(before);
  });
});

describe("buildEndpointList of multi-host instances (size 2)", () => {
  const input = aggregated(2, { router: { kind: "builtin" }, roles: tp16(2).deployment.spec.roles });
  it.each<[string, Array<MemberState | null>, Array<MemberState | null>, string[]]>([
    ["both groups whole: each leader (only) is an endpoint", ["ready", "ready"], ["ready", "ready"], ["chat-main-r0-m0", "chat-main-r1-m0"]],
    ["a lost follower withdraws its leader at once", ["ready", "ready"], ["ready", null], ["chat-main-r0-m0"]],
    ["a terminating follower withdraws its leader", ["ready", "terminating"], ["ready", "ready"], ["chat-main-r1-m0"]],
    ["a restarted follower withdraws its leader", ["ready", "restarted"], ["ready", "ready"], ["chat-main-r1-m0"]],
    ["a follower not Ready yet: the leader waits", ["ready", "starting"], ["ready", "ready"], ["chat-main-r1-m0"]],
  ])("%s", (_name, r0, r1, ids) => {
    const pods = [...groupPods(input, 0, r0), ...groupPods(input, 1, r1)];
    expect(buildEndpointList(input, pods).map((e) => e.id)).toEqual(ids);
  });
});

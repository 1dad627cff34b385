// Pure placement: GPU capacity, nodeSelector, taints, cpu/memory/pods, and the scheduler's own
// FailedScheduling wording.
import { describe, expect, it } from "vitest";
import { parseQuantity, podRequests, schedulePod, type PlacedPod, type PodSpecForScheduling, type SchedulingNode } from "../../../k8s/sim/scheduler.ts";

const node = (name: string, gpuType: string, gpus: number, extra: Partial<SchedulingNode> = {}): SchedulingNode => ({
  name,
  labels: { "berth.dev/gpu-type": gpuType },
  allocatable: { cpu: "64", memory: "512Gi", pods: "110", "nvidia.com/gpu": String(gpus) },
  ...extra,
});

const pod = (gpus: number, extra: Partial<PodSpecForScheduling> = {}): PodSpecForScheduling => ({
  containers: [{ resources: gpus > 0 ? { limits: { "nvidia.com/gpu": String(gpus) }, requests: { "nvidia.com/gpu": String(gpus) } } : {} }],
  ...extra,
});

const H100 = "nvidia-h100-80gb";
const two = [node("gpu-a", H100, 8), node("gpu-b", H100, 8)];
const on = (nodeName: string, gpus: number): PlacedPod => ({ nodeName, spec: pod(gpus) });

describe("quantities", () => {
  it.each([
    ["250m", 0.25],
    ["2", 2],
    ["64Gi", 64 * 2 ** 30],
    ["1k", 1000],
    ["1.5", 1.5],
    ["1e3", 1000],
    [8, 8],
  ])("%j is %d", (text, value) => {
    expect(parseQuantity(text)).toBe(value);
  });

  it("rejects nonsense", () => {
    expect(() => parseQuantity("lots")).toThrow(/quantities must match/);
  });

  it("counts limits as requests for extended resources and takes the largest init container", () => {
    expect(podRequests({ containers: [{ resources: { limits: { "nvidia.com/gpu": "2" } } }, { resources: { requests: { cpu: "500m" } } }], initContainers: [{ resources: { requests: { cpu: "2" } } }] })).toEqual({
      "nvidia.com/gpu": 2,
      cpu: 2,
    });
  });
});

describe("placement", () => {
  it.each<[string, PodSpecForScheduling, SchedulingNode[], PlacedPod[], string]>([
    ["the least allocated node", pod(2), two, [on("gpu-a", 4)], "gpu-b"],
    ["by name when tied", pod(2), two, [], "gpu-a"],
    ["the only node with room", pod(6), two, [on("gpu-a", 2), on("gpu-b", 3)], "gpu-a"],
    ["the node of the selected GPU type", pod(1, { nodeSelector: { "berth.dev/gpu-type": "nvidia-l4-24gb" } }), [...two, node("l4", "nvidia-l4-24gb", 1)], [], "l4"],
    ["a node whose taint the pod tolerates", pod(1, { tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }] }), [node("t", H100, 8, { taints: [{ key: "nvidia.com/gpu", effect: "NoSchedule" }] })], [], "t"],
    ["a GPU-less pod anywhere", pod(0), two, [on("gpu-a", 8), on("gpu-b", 8)], "gpu-a"],
  ])("picks %s", (_name, spec, nodes, placed, expected) => {
    expect(schedulePod(spec, nodes, placed)).toEqual({ node: expected });
  });

  it.each<[string, PodSpecForScheduling, SchedulingNode[], PlacedPod[], string]>([
    [
      "too many GPUs everywhere",
      pod(16),
      two,
      [],
      "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
    ],
    [
      "GPUs taken",
      pod(4),
      two,
      [on("gpu-a", 6), on("gpu-b", 6)],
      "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
    ],
    [
      "a GPU type no node has",
      pod(2, { nodeSelector: { "berth.dev/gpu-type": "nvidia-b200-180gb" } }),
      two,
      [],
      "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
    ],
    [
      "mixed reasons, counted and sorted",
      pod(4, { nodeSelector: { "berth.dev/gpu-type": H100 } }),
      [...two, node("l4", "nvidia-l4-24gb", 4)],
      [on("gpu-a", 8), on("gpu-b", 6)],
      "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.",
    ],
    [
      "an untolerated taint",
      pod(1),
      [node("t", H100, 8, { taints: [{ key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" }] })],
      [],
      "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ],
    [
      "cpu and GPUs short on the same node",
      { containers: [{ resources: { requests: { cpu: "100", "nvidia.com/gpu": "9" } } }] },
      [node("gpu-a", H100, 8)],
      [],
      "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ],
    [
      "a cordoned node",
      pod(1),
      [node("gpu-a", H100, 8, { unschedulable: true })],
      [],
      "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ],
    ["no nodes at all", pod(1), [], [], "no nodes available to schedule pods"],
  ])("refuses %s", (_name, spec, nodes, placed, message) => {
    expect(schedulePod(spec, nodes, placed)).toEqual({ message });
  });

  it("counts pods against the node's pod limit", () => {
    const full = node("small", H100, 8, { allocatable: { pods: "1", "nvidia.com/gpu": "8" } });
    expect(schedulePod(pod(1), [full], [on("small", 1)])).toEqual({
      message: "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    });
  });
});

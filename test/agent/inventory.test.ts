// computeInventory (pure): GPUs per node, free = allocatable − requests of live pods on it; the
// pods' sums taken page by page (the heartbeat's paginated list) give the same inventory.
import type { V1Node, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { addGpuUse, computeInventory, inventoryFromUse } from "../../src/agent/inventory.ts";

const node = (name: string, gpus: number, gpuType?: string): V1Node => ({
  metadata: { name, labels: gpuType ? { "berth.dev/gpu-type": gpuType } : {} },
  status: { capacity: { "nvidia.com/gpu": String(gpus) }, allocatable: { "nvidia.com/gpu": String(gpus) } },
});
const pod = (nodeName: string | undefined, gpus: number, phase = "Running"): V1Pod => ({
  spec: { nodeName, containers: [{ name: "engine", resources: { requests: { "nvidia.com/gpu": String(gpus) } } }] },
  status: { phase },
});

describe("computeInventory", () => {
  it.each<[string, V1Pod[], number]>([
    ["no pods", [], 8],
    ["running pods hold their GPUs", [pod("gpu-a", 2), pod("gpu-a", 1, "Pending")], 5],
    ["finished pods and other nodes do not", [pod("gpu-a", 2, "Succeeded"), pod("gpu-a", 2, "Failed"), pod("gpu-b", 4)], 8],
    ["unscheduled pods do not", [pod(undefined, 4)], 8],
  ])("%s", (_name, pods, free) => {
    expect(computeInventory([node("gpu-a", 8, "nvidia-h100-80gb")], pods).nodes).toEqual([
      { name: "gpu-a", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: free },
    ]);
  });

  it("leaves gpuType out on nodes without the label", () => {
    expect(computeInventory([node("cpu-a", 0)], []).nodes).toEqual([{ name: "cpu-a", gpuCapacity: 0, gpuAllocatable: 0, gpuFree: 0 }]);
  });

  it("sums pods page by page to what the whole list gives", () => {
    const nodes = [node("gpu-a", 8), node("gpu-b", 8)];
    const pods = [pod("gpu-a", 2), pod("gpu-b", 4), pod("gpu-a", 1, "Failed"), pod("gpu-a", 3), pod(undefined, 2)];
    const used = new Map<string, number>();
    for (let i = 0; i < pods.length; i += 2) addGpuUse(used, pods.slice(i, i + 2));
    expect(used).toEqual(new Map([["gpu-a", 5], ["gpu-b", 4]]));
    expect(inventoryFromUse(nodes, used)).toEqual(computeInventory(nodes, pods));
    expect(inventoryFromUse(nodes, used).nodes.map((n) => n.gpuFree)).toEqual([3, 4]);
  });
});

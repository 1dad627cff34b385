// Inventory (pure): Nodes and pods → the heartbeat's per-node GPU counts. Free GPUs are the
// node's allocatable minus the requests of its non-terminated pods. The pods' side is a running
// sum (node → GPUs requested), so a caller can read the pods page by page and keep only the sums.
import type { V1Node, V1Pod } from "@kubernetes/client-node";
import { GPU_TYPE_LABEL } from "../../k8s/render/index.ts";
import type { Inventory } from "../domain/cluster.ts";

const GPU_RESOURCES = ["nvidia.com/gpu", "amd.com/gpu"];

const gpuCount = (resources: Record<string, string> | undefined) =>
  GPU_RESOURCES.reduce((sum, key) => sum + Number.parseInt(resources?.[key] ?? "0", 10), 0);

/** GPUs requested per node name, summed over the pods seen so far. */
export type GpuUse = Map<string, number>;

/** Adds these pods' GPU requests to `used` (bound, non-terminated pods only); returns it. */
export function addGpuUse(used: GpuUse, pods: readonly V1Pod[]): GpuUse {
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    if (!node || pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") continue;
    const requested = (pod.spec?.containers ?? []).reduce((sum, c) => sum + gpuCount(c.resources?.requests ?? c.resources?.limits), 0);
    used.set(node, (used.get(node) ?? 0) + requested);
  }
  return used;
}

export function inventoryFromUse(nodes: readonly V1Node[], used: GpuUse): Inventory {
  return {
    nodes: nodes.map((node) => {
      const name = node.metadata!.name!;
      const allocatable = gpuCount(node.status?.allocatable);
      const gpuType = node.metadata?.labels?.[GPU_TYPE_LABEL];
      return {
        name,
        ...(gpuType ? { gpuType } : {}),
        gpuCapacity: gpuCount(node.status?.capacity),
        gpuAllocatable: allocatable,
        gpuFree: Math.max(0, allocatable - (used.get(name) ?? 0)),
      };
    }),
  };
}

export const computeInventory = (nodes: readonly V1Node[], pods: readonly V1Pod[]): Inventory => inventoryFromUse(nodes, addGpuUse(new Map(), pods));

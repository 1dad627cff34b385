// Inventory (pure): Nodes and pods → the heartbeat's per-node GPU counts. Free GPUs are the
// node's allocatable minus the requests of its non-terminated pods.
import type { V1Node, V1Pod } from "@kubernetes/client-node";
import { GPU_TYPE_LABEL } from "../../k8s/render/index.ts";
import type { Inventory } from "../domain/cluster.ts";

const GPU_RESOURCES = ["nvidia.com/gpu", "amd.com/gpu"];

const gpuCount = (resources: Record<string, string> | undefined) =>
  GPU_RESOURCES.reduce((sum, key) => sum + Number.parseInt(resources?.[key] ?? "0", 10), 0);

export function computeInventory(nodes: V1Node[], pods: V1Pod[]): Inventory {
  const used = new Map<string, number>();
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    if (!node || pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") continue;
    const requested = (pod.spec?.containers ?? []).reduce((sum, c) => sum + gpuCount(c.resources?.requests ?? c.resources?.limits), 0);
    used.set(node, (used.get(node) ?? 0) + requested);
  }
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

// The Node object a berth node registers for one virtual GPU machine (pure): GPU capacity as the
// NVIDIA device plugin advertises it (`nvidia.com/gpu`, or `amd.com/gpu`), the labels NVIDIA GPU
// Feature Discovery puts on a node (nvidia.com/gpu.product, .count, .memory in MiB, .present;
// https://github.com/NVIDIA/k8s-device-plugin, docs/gpu-feature-discovery), berth's own
// GPU-type label, and the conditions a healthy kubelet posts.
import { gpuProfile, type GpuType } from "../../src/domain/gpu-profiles.ts";
import { GPU_TYPE_LABEL } from "../render/names.ts";
import type { KubeObject } from "../sim/objects.ts";

export interface VirtualNode {
  name: string;
  gpuType: GpuType;
  gpus: number;
  /** The node's InternalIP (inside the cluster's network). */
  address: string;
  cpu?: string;
  memory?: string;
}

/** GFD's product names are the driver's, spaces as dashes (e.g. NVIDIA-H100-80GB-HBM3). */
const PRODUCTS: Partial<Record<GpuType, string>> = {
  "nvidia-h100-80gb": "NVIDIA-H100-80GB-HBM3",
  "nvidia-h100-pcie-80gb": "NVIDIA-H100-PCIe",
  "nvidia-h200-141gb": "NVIDIA-H200",
  "nvidia-b200-180gb": "NVIDIA-B200",
  "nvidia-a100-40gb": "NVIDIA-A100-SXM4-40GB",
  "nvidia-a100-80gb": "NVIDIA-A100-SXM4-80GB",
  "nvidia-l40s-48gb": "NVIDIA-L40S",
  "nvidia-l4-24gb": "NVIDIA-L4",
  "nvidia-a10g-24gb": "NVIDIA-A10G",
};

export const KUBELET_VERSION = "v1.34.4-berth-node";

export function nodeConditions(now: string) {
  const condition = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, lastHeartbeatTime: now, lastTransitionTime: now });
  return [
    condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    condition("Ready", "True", "KubeletReady", "kubelet is posting ready status (berth node: pods run as processes)"),
  ];
}

export function nodeObject(node: VirtualNode, now: string): KubeObject {
  const facts = gpuProfile(node.gpuType);
  const gpuResource = facts.vendor === "amd" ? "amd.com/gpu" : "nvidia.com/gpu";
  const capacity = { cpu: node.cpu ?? "64", memory: node.memory ?? "512Gi", pods: "110", "ephemeral-storage": "1Ti", [gpuResource]: String(node.gpus) };
  const product = PRODUCTS[node.gpuType];
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: node.name,
      labels: {
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        [GPU_TYPE_LABEL]: node.gpuType,
        ...(facts.vendor === "nvidia" && {
          "nvidia.com/gpu.present": "true",
          "nvidia.com/gpu.count": String(node.gpus),
          // The driver reports a little less than the marketing size; GFD publishes MiB.
          "nvidia.com/gpu.memory": String(Math.round(facts.memoryGb * 1019.5)),
          ...(product && { "nvidia.com/gpu.product": product }),
        }),
      },
    },
    spec: {},
    status: {
      capacity,
      allocatable: capacity,
      conditions: nodeConditions(now),
      addresses: [
        { type: "InternalIP", address: node.address },
        { type: "Hostname", address: node.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: "",
        systemUUID: "",
        bootID: "",
        kernelVersion: "",
        osImage: "berth node (pods run as processes on this machine)",
        containerRuntimeVersion: "berth-node://0.1.0",
        kubeletVersion: KUBELET_VERSION,
        kubeProxyVersion: "",
        operatingSystem: "linux",
        architecture: "amd64",
      },
    },
  };
}

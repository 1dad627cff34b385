// A real control plane with berth's virtual GPU nodes under it: each `berth node` runs inside
// the cluster's network namespace with its own node identity, node i answering at
// 10.244.<i+1>.1 and handing out pod addresses 10.244.<i+1>.2 upward. fetch() in this process
// reaches pod and Service addresses (cluster-fetch.ts) while the cluster runs.
import * as k8s from "@kubernetes/client-node";
import type { GpuType } from "../../../src/domain/gpu-profiles.ts";
import { BERTH_BIN } from "../berth-process.ts";
import { routeFetchInto } from "./cluster-fetch.ts";
import { type RealCluster, startRealCluster } from "./control-plane.ts";
import { logTail, type NamespacedProcess, stopProcess } from "./processes.ts";

export interface GpuNodeSpec {
  name: string;
  gpus: number;
  gpuType?: GpuType;
}

export interface RealGpuCluster {
  cluster: RealCluster;
  /** The admin's kubeconfig for this process (through the relay). */
  kubeconfigPath: string;
  kubeConfig: k8s.KubeConfig;
  nodes: NamespacedProcess[];
  stop(): Promise<void>;
}

export async function startRealGpuCluster(options: { nodes: GpuNodeSpec[]; simEngineFlags?: string[]; timeScale?: number }): Promise<RealGpuCluster> {
  const cluster = await startRealCluster();
  const nodes: NamespacedProcess[] = [];
  let restoreFetch: (() => void) | undefined;
  const stop = async () => {
    // A node that died before its time is what a failed test most needs to know: its log says why.
    for (const node of nodes) {
      if (node.child.exitCode !== null || node.child.signalCode !== null) process.stderr.write(`berth node ${node.name} exited early (${node.child.exitCode ?? node.child.signalCode}):\n${logTail(node, 60)}\n`);
    }
    // SIGTERM stops each node's pods as deletes do; then the control plane goes.
    await Promise.all(nodes.map((node) => stopProcess(node, 15_000)));
    restoreFetch?.();
    await cluster.stop();
  };
  try {
    for (const [i, spec] of options.nodes.entries()) {
      const credentials = await cluster.kubeconfigsFor(`node-${spec.name}`, { user: `system:node:${spec.name}`, groups: ["system:nodes"] });
      const subnet = `10.244.${i + 1}`;
      nodes.push(
        cluster.startInside(
          `node-${spec.name}`,
          process.execPath,
          [
            BERTH_BIN, "node", "--name", spec.name, "--address", `${subnet}.1`, "--pod-addresses", `${subnet}.2-${subnet}.254`,
            "--gpus", String(spec.gpus), "--gpu-type", spec.gpuType ?? "nvidia-h100-80gb", "--kubeconfig", credentials.inside,
            "--time-scale", String(options.timeScale ?? 1), ...(options.simEngineFlags ?? []).map((flag) => `--sim-engine-flag=${flag}`),
          ],
          { BERTH_FROM_SOURCE: process.env.BERTH_FROM_SOURCE ?? "1" },
        ),
      );
    }
    const kubeConfig = new k8s.KubeConfig();
    kubeConfig.loadFromFile(cluster.admin.outside);
    const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const list = await core.listNode();
      const ready = list.items.filter((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).length;
      if (ready === options.nodes.length) break;
      const dead = nodes.find((n) => n.child.exitCode !== null);
      if (dead || Date.now() > deadline) throw new Error(`nodes not Ready (${ready}/${options.nodes.length}):\n${nodes.map((n) => logTail(n)).join("\n")}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await cluster.startProxy(options.nodes[0]!.name);
    restoreFetch = routeFetchInto(cluster.relaySocket);
    return { cluster, kubeconfigPath: cluster.admin.outside, kubeConfig, nodes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

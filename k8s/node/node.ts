// A berth node: one virtual GPU machine joined to any Kubernetes cluster. It registers its Node
// and keeps its Lease, then runs the pods the cluster's scheduler binds to it as processes on
// this machine (the kubelet of k8s/sim, talking to the apiserver through client-node), each bound
// to its own pod address from the node's range: in a network namespace where that range is
// local, the cluster's kube-proxy routes Services to them like any pods. It serves their
// container logs on port 10250 for `kubectl logs` (kubelet-server.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { AddressPool } from "../sim/ip-pool.ts";
import { Kubelet } from "../sim/kubelet.ts";
import type { Programs } from "../sim/program.ts";
import { registerNode } from "./heartbeat.ts";
import { kubeKubeletCluster } from "./kube-kubelet-cluster.ts";
import { startKubeletServer } from "./kubelet-server.ts";
import type { VirtualNode } from "./node-object.ts";

export interface NodeOptions {
  kubeConfig: k8s.KubeConfig;
  node: VirtualNode;
  /** The first and last pod address this node hands out. */
  podAddresses: { first: string; last: string };
  programs: Programs;
  /** Pod sandboxes go under `<workDir>/pods`; default a new temporary directory, removed on stop. */
  workDir?: string;
  /** Multiplies probe periods and backoffs (default 1). */
  timeScale?: number;
  log?: (line: string) => void;
}

export interface RunningNode {
  kubelet: Kubelet;
  stop(options?: { now?: boolean }): Promise<void>;
}

export async function startNode(options: NodeOptions): Promise<RunningNode> {
  const log = options.log ?? (() => {});
  const ownWorkDir = options.workDir === undefined;
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), "berth-node-"));
  const heartbeat = await registerNode(options.kubeConfig, options.node, log);
  const cluster = kubeKubeletCluster(options.kubeConfig, options.node.name, log);
  // Every pod learns where the apiserver is as a real kubelet tells it: the `kubernetes` Service.
  const kubernetes = await options.kubeConfig
    .makeApiClient(k8s.CoreV1Api)
    .readNamespacedService({ namespace: "default", name: "kubernetes" })
    .catch(() => undefined);
  const port = kubernetes?.spec?.ports?.find((p) => p.name === "https")?.port;
  const podEnv: Record<string, string> = kubernetes?.spec?.clusterIP && port ? { KUBERNETES_SERVICE_HOST: kubernetes.spec.clusterIP, KUBERNETES_SERVICE_PORT: String(port) } : {};
  const addresses = new AddressPool(options.podAddresses.first, options.podAddresses.last);
  const kubelet = new Kubelet({
    cluster,
    nodes: [{ name: options.node.name, gpuType: options.node.gpuType }],
    programs: options.programs,
    addresses,
    workDir,
    timeScale: options.timeScale ?? 1,
    hostIP: options.node.address,
    podEnv,
    isolatePods: true,
  });
  kubelet.start();
  await cluster.synced();
  // `kubectl logs`: the API server asks the node for container logs at its address.
  const server = await startKubeletServer({
    kubeConfig: options.kubeConfig,
    nodeName: options.node.name,
    address: options.node.address,
    logs: kubelet,
    pod: (namespace, name) => cluster.pod(namespace, name),
  });
  let stopped: Promise<void> | undefined;
  return {
    kubelet,
    stop: (stopOptions = {}) =>
      (stopped ??= (async () => {
        heartbeat.stop();
        await server.close();
        await kubelet.stop(stopOptions);
        cluster.stop();
        addresses.close();
        if (ownWorkDir) rmSync(workDir, { recursive: true, force: true });
      })()),
  };
}

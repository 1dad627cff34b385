// The simulated cluster (docs/design.md §9): a Kubernetes-API-compatible server with a process kubelet.
// `startSimCluster` is what `berth up` and the tests start; the rest is exported for tests and tools.
export { berthPrograms, startSimCluster, type SimCluster, type SimClusterOptions, type SimNode } from "./cluster.ts";
export { kubeConfigOptions, kubeconfigFor, writeKubeconfig } from "./kubeconfig.ts";
export type { ObservedRequest } from "./api-server.ts";
export type { Programs } from "./program.ts";
export { SIM_STORAGE_CLASSES } from "./volumes.ts";

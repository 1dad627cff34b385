// Observe: what exists in the cluster for one deployment, selected by the agent's labels.
// A relist per reconcile pass (no informer yet); a missing namespace observes as empty.
import type { V1Pod, V1Service } from "@kubernetes/client-node";
import { LABELS, MANAGED_BY } from "../../k8s/render/index.ts";
import { type Kube, statusCodeOf } from "./kube.ts";

export interface Observed {
  namespaceExists: boolean;
  pods: V1Pod[];
  services: V1Service[];
}

export const selectorOf = (deploymentId: string) => `${LABELS.managedBy}=${MANAGED_BY},${LABELS.deploymentId}=${deploymentId}`;

export async function observeDeployment(kube: Kube, namespace: string, deploymentId: string): Promise<Observed> {
  try {
    await kube.core.readNamespace({ name: namespace });
  } catch (error) {
    if (statusCodeOf(error) === 404) return { namespaceExists: false, pods: [], services: [] };
    throw error;
  }
  const labelSelector = selectorOf(deploymentId);
  const [pods, services] = await Promise.all([
    kube.core.listNamespacedPod({ namespace, labelSelector }),
    kube.core.listNamespacedService({ namespace, labelSelector }),
  ]);
  return { namespaceExists: true, pods: pods.items, services: services.items };
}

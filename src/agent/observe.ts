// Observe: what exists in the cluster for one deployment, selected by the agent's labels.
// The agent reads it from its informers' cache (`observeFromCache` in cluster-cache.ts);
// `observeDeployment` here is the same observation by relisting (a missing namespace observes as
// empty), kept as the reference the cache is checked against and as the benchmark's baseline.
// Router pods (owned by the router Deployment, labelled berth.dev/component=router) are kept
// apart from engine pods: the planner never creates or deletes them one by one.
import type { V1NetworkPolicy } from "@kubernetes/client-node";
import type {
  V1ConfigMap,
  V1PersistentVolumeClaim,
  V1Deployment,
  V1Pod,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
} from "@kubernetes/client-node";
import { LABELS, MANAGED_BY } from "../../k8s/render/index.ts";
import { type Kube, statusCodeOf } from "./kube.ts";

export interface Observed {
  namespaceExists: boolean;
  /** The namespace's labels (Pod Security among them); empty when it does not exist. */
  namespaceLabels: Record<string, string>;
  /** Names of the namespace-wide NetworkPolicies berth applies (no deployment label) that exist. */
  namespacePolicies: string[];
  /** The deployment's own NetworkPolicies. */
  networkPolicies: V1NetworkPolicy[];
  /** Engine pods (every role). */
  pods: V1Pod[];
  services: V1Service[];
  /** Pods of the router Deployment. */
  routerPods: V1Pod[];
  deployments: V1Deployment[];
  configMaps: V1ConfigMap[];
  secrets: V1Secret[];
  serviceAccounts: V1ServiceAccount[];
  roles: V1Role[];
  roleBindings: V1RoleBinding[];
  /** vLLM EPD's encoder-cache claim. */
  claims: V1PersistentVolumeClaim[];
}

export const emptyObserved = (namespaceExists: boolean): Observed => ({
  namespaceExists,
  namespaceLabels: {},
  namespacePolicies: [],
  networkPolicies: [],
  pods: [],
  services: [],
  routerPods: [],
  deployments: [],
  configMaps: [],
  secrets: [],
  serviceAccounts: [],
  roles: [],
  roleBindings: [],
  claims: [],
});

export const selectorOf = (deploymentId: string) => `${LABELS.managedBy}=${MANAGED_BY},${LABELS.deploymentId}=${deploymentId}`;

export const isRouterObject = (object: { metadata?: { labels?: Record<string, string> } }) =>
  object.metadata?.labels?.[LABELS.component] === "router";

/** Every object the deployment owns, for "is anything left?" before deletion is confirmed. */
export const observedCount = (o: Observed) =>
  o.pods.length + o.services.length + o.routerPods.length + o.deployments.length + o.configMaps.length + o.secrets.length +
  o.serviceAccounts.length + o.roles.length + o.roleBindings.length + o.claims.length + o.networkPolicies.length;

/**
 * @param routerKinds also list the kinds only a router brings (Deployment, ConfigMap, Secret,
 *   RBAC): needed when the spec has a router or the deployment is being deleted; skipped
 *   otherwise, so a routerless pass costs three lists (pods, Services, claims), not nine.
 */
export async function observeDeployment(kube: Kube, namespace: string, deploymentId: string, routerKinds = true): Promise<Observed> {
  let namespaceLabels: Record<string, string>;
  try {
    namespaceLabels = (await kube.core.readNamespace({ name: namespace })).metadata?.labels ?? {};
  } catch (error) {
    if (statusCodeOf(error) === 404) return emptyObserved(false);
    throw error;
  }
  const q = { namespace, labelSelector: selectorOf(deploymentId) };
  const none = Promise.resolve({ items: [] });
  const policies = await kube.networking.listNamespacedNetworkPolicy({ namespace, labelSelector: `${LABELS.managedBy}=${MANAGED_BY}` });
  const [pods, services, claims, deployments, configMaps, secrets, serviceAccounts, roles, roleBindings] = await Promise.all([
    kube.core.listNamespacedPod(q),
    kube.core.listNamespacedService(q),
    kube.core.listNamespacedPersistentVolumeClaim(q),
    routerKinds ? kube.apps.listNamespacedDeployment(q) : none,
    routerKinds ? kube.core.listNamespacedConfigMap(q) : none,
    routerKinds ? kube.core.listNamespacedSecret(q) : none,
    routerKinds ? kube.core.listNamespacedServiceAccount(q) : none,
    routerKinds ? kube.rbac.listNamespacedRole(q) : none,
    routerKinds ? kube.rbac.listNamespacedRoleBinding(q) : none,
  ]);
  return {
    namespaceExists: true,
    namespaceLabels,
    namespacePolicies: policies.items.filter((p) => p.metadata?.labels?.[LABELS.deploymentId] === undefined).map((p) => p.metadata!.name!),
    networkPolicies: policies.items.filter((p) => p.metadata?.labels?.[LABELS.deploymentId] === deploymentId),
    pods: pods.items.filter((p) => !isRouterObject(p)),
    services: services.items,
    routerPods: pods.items.filter(isRouterObject),
    deployments: deployments.items,
    configMaps: configMaps.items,
    secrets: secrets.items,
    serviceAccounts: serviceAccounts.items,
    roles: roles.items,
    roleBindings: roleBindings.items,
    claims: claims.items,
  };
}

// The Kubernetes clients the agent uses, built once from a KubeConfig at the entry point.
import { AppsV1Api, CoordinationV1Api, CoreV1Api, type KubeConfig, KubernetesObjectApi, NetworkingV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";

export interface Kube {
  /** The configuration the clients were built from: informers make their own watches from it. */
  kc: KubeConfig;
  core: CoreV1Api;
  /** The router Deployment. */
  apps: AppsV1Api;
  /** External routers' discovery Role and RoleBinding. */
  rbac: RbacAuthorizationV1Api;
  /** Project namespaces' NetworkPolicies. */
  networking: NetworkingV1Api;
  /** The leader election Lease (`berth agent --leader-elect`). */
  coordination: CoordinationV1Api;
  objects: KubernetesObjectApi;
}

export function createKube(kc: KubeConfig): Kube {
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    rbac: kc.makeApiClient(RbacAuthorizationV1Api),
    networking: kc.makeApiClient(NetworkingV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    objects: KubernetesObjectApi.makeApiClient(kc),
  };
}

/** client-node 1.x throws ApiException with `.code`. */
export const statusCodeOf = (error: unknown): number | undefined =>
  typeof (error as { code?: unknown })?.code === "number" ? (error as { code: number }).code : undefined;

/**
 * client-node 1.x refuses a plain `http://` server unless skipTLSVerify is set ("HTTP protocol is
 * not allowed…"), and kubeconfig files for loopback clusters (the simulated one) rarely say so:
 * there is no TLS to verify on such a server, so mark it.
 */
export function allowPlainHttp(kc: KubeConfig): void {
  kc.clusters = kc.clusters.map((cluster) => (cluster.server.startsWith("http://") ? { ...cluster, skipTLSVerify: true } : cluster));
}

// What the simulated cluster cannot do, answered as a metav1.Status that says why and what to
// use instead, never a bare 404: pod processes run on this machine without containers, so
// there is nothing to exec into, attach to or forward a port of; there is no proxy and no
// metrics server. kubectl prints the message ("Error from server (NotImplemented): …").
import { ApiError } from "./objects.ts";

export interface Unsupported {
  code: number;
  reason: string;
  message: string;
}

const NO_CONTAINERS = "the simulated cluster runs each container as a plain process on this machine, not in a container runtime";
const ADDRESSES = "pod and Service addresses (127.0.1.x and 127.0.200.x) are reachable from this machine directly";

/** Pod and other subresources, by resource then subresource. */
export const UNSUPPORTED_SUBRESOURCES: Record<string, Record<string, Unsupported>> = {
  pods: {
    exec: {
      code: 501,
      reason: "NotImplemented",
      message: `exec is not supported: ${NO_CONTAINERS}, so there is no container to run a command in; read its output with kubectl logs, or run the command on this machine`,
    },
    attach: {
      code: 501,
      reason: "NotImplemented",
      message: `attach is not supported: ${NO_CONTAINERS}, so there is no container terminal to attach to; follow its output with kubectl logs -f`,
    },
    portforward: {
      code: 501,
      reason: "NotImplemented",
      message: `port-forward is not supported and not needed: ${ADDRESSES}; use the pod IP from kubectl get pod -o wide (curl http://<pod IP>:<port>/) or the Service's ClusterIP`,
    },
    proxy: {
      code: 501,
      reason: "NotImplemented",
      message: `the pod proxy is not supported: ${ADDRESSES}; use the pod IP from kubectl get pod -o wide (curl http://<pod IP>:<port>/)`,
    },
  },
  services: {
    proxy: {
      code: 501,
      reason: "NotImplemented",
      message: `the service proxy is not supported: ${ADDRESSES}; use the Service's ClusterIP from kubectl get service (curl http://<cluster IP>:<port>/)`,
    },
  },
  nodes: {
    proxy: {
      code: 501,
      reason: "NotImplemented",
      message: "the node proxy is not supported: simulated nodes run no kubelet server (no /stats, /metrics or /logs endpoints); pod logs come from kubectl logs",
    },
  },
};

export const METRICS_GROUP = "metrics.k8s.io";

/** Every request under /apis/metrics.k8s.io/<version>/<anything>. */
export const NO_METRICS: Unsupported = {
  code: 501,
  reason: "NotImplemented",
  message:
    "the simulated cluster has no metrics server, so kubectl top and the resource metrics API have no data: simulated pods use no real CPU or memory of their own; read engine metrics from each pod's /metrics endpoint (its pod IP from kubectl get pod -o wide)",
};

export function unsupportedError(what: Unsupported): ApiError {
  return new ApiError(what.code, what.reason, what.message);
}

/** The Status error for `<resource>/<name>/<subresource>` when the simulator refuses it by design. */
export function unsupportedSubresource(resource: string, subresource: string): ApiError | undefined {
  const entry = UNSUPPORTED_SUBRESOURCES[resource]?.[subresource];
  return entry && unsupportedError(entry);
}

/** Discovery for metrics.k8s.io/v1beta1, so kubectl top asks and prints NO_METRICS instead of "Metrics API not available". */
export function metricsResourceList() {
  const resource = (name: string, kind: string, namespaced: boolean) => ({ name, singularName: "", namespaced, kind, verbs: ["get", "list"] });
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: `${METRICS_GROUP}/v1beta1`,
    resources: [resource("nodes", "NodeMetrics", false), resource("pods", "PodMetrics", true)],
  };
}

export function metricsApiGroup() {
  const version = { groupVersion: `${METRICS_GROUP}/v1beta1`, version: "v1beta1" };
  return { name: METRICS_GROUP, versions: [version], preferredVersion: version };
}

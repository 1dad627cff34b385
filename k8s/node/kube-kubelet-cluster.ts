// The kubelet's view of any kube-apiserver, through client-node and as the node's own identity
// (`system:node:<name>`), so that the Node authorizer and NodeRestriction judge every call as
// they judge a real kubelet's: a watch of the pods bound to this node (field selector
// spec.nodeName), GETs of the Secrets, ConfigMaps and claims those pods use, status PATCHes of
// those pods, the final delete (grace 0, with the pod's uid as precondition), and Events.
import * as k8s from "@kubernetes/client-node";
import type { KubeletCluster } from "../sim/kubelet.ts";
import type { KubeObject } from "../sim/objects.ts";

const MERGE_PATCH = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

function isNotFound(error: unknown): boolean {
  return (error as { code?: number }).code === 404;
}

export interface KubeKubeletCluster extends KubeletCluster {
  /** Resolves once the pod watch has listed. */
  synced(): Promise<void>;
  stop(): void;
}

export function kubeKubeletCluster(kc: k8s.KubeConfig, nodeName: string, log: (line: string) => void = () => {}): KubeKubeletCluster {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const fieldSelector = `spec.nodeName=${nodeName}`;
  const pods = new k8s.ListWatch<k8s.V1Pod>(
    "/api/v1/pods",
    new k8s.Watch(kc),
    () => core.listPodForAllNamespaces({ fieldSelector }),
    false,
    undefined,
    fieldSelector,
  );
  let listed!: () => void;
  const synced = new Promise<void>((resolve) => (listed = resolve));
  pods.on("connect", () => listed());
  pods.on("error", (error) => {
    log(`pod watch failed, restarting: ${String(error)}`);
    setTimeout(() => void pods.start().catch(() => undefined), 1_000).unref();
  });

  return {
    synced: () => synced,
    watchPods(_nodeNames, onPod) {
      const handler = (pod: k8s.V1Pod) => onPod(pod as KubeObject);
      pods.on("add", handler);
      pods.on("update", handler);
      pods.on("delete", handler);
      void pods.start().catch((error) => log(`pod watch did not start: ${String(error)}`));
      return () => {
        pods.off("add", handler);
        pods.off("update", handler);
        pods.off("delete", handler);
        void pods.stop();
      };
    },
    pod: (namespace, name) => pods.get(name, namespace) as KubeObject | undefined,
    async read(resource, namespace, name) {
      try {
        if (resource === "secrets") return (await core.readNamespacedSecret({ namespace, name })) as KubeObject;
        if (resource === "configmaps") return (await core.readNamespacedConfigMap({ namespace, name })) as KubeObject;
        return (await core.readNamespacedPersistentVolumeClaim({ namespace, name })) as KubeObject;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async writePodStatus(pod, status) {
      try {
        await core.patchNamespacedPodStatus({ namespace: pod.metadata.namespace!, name: pod.metadata.name!, body: { status } }, MERGE_PATCH);
      } catch (error) {
        if (isNotFound(error)) return;
        log(`status of ${pod.metadata.namespace}/${pod.metadata.name}: ${String(error)}`);
        throw error;
      }
    },
    async removePod(pod) {
      try {
        await core.deleteNamespacedPod({
          namespace: pod.metadata.namespace!,
          name: pod.metadata.name!,
          gracePeriodSeconds: 0,
          body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } },
        });
      } catch (error) {
        if (!isNotFound(error)) log(`removing ${pod.metadata.namespace}/${pod.metadata.name}: ${String(error)}`);
      }
    },
    event(pod, type, reason, message, fieldPath) {
      const now = new Date();
      const event: k8s.CoreV1Event = {
        metadata: { generateName: `${pod.metadata.name}.`, namespace: pod.metadata.namespace },
        involvedObject: { kind: "Pod", apiVersion: "v1", namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid, ...(fieldPath && { fieldPath }) },
        type,
        reason,
        message,
        source: { component: "kubelet", host: nodeName },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        reportingComponent: "kubelet",
        reportingInstance: nodeName,
      };
      core.createNamespacedEvent({ namespace: pod.metadata.namespace!, body: event }).catch((error) => log(`event ${reason}: ${String(error)}`));
    },
    async serviceAccountToken(pod, request) {
      // The Node authorizer lets a node request tokens only bound to a pod it runs.
      const answer = await core.createNamespacedServiceAccountToken({
        namespace: pod.metadata.namespace!,
        name: ((pod.spec as { serviceAccountName?: string }).serviceAccountName ?? "default"),
        body: {
          spec: {
            audiences: request.audience ? [request.audience] : [],
            expirationSeconds: request.expirationSeconds,
            boundObjectRef: { apiVersion: "v1", kind: "Pod", name: pod.metadata.name, uid: pod.metadata.uid },
          },
        },
      });
      if (!answer.status?.token) throw new Error("TokenRequest answered without a token");
      return answer.status.token;
    },
    stop: () => void pods.stop(),
  };
}

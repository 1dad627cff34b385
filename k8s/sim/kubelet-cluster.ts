// The kubelet's view of the simulated cluster: the registry and store of this process, read and
// written directly (no HTTP), as kubelet.ts's KubeletCluster.
import type { EventRecorder } from "./events.ts";
import type { KubeletCluster } from "./kubelet.ts";
import type { KubeObject } from "./objects.ts";
import type { Registry } from "./registry.ts";
import { resourceOf } from "./resources.ts";
import type { Store } from "./store.ts";

const PODS = resourceOf("pods");

export function simKubeletCluster(registry: Registry, store: Store, recorder: EventRecorder): KubeletCluster {
  return {
    watchPods(nodeNames, onPod) {
      const unsubscribe = store.subscribe((change) => {
        if (change.resource === PODS) onPod(change.object);
      });
      for (const pod of store.list(PODS)) if (nodeNames.has((pod.spec as { nodeName?: string })?.nodeName ?? "")) onPod(pod);
      return unsubscribe;
    },
    pod: (namespace, name) => store.get(PODS, namespace, name),
    read: async (resource, namespace, name) => registry.find(resourceOf(resource), namespace, name),
    writePodStatus: async (pod: KubeObject, status) => {
      await registry.writeStatus(PODS, pod.metadata.namespace, pod.metadata.name!, status, "kubelet");
    },
    removePod: async (pod) => {
      registry.removeNow(PODS, pod.metadata.namespace, pod.metadata.name!);
    },
    event: (pod, type, reason, message, fieldPath) => recorder.record(PODS, pod, type, reason, message, fieldPath),
  };
}

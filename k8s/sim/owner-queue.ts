// What a workload controller (Deployment, Job) reconciles on: every change to one of its
// objects, and every change to a pod it controls (found through the pod's controller
// ownerReference), queued as `<namespace>/<name>`; the objects already stored are queued at start.
import type { ResourceType } from "./resources.ts";
import { resourceOf } from "./resources.ts";
import type { Store } from "./store.ts";
import type { WorkQueue } from "./work-queue.ts";

const PODS = resourceOf("pods");

/** Subscribes the queue to `owners` and their controlled pods; returns the unsubscribe. */
export function queueOwnersAndTheirPods(store: Store, queue: WorkQueue, owners: ResourceType): () => void {
  const unsubscribe = store.subscribe((change) => {
    const { object } = change;
    if (change.resource === owners) queue.add(`${object.metadata.namespace}/${object.metadata.name}`);
    else if (change.resource === PODS) {
      const owner = object.metadata.ownerReferences?.find((ref) => ref.controller && ref.kind === owners.kind);
      if (owner) queue.add(`${object.metadata.namespace}/${owner.name}`);
    }
  });
  for (const object of store.list(owners)) queue.add(`${object.metadata.namespace}/${object.metadata.name}`);
  return unsubscribe;
}

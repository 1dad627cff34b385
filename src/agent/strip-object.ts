// What the informers keep of an object (pure), applied where objects enter them: the list's items
// and each watch event's object, before client-node's ListWatch and the ClusterCache store them.
// metadata.managedFields (server-side apply's field ownership, one entry per manager with a tree
// of every field it set) is often the largest part of an object and the agent never reads it;
// client-go drops it the same way (cache.TransformStripManagedFields,
// https://pkg.go.dev/k8s.io/client-go/tools/cache#TransformStripManagedFields). The agent writes
// with server-side apply, which needs no managedFields from the client.
import type { KubernetesObject } from "@kubernetes/client-node";

/** Drops metadata.managedFields in place (the object is not shared yet); returns the object. */
export function stripForCache<T extends KubernetesObject>(object: T): T {
  if (object?.metadata && "managedFields" in object.metadata) delete object.metadata.managedFields;
  return object;
}

// Apply: executes planned actions. Namespaces and Services by server-side apply (field
// manager berth-agent); pods by create (their spec is immutable); deletes carry the UID the
// planner observed, so a pod recreated meanwhile under the same name is never hit.
// A 404 on delete or a 409 on create means the cluster is already there: not an error.
import { PatchStrategy } from "@kubernetes/client-node";
import { type Kube, statusCodeOf } from "./kube.ts";
import type { Action } from "./plan.ts";

export const FIELD_MANAGER = "berth-agent";

export async function applyAction(kube: Kube, action: Action): Promise<void> {
  try {
    switch (action.kind) {
      case "applyNamespace":
      case "applyService":
        await kube.objects.patch(action.object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
        return;
      case "createPod":
        await kube.core.createNamespacedPod({ namespace: action.object.metadata!.namespace!, body: action.object });
        return;
      case "deletePod":
        await kube.core.deleteNamespacedPod({
          name: action.name,
          namespace: action.namespace,
          body: { preconditions: { uid: action.uid } },
        });
        return;
      case "deleteService":
        await kube.core.deleteNamespacedService({
          name: action.name,
          namespace: action.namespace,
          body: { preconditions: { uid: action.uid } },
        });
        return;
    }
  } catch (error) {
    const code = statusCodeOf(error);
    if ((action.kind === "deletePod" || action.kind === "deleteService") && code === 404) return;
    if (action.kind === "createPod" && code === 409) return;
    throw error;
  }
}

/** Namespace first (everything lives in it), then the rest in order; stops at the first failure. */
export async function applyActions(kube: Kube, actions: Action[]): Promise<void> {
  for (const action of actions) await applyAction(kube, action);
}

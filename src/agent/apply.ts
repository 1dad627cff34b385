// Apply: executes planned actions. Namespaces, NetworkPolicies, Services, claims and router objects by server-side
// apply (field manager berth-agent); pods and the router's token Secret by create (a pod's spec
// is immutable; the token is drawn once and a 409 keeps the one already stored); deletes carry
// the UID the planner observed, so an object recreated meanwhile under the same name is never hit.
// A 404 on delete or a 409 on create means the cluster is already there: not an error.
import { randomBytes } from "node:crypto";
import { PatchStrategy, type V1NetworkPolicy } from "@kubernetes/client-node";
import { type Kube, statusCodeOf } from "./kube.ts";
import type { Action } from "./plan.ts";

export const FIELD_MANAGER = "berth-agent";

/** 32 random bytes, base64url: 43 characters, well past the router's 16-character minimum. */
export const newAdminToken = () => randomBytes(32).toString("base64url");

/**
 * The renderer writes the API's JSON (`ingress[].from`); client-node's serializer sends only the
 * fields of its model, which names that one `_from`, so a plain `from` would be dropped silently.
 */
export function toClientShape(policy: V1NetworkPolicy): V1NetworkPolicy {
  const ingress = (policy.spec?.ingress ?? []) as Array<{ from?: unknown }>;
  if (ingress.length === 0) return policy;
  return {
    ...policy,
    spec: { ...policy.spec!, ingress: ingress.map(({ from, ...rest }) => ({ ...rest, ...(from !== undefined && { _from: from }) })) as NonNullable<V1NetworkPolicy["spec"]>["ingress"] },
  };
}

export async function applyAction(kube: Kube, action: Action): Promise<void> {
  try {
    switch (action.kind) {
      case "applyNetworkPolicy":
        await kube.objects.patch(toClientShape(action.object), undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
        return;
      case "applyNamespace":
      case "applyService":
      case "applyClaim":
      case "applyRouterObject":
        await kube.objects.patch(action.object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
        return;
      case "createTokenSecret":
        await kube.core.createNamespacedSecret({
          namespace: action.namespace,
          fieldManager: FIELD_MANAGER,
          body: {
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: action.name, namespace: action.namespace, labels: action.labels },
            type: "Opaque",
            data: { [action.key]: Buffer.from(newAdminToken()).toString("base64") },
          },
        });
        return;
      case "createPod":
        // Named, so managedFields say who wrote the pod (client-node would otherwise be recorded as "node-fetch").
        await kube.core.createNamespacedPod({ namespace: action.object.metadata!.namespace!, body: action.object, fieldManager: FIELD_MANAGER });
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
      case "deleteObject": {
        const { apiVersion, kind, namespace, name, uid } = action.ref;
        // Background propagation: the router Deployment's pods are garbage-collected after it.
        await kube.objects.delete({ apiVersion, kind, metadata: { name, namespace } }, undefined, undefined, undefined, undefined, "Background", {
          preconditions: { uid },
        });
        return;
      }
    }
  } catch (error) {
    const code = statusCodeOf(error);
    if ((action.kind === "deletePod" || action.kind === "deleteService" || action.kind === "deleteObject") && code === 404) return;
    if ((action.kind === "createPod" || action.kind === "createTokenSecret") && code === 409) return;
    throw error;
  }
}

/**
 * In order (the namespace first: everything lives in it); stops at the first failure.
 * @param applied called after each action that succeeded (the agent then expects to observe it)
 */
export async function applyActions(kube: Kube, actions: Action[], applied?: (action: Action) => void): Promise<void> {
  for (const action of actions) {
    await applyAction(kube, action);
    applied?.(action);
  }
}

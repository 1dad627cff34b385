// Expectations (pure): what the cache must show after this agent's own writes before their
// deployment is planned again, as Kubernetes controllers' ControllerExpectations. A pass that
// planned from a cache not yet showing its last writes would create again what it just created
// (409s, one per watch event of a burst), delete again what it just deleted, or confirm a
// deletion while a pod it created a moment ago is still unseen. Bounded: past the deadline the
// pass plans anyway (a lost event must never block a deployment), and every write it repeats is
// safe (creates 409, deletes carry the UID they observed).
import type { KubernetesObject } from "@kubernetes/client-node";
import { LABELS } from "../../k8s/render/index.ts";
import { type CachedKind, cachedKindOf } from "./cluster-cache.ts";
import type { Action } from "./plan.ts";

export interface Expectation {
  kind: CachedKind;
  /** Undefined for cluster-scoped objects (the Namespace). */
  namespace?: string;
  name: string;
  /** A delete: met once no object of that name with this UID is left undeleted (gone, replaced or terminating). */
  deletedUid?: string;
  /** An apply of an object labelled with a spec hash: met once the cached object carries it. */
  specHash?: string;
}

export interface PendingExpectations {
  items: Expectation[];
  /** Epoch ms after which the deployment is planned even if some are still unmet. */
  deadline: number;
}

export type Lookup = (kind: CachedKind, namespace: string | undefined, name: string) => KubernetesObject | undefined;

const presence = (object: KubernetesObject): Expectation[] => {
  const kind = cachedKindOf(object.kind ?? "");
  if (!kind) return [];
  const specHash = object.metadata?.labels?.[LABELS.specHash];
  return [{ kind, namespace: object.metadata?.namespace, name: object.metadata!.name!, ...(specHash ? { specHash } : {}) }];
};

/** What the cache shows once an applied action is observed. */
export function expectationsOf(action: Action): Expectation[] {
  switch (action.kind) {
    case "applyNamespace":
    case "applyService":
    case "applyClaim":
    case "applyNetworkPolicy":
    case "applyRouterObject":
    case "createPod":
      return presence(action.object as KubernetesObject);
    case "createTokenSecret":
      return [{ kind: "secrets", namespace: action.namespace, name: action.name }];
    case "deletePod":
      return [{ kind: "pods", namespace: action.namespace, name: action.name, deletedUid: action.uid }];
    case "deleteService":
      return [{ kind: "services", namespace: action.namespace, name: action.name, deletedUid: action.uid }];
    case "deleteObject": {
      const kind = cachedKindOf(action.ref.kind);
      return kind ? [{ kind, namespace: action.ref.namespace, name: action.ref.name, deletedUid: action.ref.uid }] : [];
    }
  }
}

export function isMet(expectation: Expectation, lookup: Lookup): boolean {
  const object = lookup(expectation.kind, expectation.namespace, expectation.name);
  if (expectation.deletedUid !== undefined) {
    return object === undefined || object.metadata?.uid !== expectation.deletedUid || object.metadata?.deletionTimestamp != null;
  }
  if (object === undefined) return false;
  return expectation.specHash === undefined || object.metadata?.labels?.[LABELS.specHash] === expectation.specHash;
}

/** How long the deployment should still wait (0: plan now) and what is still unmet. */
export function expectationWait(pending: PendingExpectations | undefined, lookup: Lookup, now: number): { waitMs: number; unmet: Expectation[] } {
  if (!pending) return { waitMs: 0, unmet: [] };
  const unmet = pending.items.filter((e) => !isMet(e, lookup));
  return { waitMs: unmet.length > 0 && now < pending.deadline ? pending.deadline - now : 0, unmet };
}

// The cluster cache (pure): every object the agent's informers hold (labelled
// app.kubernetes.io/managed-by=berth-agent), by kind, indexed by `berth.dev/deployment-id`, so a
// pass reads its deployment's objects without a request and without scanning the whole kind.
// Invariant: the index holds exactly the objects of the main map (an update that moves an object
// to another deployment id moves its index entry). Objects from watch events are plain JSON
// (timestamps are strings) while list items are typed (Date): readers only test timestamps for
// presence (`deletionTimestamp != null`).
import type {
  KubernetesObject,
  V1ConfigMap,
  V1NetworkPolicy,
  V1PersistentVolumeClaim,
  V1Deployment,
  V1Pod,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
} from "@kubernetes/client-node";
import { LABELS, NAMESPACE_POLICY_NAMES } from "../../k8s/render/index.ts";
import { isRouterObject, type Observed } from "./observe.ts";

/** Every kind the agent observes, as the API's plural resource names. */
export const CACHED_KINDS = ["namespaces", "pods", "services", "persistentvolumeclaims", "networkpolicies", "deployments", "configmaps", "secrets", "serviceaccounts", "roles", "rolebindings"] as const;
export type CachedKind = (typeof CACHED_KINDS)[number];
/** What every pass reads. */
export const CORE_KINDS: readonly CachedKind[] = ["namespaces", "pods", "services", "persistentvolumeclaims", "networkpolicies"];
/** What only a router brings (or a deletion may have to remove). */
export const ROUTER_KINDS: readonly CachedKind[] = ["deployments", "configmaps", "secrets", "serviceaccounts", "roles", "rolebindings"];

/** The kinds a pass needs: router kinds only when the spec has a router or the deployment is being deleted. */
export const kindsFor = (routerKinds: boolean): readonly CachedKind[] => (routerKinds ? CACHED_KINDS : CORE_KINDS);

const KIND_OF_OBJECT: Record<string, CachedKind> = {
  Namespace: "namespaces",
  Pod: "pods",
  Service: "services",
  PersistentVolumeClaim: "persistentvolumeclaims",
  NetworkPolicy: "networkpolicies",
  Deployment: "deployments",
  ConfigMap: "configmaps",
  Secret: "secrets",
  ServiceAccount: "serviceaccounts",
  Role: "roles",
  RoleBinding: "rolebindings",
};

/** An object's `kind` (Pod, Role…) → the cache kind holding it; undefined for kinds not cached. */
export const cachedKindOf = (kind: string): CachedKind | undefined => KIND_OF_OBJECT[kind];

export const deploymentIdOf = (object: KubernetesObject): string | undefined => object.metadata?.labels?.[LABELS.deploymentId];

const keyOf = (namespace: string | undefined, name: string | undefined) => `${namespace ?? ""}/${name ?? ""}`;
const objectKey = (object: KubernetesObject) => keyOf(object.metadata?.namespace, object.metadata?.name);

export class ClusterCache {
  readonly #objects = new Map<CachedKind, Map<string, KubernetesObject>>();
  /** kind → deployment id → namespace/name → object. */
  readonly #byDeployment = new Map<CachedKind, Map<string, Map<string, KubernetesObject>>>();

  constructor() {
    for (const kind of CACHED_KINDS) {
      this.#objects.set(kind, new Map());
      this.#byDeployment.set(kind, new Map());
    }
  }

  upsert(kind: CachedKind, object: KubernetesObject): void {
    const key = objectKey(object);
    const previous = this.#objects.get(kind)!.get(key);
    if (previous) this.#unindex(kind, previous, key);
    this.#objects.get(kind)!.set(key, object);
    const id = deploymentIdOf(object);
    if (id === undefined) return;
    const index = this.#byDeployment.get(kind)!;
    let bucket = index.get(id);
    if (!bucket) index.set(id, (bucket = new Map()));
    bucket.set(key, object);
  }

  remove(kind: CachedKind, object: KubernetesObject): void {
    const key = objectKey(object);
    const previous = this.#objects.get(kind)!.get(key);
    if (!previous) return;
    this.#objects.get(kind)!.delete(key);
    this.#unindex(kind, previous, key);
  }

  get(kind: CachedKind, namespace: string | undefined, name: string): KubernetesObject | undefined {
    return this.#objects.get(kind)!.get(keyOf(namespace, name));
  }

  /** The objects of one kind labelled with a deployment id. */
  ofDeployment<T extends KubernetesObject>(kind: CachedKind, deploymentId: string): T[] {
    return [...(this.#byDeployment.get(kind)!.get(deploymentId)?.values() ?? [])] as T[];
  }

  size(kind: CachedKind): number {
    return this.#objects.get(kind)!.size;
  }

  #unindex(kind: CachedKind, object: KubernetesObject, key: string): void {
    const id = deploymentIdOf(object);
    if (id === undefined) return;
    const index = this.#byDeployment.get(kind)!;
    const bucket = index.get(id);
    bucket?.delete(key);
    if (bucket?.size === 0) index.delete(id);
  }
}

/**
 * One deployment's objects as the cache holds them: the shape a relist gives (`observeDeployment`),
 * so the planner and status read either. Only objects in the deployment's namespace count, as a
 * namespaced relist would; router-only kinds stay empty unless asked for.
 */
export function observeFromCache(cache: ClusterCache, namespace: string, deploymentId: string, routerKinds = true): Observed {
  const of = <T extends KubernetesObject>(kind: CachedKind): T[] =>
    !routerKinds && ROUTER_KINDS.includes(kind)
      ? []
      : cache.ofDeployment<T>(kind, deploymentId).filter((o) => o.metadata?.namespace === namespace);
  const pods = of<V1Pod>("pods");
  const namespaceObject = cache.get("namespaces", undefined, namespace);
  return {
    namespaceExists: namespaceObject !== undefined,
    namespaceLabels: namespaceObject?.metadata?.labels ?? {},
    namespacePolicies: Object.values(NAMESPACE_POLICY_NAMES).filter((name) => cache.get("networkpolicies", namespace, name) !== undefined),
    networkPolicies: of<V1NetworkPolicy>("networkpolicies"),
    pods: pods.filter((p) => !isRouterObject(p)),
    services: of<V1Service>("services"),
    routerPods: pods.filter(isRouterObject),
    deployments: of<V1Deployment>("deployments"),
    configMaps: of<V1ConfigMap>("configmaps"),
    secrets: of<V1Secret>("secrets"),
    serviceAccounts: of<V1ServiceAccount>("serviceaccounts"),
    roles: of<V1Role>("roles"),
    roleBindings: of<V1RoleBinding>("rolebindings"),
    claims: of<V1PersistentVolumeClaim>("persistentvolumeclaims"),
  };
}

/** The deployments the agent knows: id → namespace (a Map, or a view that computes entries lazily). */
export interface KnownDeployments {
  has(id: string): boolean;
  [Symbol.iterator](): Iterator<[string, string]>;
}

/**
 * The deployments a change concerns: the one named by the object's deployment-id label (when
 * the agent knows it, a lookup: this runs on every event), or, for a Namespace, every known
 * deployment living in it (a scan: namespace events are rare).
 */
export function affectedKeys(kind: CachedKind, object: KubernetesObject, known: KnownDeployments): string[] {
  if (kind === "namespaces") {
    const name = object.metadata?.name;
    return [...known].filter(([, namespace]) => namespace === name).map(([key]) => key);
  }
  const id = deploymentIdOf(object);
  // A namespace-wide NetworkPolicy (no deployment label) guards every deployment of its namespace.
  if (kind === "networkpolicies" && id === undefined) {
    return [...known].filter(([, namespace]) => namespace === object.metadata?.namespace).map(([key]) => key);
  }
  return id !== undefined && known.has(id) ? [id] : [];
}

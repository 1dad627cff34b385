// Plan (pure): a deployment's desired intent + what the cluster holds → the next actions.
// Invariants: only missing objects are created; surplus replicas go highest index first (a
// Ready one through the retirement protocol, see retirementCandidates);
// a spec change replaces at most one instance per role at a time, and only while every
// other instance of the role is Ready; every delete names the UID it observed. Router
// objects are applied when missing or when the router's spec hash (or replica count) moved,
// never on every pass; the builtin router's admin-token Secret is created once, never rewritten.
import type { V1Deployment, V1Namespace, V1PersistentVolumeClaim, V1Pod, V1Service } from "@kubernetes/client-node";
import {
  LABELS,
  MANAGED_BY,
  renderInstancePods,
  renderInstanceService,
  renderMemberPod,
  renderClaims,
  renderNamespace,
  renderRoleService,
  renderRouterObjects,
  type RenderInput,
  resolveOptions,
  type RouterObject,
  specHashOf,
} from "../../k8s/render/index.ts";
import { memberOf, recordedWidth } from "./elastic.ts";
import type { Observed } from "./observe.ts";

/** An object the agent deletes through the generic client (router objects, the token Secret). */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
}

export type Action =
  | { kind: "applyNamespace"; object: V1Namespace }
  | { kind: "applyService"; object: V1Service }
  | { kind: "applyClaim"; object: V1PersistentVolumeClaim }
  | { kind: "applyRouterObject"; object: RouterObject }
  /** The token is drawn when the action runs (the plan stays pure); a 409 keeps the existing one. */
  | { kind: "createTokenSecret"; namespace: string; name: string; key: string; labels: Record<string, string> }
  | { kind: "createPod"; object: V1Pod }
  | { kind: "deletePod"; namespace: string; name: string; uid: string; reason: "surplus" | "stale" | "deleting" }
  | { kind: "deleteService"; namespace: string; name: string; uid: string }
  | { kind: "deleteObject"; ref: ObjectRef };

/** A delete that retires a serving instance: the router must see it draining first. */
export const isRetirement = (action: Action): action is Extract<Action, { kind: "deletePod" }> =>
  action.kind === "deletePod" && action.reason !== "deleting";

export interface PlanInput {
  render: RenderInput;
  deleting: boolean;
  observed: Observed;
}

export const replicaOf = (object: { metadata?: { labels?: Record<string, string> } }) =>
  Number(object.metadata?.labels?.[LABELS.replica] ?? -1);
export const roleOf = (object: { metadata?: { labels?: Record<string, string> } }) => object.metadata?.labels?.[LABELS.role] ?? "";
export const isTerminating = (pod: V1Pod) => pod.metadata?.deletionTimestamp != null;
export const isPodReady = (pod: V1Pod) =>
  !isTerminating(pod) && (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

export function planDeployment({ render, deleting, observed }: PlanInput): Action[] {
  if (deleting) return planDeletion(observed);
  const { deployment } = render;
  const actions: Action[] = [];
  const namespace = renderNamespace(deployment.projectName);
  const ns = namespace.metadata!.name!;
  if (!observed.namespaceExists) actions.push({ kind: "applyNamespace", object: namespace });
  // EPD's shared volume before the pods that mount it (they stay Pending until it is Bound).
  for (const claim of renderClaims(render)) {
    if (!observed.claims.some((c) => c.metadata?.name === claim.metadata!.name)) actions.push({ kind: "applyClaim", object: claim });
  }
  actions.push(...planRouter(render, observed));
  const serviceNames = new Set(observed.services.map((s) => s.metadata?.name));
  const pods = observed.pods;

  for (const role of deployment.spec.roles) {
    const desired = role.replicas ?? 1;
    const hash = specHashOf(deployment.spec, role.name, render.options);
    const rolePods = pods.filter((p) => roleOf(p) === role.name);
    const byReplica = new Map<number, V1Pod[]>();
    for (const pod of rolePods) byReplica.set(replicaOf(pod), [...(byReplica.get(replicaOf(pod)) ?? []), pod]);

    const roleService = renderRoleService(render, role.name);
    if (!serviceNames.has(roleService.metadata!.name)) actions.push({ kind: "applyService", object: roleService });

    // Surplus instances, highest index first. One that may hold requests (a pod Ready) retires
    // through the persisted protocol (retirementCandidates, retirement.ts), never by a delete here;
    // one with no Ready pod is in no router list and serves nothing, so it goes directly.
    const surplus = [...byReplica.keys()].filter((r) => r >= desired || r < 0).sort((a, b) => b - a);
    for (const replica of surplus) {
      const members = byReplica.get(replica)!;
      if (replica >= 0 && members.some(isPodReady)) continue;
      for (const pod of members) {
        if (!isTerminating(pod)) actions.push(deletePod(pod, ns, "surplus"));
      }
    }

    // Missing instances (and missing members of existing ones).
    let settling = false; // an instance of the role is being created, replaced or is not Ready
    for (let replica = 0; replica < desired; replica++) {
      const present = byReplica.get(replica) ?? [];
      const instanceService = renderInstanceService(render, role.name, replica);
      if (instanceService && !serviceNames.has(instanceService.metadata!.name)) {
        actions.push({ kind: "applyService", object: instanceService });
      }
      const have = new Set(present.map((p) => p.metadata?.name));
      const { pods: wanted, orphans } = role.elastic
        ? elasticMembers(render, role.name, replica, present)
        : { pods: renderInstancePods(render, role.name, replica), orphans: [] };
      for (const pod of orphans) actions.push(deletePod(pod, ns, "surplus"));
      for (const pod of wanted) {
        if (!have.has(pod.metadata!.name)) {
          actions.push({ kind: "createPod", object: pod });
          settling = true;
        }
      }
      if (present.some((p) => isTerminating(p) || !isPodReady(p))) settling = true;
    }

    // Drift: replace one stale instance per role, only when every other instance is Ready.
    if (!settling) {
      const stale = [...byReplica.entries()]
        .filter(([replica, members]) => replica < desired && members.some((p) => p.metadata?.labels?.[LABELS.specHash] !== hash))
        .sort(([a], [b]) => b - a);
      const first = stale[0];
      if (first) for (const pod of first[1]) actions.push(deletePod(pod, ns, "stale"));
    }
  }
  return actions;
}

/**
 * An elastic instance's rank pods. With a live leader, the ranks its engine runs at (the recorded
 * width): ranks beyond it belong to the resize executor, which adds them before a grow and removes
 * them after a proven shrink. Without one (a new or replaced instance), the spec's width, and any
 * rank beyond it is in no collective: an orphan to delete.
 */
function elasticMembers(render: RenderInput, roleName: string, replica: number, present: readonly V1Pod[]): { pods: V1Pod[]; orphans: V1Pod[] } {
  const role = render.deployment.spec.roles.find((r) => r.name === roleName)!;
  const leader = present.find((p) => memberOf(p) === 0 && !isTerminating(p));
  const width = leader ? (recordedWidth(leader) ?? role.elastic!.width) : role.elastic!.width;
  const pods = Array.from({ length: width }, (_, member) => renderMemberPod(render, roleName, replica, member));
  const orphans = leader ? [] : present.filter((p) => memberOf(p) >= width && !isTerminating(p));
  return { pods, orphans };
}

/** A surplus instance that must retire through the protocol (docs/design.md §7.6) rather than by a plain delete. */
export interface RetirementCandidate {
  role: string;
  replica: number;
  pods: V1Pod[];
}

/**
 * Surplus instances with a Ready pod (they may hold requests), in the order they retire: roles in
 * spec order, highest replica index first. The caller runs at most one retirement per deployment.
 */
export function retirementCandidates(render: RenderInput, observed: Observed): RetirementCandidate[] {
  const candidates: RetirementCandidate[] = [];
  for (const role of render.deployment.spec.roles) {
    const desired = role.replicas ?? 1;
    const byReplica = new Map<number, V1Pod[]>();
    for (const pod of observed.pods.filter((p) => roleOf(p) === role.name)) {
      byReplica.set(replicaOf(pod), [...(byReplica.get(replicaOf(pod)) ?? []), pod]);
    }
    for (const [replica, pods] of [...byReplica.entries()].sort(([a], [b]) => b - a)) {
      if (replica >= desired && pods.some(isPodReady)) candidates.push({ role: role.name, replica, pods });
    }
  }
  return candidates;
}

/** Apply order: what the router pods mount or run as comes before the Deployment that starts them. */
const ROUTER_APPLY_ORDER = ["ConfigMap", "ServiceAccount", "Role", "RoleBinding", "Service", "Deployment"];

function planRouter(render: RenderInput, observed: Observed): Action[] {
  const objects = renderRouterObjects(render).sort(
    (a, b) => ROUTER_APPLY_ORDER.indexOf(a.kind!) - ROUTER_APPLY_ORDER.indexOf(b.kind!),
  );
  if (objects.length === 0) return [];
  const { deployment } = render;
  const actions: Action[] = [];
  if (deployment.spec.router?.kind === "builtin") {
    const { name, key } = resolveOptions(deployment.spec, deployment.name, render.options).routerAdminTokenSecret;
    if (!observed.secrets.some((s) => s.metadata?.name === name)) {
      actions.push({
        kind: "createTokenSecret",
        namespace: objects[0]!.metadata!.namespace!,
        name,
        key,
        labels: {
          [LABELS.managedBy]: MANAGED_BY,
          [LABELS.deployment]: deployment.name,
          [LABELS.deploymentId]: deployment.id,
          [LABELS.component]: "router",
        },
      });
    }
  }
  // The rendered Deployment's hash covers the ConfigMap's content and the container: when it
  // moved, every router object is applied again; replicas are compared on their own.
  const workload = objects.find((o): o is V1Deployment => o.kind === "Deployment")!;
  const running = observed.deployments.find((d) => d.metadata?.name === workload.metadata!.name);
  const drifted =
    !running ||
    running.metadata?.labels?.[LABELS.specHash] !== workload.metadata!.labels![LABELS.specHash] ||
    running.spec?.replicas !== workload.spec!.replicas;
  for (const object of objects) {
    if (drifted || !observedOfKind(observed, object.kind!).some((o) => o.metadata?.name === object.metadata!.name)) {
      actions.push({ kind: "applyRouterObject", object });
    }
  }
  return actions;
}

function observedOfKind(observed: Observed, kind: string): Array<{ metadata?: { name?: string } }> {
  switch (kind) {
    case "ConfigMap":
      return observed.configMaps;
    case "ServiceAccount":
      return observed.serviceAccounts;
    case "Role":
      return observed.roles;
    case "RoleBinding":
      return observed.roleBindings;
    case "Service":
      return observed.services;
    case "Deployment":
      return observed.deployments;
    default:
      return [];
  }
}

function refOf(apiVersion: string, kind: string, object: { metadata?: { namespace?: string; name?: string; uid?: string } }): Action {
  return {
    kind: "deleteObject",
    ref: { apiVersion, kind, namespace: object.metadata!.namespace!, name: object.metadata!.name!, uid: object.metadata!.uid! },
  };
}

function planDeletion(observed: Observed): Action[] {
  const actions: Action[] = [];
  for (const pod of [...observed.pods].sort((a, b) => replicaOf(b) - replicaOf(a))) {
    if (!isTerminating(pod)) actions.push(deletePod(pod, pod.metadata!.namespace!, "deleting"));
  }
  for (const service of observed.services) {
    actions.push({
      kind: "deleteService",
      namespace: service.metadata!.namespace!,
      name: service.metadata!.name!,
      uid: service.metadata!.uid!,
    });
  }
  for (const d of observed.deployments) if (d.metadata?.deletionTimestamp == null) actions.push(refOf("apps/v1", "Deployment", d));
  for (const c of observed.configMaps) actions.push(refOf("v1", "ConfigMap", c));
  for (const s of observed.secrets) actions.push(refOf("v1", "Secret", s));
  for (const a of observed.serviceAccounts) actions.push(refOf("v1", "ServiceAccount", a));
  for (const r of observed.roles) actions.push(refOf("rbac.authorization.k8s.io/v1", "Role", r));
  for (const b of observed.roleBindings) actions.push(refOf("rbac.authorization.k8s.io/v1", "RoleBinding", b));
  for (const c of observed.claims) if (c.metadata?.deletionTimestamp == null) actions.push(refOf("v1", "PersistentVolumeClaim", c));
  // Router pods go with their Deployment (garbage collection); one left behind once the
  // Deployment is gone would be an orphan, so it is deleted here.
  if (observed.deployments.length === 0) {
    for (const pod of observed.routerPods) if (!isTerminating(pod)) actions.push(refOf("v1", "Pod", pod));
  }
  return actions;
}

function deletePod(pod: V1Pod, namespace: string, reason: "surplus" | "stale" | "deleting"): Action {
  return { kind: "deletePod", namespace: pod.metadata?.namespace ?? namespace, name: pod.metadata!.name!, uid: pod.metadata!.uid!, reason };
}

// Plan (pure): a deployment's desired intent + what the cluster holds → the next actions.
// Invariants: only missing objects are created; surplus replicas go highest index first (a
// Ready one through the retirement protocol, see retirementCandidates);
// a spec change follows the role's rollout (rollout.ts): surge instances first, then stale ones
// retire through the protocol one at a time while the serving floor holds; every delete names
// the UID it observed. Router objects are applied when missing or when the router's spec hash
// (or replica count) moved, never on every pass; the builtin router's admin-token Secret is
// created once, never rewritten.
import type { V1Deployment, V1Namespace, V1NetworkPolicy, V1PersistentVolumeClaim, V1Pod, V1Service } from "@kubernetes/client-node";
import {
  LABELS,
  MANAGED_BY,
  renderInstancePods,
  renderInstanceService,
  renderMemberPod,
  renderClaims,
  renderDeploymentPolicies,
  renderNamespace,
  renderNamespacePolicies,
  renderRoleService,
  renderRouterObjects,
  type RenderInput,
  resolveOptions,
  type RouterObject,
  specHashOf,
  POD_SECURITY_LABELS,
} from "../../k8s/render/index.ts";
import type { Inventory } from "../domain/cluster.ts";
import { memberOf, recordedWidth } from "./elastic.ts";
import { type PlacementPauses, planGroups } from "./instance-group.ts";
import type { Observed } from "./observe.ts";
import { planRoleRollout } from "./rollout.ts";

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
  | { kind: "applyNetworkPolicy"; object: V1NetworkPolicy }
  | { kind: "applyRouterObject"; object: RouterObject }
  /** The token is drawn when the action runs (the plan stays pure); a 409 keeps the existing one. */
  | { kind: "createTokenSecret"; namespace: string; name: string; key: string; labels: Record<string, string> }
  | { kind: "createPod"; object: V1Pod }
  /** `group`: a multi-host instance lost a member or cannot be placed whole (instance-group.ts). */
  | { kind: "deletePod"; namespace: string; name: string; uid: string; reason: DeleteReason; why?: string; release?: { role: string; replica: number } }
  | { kind: "deleteService"; namespace: string; name: string; uid: string }
  | { kind: "deleteObject"; ref: ObjectRef };

/** A delete that retires a serving instance: the router must see it draining first. */
export const isRetirement = (action: Action): action is Extract<Action, { kind: "deletePod" }> =>
  action.kind === "deletePod" && action.reason !== "deleting";

export interface PlanInput {
  render: RenderInput;
  deleting: boolean;
  observed: Observed;
  /** The last heartbeat's inventory: a multi-host instance is created only when it fits whole. */
  inventory?: Inventory;
  /** Groups freed for lack of GPUs and when each may be created again (instance-group.ts), at `now` (epoch ms). */
  placementPauses?: PlacementPauses;
  now?: number;
  /** When the inventory's pod list was read (epoch ms). */
  inventoryAt?: number;
}

type DeleteReason = "surplus" | "stale" | "deleting" | "group";

export const replicaOf = (object: { metadata?: { labels?: Record<string, string> } }) =>
  Number(object.metadata?.labels?.[LABELS.replica] ?? -1);
export const roleOf = (object: { metadata?: { labels?: Record<string, string> } }) => object.metadata?.labels?.[LABELS.role] ?? "";
export const isTerminating = (pod: V1Pod) => pod.metadata?.deletionTimestamp != null;
export const isPodReady = (pod: V1Pod) =>
  !isTerminating(pod) && (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

export function planDeployment({ render, deleting, observed, inventory, inventoryAt, placementPauses, now }: PlanInput): Action[] {
  if (deleting) return planDeletion(observed);
  const { deployment } = render;
  const actions: Action[] = [];
  const namespace = renderNamespace(deployment.projectName);
  const ns = namespace.metadata!.name!;
  if (!observed.namespaceExists || missingPodSecurityLabel(observed)) actions.push({ kind: "applyNamespace", object: namespace });
  // Isolation before any pod exists: a pod never runs in the namespace without its policies.
  actions.push(...planNetworkPolicies(render, observed));
  // EPD's shared volume before the pods that mount it (they stay Pending until it is Bound).
  for (const claim of renderClaims(render)) {
    if (!observed.claims.some((c) => c.metadata?.name === claim.metadata!.name)) actions.push({ kind: "applyClaim", object: claim });
  }
  actions.push(...planRouter(render, observed));
  const serviceNames = new Set(observed.services.map((s) => s.metadata?.name));
  const pods = observed.pods;

  for (const role of deployment.spec.roles) {
    const desired = role.replicas ?? 1;
    const rolePods = pods.filter((p) => roleOf(p) === role.name);
    const byReplica = new Map<number, V1Pod[]>();
    for (const pod of rolePods) byReplica.set(replicaOf(pod), [...(byReplica.get(replicaOf(pod)) ?? []), pod]);

    const roleService = renderRoleService(render, role.name);
    if (!serviceNames.has(roleService.metadata!.name)) actions.push({ kind: "applyService", object: roleService });

    const rollout = planRoleRollout(render, role.name, rolePods, inventory);
    const keep = new Set(rollout.keep);

    // Surplus instances, highest index first. One that may hold requests (a pod Ready) retires
    // through the persisted protocol (retirementCandidates, retirement.ts), never by a delete here;
    // one with no Ready pod is in no router list and serves nothing, so it goes directly. The
    // rollout's surge instances are its capacity, not surplus, while it keeps them.
    const surplus = [...byReplica.keys()].filter((r) => (r >= desired && !keep.has(r)) || r < 0).sort((a, b) => b - a);
    for (const replica of surplus) {
      const members = byReplica.get(replica)!;
      if (replica >= 0 && members.some(isPodReady)) continue;
      for (const pod of members) {
        if (!isTerminating(pod)) actions.push(deletePod(pod, ns, "surplus"));
      }
    }

    // Missing instances (and missing members of existing ones), the rollout's surge included;
    // multi-host ones as groups (instance-group.ts).
    const groupPlan = planGroups(render, role, byReplica, rollout.create, inventory, placementPauses, now, inventoryAt);
    for (let replica = 0; replica < rollout.create; replica++) {
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
      const group = groupPlan(replica);
      const release = group.released && { release: { role: role.name, replica } };
      for (const pod of group.delete) actions.push({ ...deletePod(pod, ns, "group"), why: group.why!, ...release });
      for (const pod of wanted) {
        if (!group.hold && !have.has(pod.metadata!.name)) actions.push({ kind: "createPod", object: pod });
      }
    }

    // Drift: a stale instance with no Ready pod serves nothing and goes now; one that may hold
    // requests retires through the protocol (retirementCandidates), never by a delete here.
    for (const replica of rollout.deleteNow) {
      for (const pod of byReplica.get(replica) ?? []) if (!isTerminating(pod)) actions.push(deletePod(pod, ns, "stale"));
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

/** An instance that must retire through the protocol (docs/design.md §7.6) rather than by a plain delete. */
export interface RetirementCandidate {
  role: string;
  replica: number;
  pods: V1Pod[];
  /** `rollout`: a stale instance replaced at the new revision (wanted, yet it leaves); else a scale-down. */
  reason: RetirementReason;
}

export type RetirementReason = "scale-down" | "rollout";

/**
 * Instances with a Ready pod (they may hold requests) that leave, in the order they retire: roles in
 * spec order; in a role, surplus instances highest replica index first, then the stale instance the
 * rollout picks. The caller runs at most one retirement per deployment.
 */
export function retirementCandidates(render: RenderInput, observed: Observed, inventory?: Inventory): RetirementCandidate[] {
  const candidates: RetirementCandidate[] = [];
  for (const role of render.deployment.spec.roles) {
    const desired = role.replicas ?? 1;
    const rolePods = observed.pods.filter((p) => roleOf(p) === role.name);
    const byReplica = new Map<number, V1Pod[]>();
    for (const pod of rolePods) byReplica.set(replicaOf(pod), [...(byReplica.get(replicaOf(pod)) ?? []), pod]);
    const rollout = planRoleRollout(render, role.name, rolePods, inventory);
    const keep = new Set(rollout.keep);
    for (const [replica, pods] of [...byReplica.entries()].sort(([a], [b]) => b - a)) {
      if (replica >= desired && !keep.has(replica) && pods.some(isPodReady)) candidates.push({ role: role.name, replica, pods, reason: "scale-down" });
    }
    if (rollout.retire !== undefined) {
      candidates.push({ role: role.name, replica: rollout.retire, pods: byReplica.get(rollout.retire)!, reason: "rollout" });
    }
  }
  return candidates;
}

/**
 * A Pod Security label the namespace lacks. Only an absent label brings the namespace back: a value
 * an installation admin changed on purpose (`privileged` for RDMA, docs/decisions/0063) stays.
 */
/** The Pod Security labels the observed namespace lacks, with the values berth renders. */
export const missingPodSecurityLabels = (namespaceLabels: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(POD_SECURITY_LABELS).filter(([key]) => !(key in namespaceLabels)));
const missingPodSecurityLabel = (observed: Observed) => Object.keys(missingPodSecurityLabels(observed.namespaceLabels)).length > 0;

/** The namespace's policies when absent; the deployment's when absent or when their spec hash moved. */
function planNetworkPolicies(render: RenderInput, observed: Observed): Action[] {
  const actions: Action[] = [];
  for (const policy of renderNamespacePolicies(render.deployment.projectName)) {
    if (!observed.namespacePolicies.includes(policy.metadata!.name!)) actions.push({ kind: "applyNetworkPolicy", object: policy });
  }
  for (const policy of renderDeploymentPolicies(render)) {
    const running = observed.networkPolicies.find((p) => p.metadata?.name === policy.metadata!.name);
    if (running?.metadata?.labels?.[LABELS.specHash] !== policy.metadata!.labels![LABELS.specHash]) {
      actions.push({ kind: "applyNetworkPolicy", object: policy });
    }
  }
  return actions;
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
  // The namespace's own policies stay: other deployments of the project still live behind them.
  for (const p of observed.networkPolicies) actions.push(refOf("networking.k8s.io/v1", "NetworkPolicy", p));
  // Router pods go with their Deployment (garbage collection); one left behind once the
  // Deployment is gone would be an orphan, so it is deleted here.
  if (observed.deployments.length === 0) {
    for (const pod of observed.routerPods) if (!isTerminating(pod)) actions.push(refOf("v1", "Pod", pod));
  }
  return actions;
}

function deletePod(pod: V1Pod, namespace: string, reason: DeleteReason): Extract<Action, { kind: "deletePod" }> {
  return { kind: "deletePod", namespace: pod.metadata?.namespace ?? namespace, name: pod.metadata!.name!, uid: pod.metadata!.uid!, reason };
}

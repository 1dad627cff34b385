// Rollout (pure): one role's instances, its spec hash, its strategy and the free GPUs → the next step of
// replacing stale instances (docs/design.md §5.2). After LeaderWorkerSet's rolling update with
// maxSurge (https://github.com/kubernetes-sigs/lws, site/content/en/docs/concepts/rollout-strategy/_index.md
// and pkg/controllers/leaderworkerset_controller.go `rollingUpdateParameters`): surge instances take the
// indexes replicas…replicas+maxSurge-1 at the new revision, stale ones are replaced from the highest index
// down, and the surge instances leave once none is stale. Indexes stay stable (pod names carry them).
// Invariants: a stale instance that may hold requests (a pod Ready) leaves only through the retire
// protocol, and only while at least replicas - maxUnavailable other whole Ready instances serve; one with
// no Ready pod serves nothing and is deleted directly.
import type { V1Pod } from "@kubernetes/client-node";
import { LABELS, type RenderInput, specHashOf } from "../../k8s/render/index.ts";
import type { Inventory } from "../domain/cluster.ts";
import { DEFAULT_ROLLOUT, type Role, type Rollout } from "../domain/deployment-spec.ts";

/** One instance as the rollout sees it (its pods that are not terminating). */
export interface RolloutInstance {
  replica: number;
  /** Every member present and Ready: it counts towards the serving floor. */
  ready: boolean;
  /** Some member Ready: it may hold requests, so it leaves through the retire protocol. */
  serving: boolean;
  /** Every present member carries the current spec hash. */
  current: boolean;
  /** Members a node holds (nodeName set): the others still need room. */
  scheduled: number;
}

export interface RolloutInput {
  desired: number;
  strategy: Rollout;
  /** Live instances (an instance with a terminating pod is on its way out and not listed). */
  instances: readonly RolloutInstance[];
  /** Pods per instance and GPUs per pod: what one instance needs from the cluster. */
  podsPerInstance: number;
  gpusPerPod: number;
  /** Free GPUs of each node of the role's GPU type, from the last heartbeat; undefined before the first. */
  freeGpus?: readonly number[];
}

export interface UpToDateCondition {
  status: "True" | "False";
  reason: "AllUpdated" | "RollingOut" | "SurgeDoesNotFit";
  message: string;
}

export interface RolloutPlan {
  /** Instances the plan creates or completes at the current revision: indexes 0…create-1 (desired + surge). */
  create: number;
  /** Indexes at or above desired that are the rollout's capacity: never surplus while listed. */
  keep: number[];
  /** The stale instance to retire through the protocol now (reason "rollout"), when the floor allows. */
  retire?: number;
  /** Stale instances with no Ready pod: they serve nothing and are deleted directly. */
  deleteNow: number[];
  condition: UpToDateCondition;
}

/**
 * The next rollout step of one role. `create` always covers 0…desired-1 (missing instances are
 * recreated at the new revision); while a stale instance below desired remains and the surge fits,
 * it also covers the surge indexes. Without room for the surge (or with no inventory yet) the role
 * is replaced one at a time, as maxUnavailable 1 would (the condition says why).
 */
export function planRollout({ desired, strategy, instances, podsPerInstance, gpusPerPod, freeGpus }: RolloutInput): RolloutPlan {
  const byReplica = new Map(instances.map((i) => [i.replica, i]));
  const below = instances.filter((i) => i.replica >= 0 && i.replica < desired);
  const updated = below.filter((i) => i.current).length;
  const rolling = below.some((i) => !i.current);
  const readyBelow = below.filter((i) => i.ready).length;

  if (!rolling) {
    // Done (or never started): a current surge instance stays while the role is short of Ready
    // instances below desired, so the last replaced instance is Ready before the surge leaves.
    const keep = readyBelow < desired
      ? instances.filter((i) => i.replica >= desired && i.replica < desired + strategy.maxSurge && i.current && i.ready).map((i) => i.replica)
      : [];
    const stale = instances.filter((i) => !i.current);
    return {
      create: desired,
      keep,
      deleteNow: [],
      condition:
        stale.length === 0 && updated >= desired
          ? { status: "True", reason: "AllUpdated", message: `${updated}/${desired} updated` }
          : { status: "False", reason: "RollingOut", message: `${updated}/${desired} updated${stale.length > 0 ? `; r${stale.map((i) => i.replica).join(", r")} at an earlier revision leave` : ""}` },
    };
  }

  const fit = surgeFit({ desired, strategy, byReplica, podsPerInstance, gpusPerPod, freeGpus });
  const surge = fit.fits ? strategy.maxSurge : 0;
  const maxUnavailable = fit.fits ? strategy.maxUnavailable : Math.max(1, strategy.maxUnavailable);
  const window = instances.filter((i) => i.replica >= 0 && i.replica < desired + surge);
  const deleteNow = window.filter((i) => !i.current && !i.serving).map((i) => i.replica).sort((a, b) => b - a);

  // The serving floor: retiring a whole Ready instance leaves ready - 1 of them.
  const ready = window.filter((i) => i.ready).length;
  const floor = desired - maxUnavailable;
  const retire = window
    .filter((i) => !i.current && i.serving)
    .sort((a, b) => b.replica - a.replica)
    .find((i) => !i.ready || ready - 1 >= floor)?.replica;

  const progress = `${updated}/${desired} updated`;
  const condition: UpToDateCondition = fit.fits
    ? { status: "False", reason: "RollingOut", message: fit.waiting ? `${progress}; ${fit.waiting}` : progress }
    : { status: "False", reason: "SurgeDoesNotFit", message: `${progress}; ${fit.why}; replacing one instance at a time` };
  // With no inventory yet neither a surge nor a one-at-a-time step is safe to choose: wait for it.
  if (fit.waiting) return { create: desired, keep: keepSurge(instances, desired, strategy.maxSurge), deleteNow, condition };
  return {
    create: desired + surge,
    keep: Array.from({ length: surge }, (_, k) => desired + k),
    ...(retire !== undefined && { retire }),
    deleteNow,
    condition,
  };
}

/** Existing surge instances at the new revision stay while the rollout waits. */
const keepSurge = (instances: readonly RolloutInstance[], desired: number, maxSurge: number) =>
  instances.filter((i) => i.replica >= desired && i.replica < desired + maxSurge && i.current).map((i) => i.replica);

/**
 * Whether the surge fits: the pods still to be placed (missing or unscheduled instances below desired
 * first, they are recreated anyway, then the surge ones) against the free GPUs, counted per node,
 * because a pod takes its GPUs from one node.
 */
function surgeFit({
  desired,
  strategy,
  byReplica,
  podsPerInstance,
  gpusPerPod,
  freeGpus,
}: {
  desired: number;
  strategy: Rollout;
  byReplica: ReadonlyMap<number, RolloutInstance>;
  podsPerInstance: number;
  gpusPerPod: number;
  freeGpus?: readonly number[];
}): { fits: boolean; why?: string; waiting?: string } {
  if (strategy.maxSurge === 0) return { fits: true };
  // A present instance (stale or not) is replaced in place, on the GPUs it holds: only its pods
  // no node holds yet still need room; a missing one (a replaced one on its way out) needs all.
  const unplaced = (replica: number) => {
    const instance = byReplica.get(replica);
    return instance ? Math.max(0, podsPerInstance - instance.scheduled) : podsPerInstance;
  };
  let recreate = 0;
  for (let r = 0; r < desired; r++) recreate += unplaced(r);
  let surge = 0;
  for (let r = desired; r < desired + strategy.maxSurge; r++) surge += unplaced(r);
  if (surge === 0 || gpusPerPod === 0) return { fits: true };
  if (!freeGpus) return { fits: true, waiting: "waiting for the cluster's GPU inventory to size the surge" };
  const slots = freeGpus.reduce((sum, free) => sum + Math.floor(free / gpusPerPod), 0);
  const free = freeGpus.reduce((sum, n) => sum + n, 0);
  const needed = (recreate + surge) * gpusPerPod;
  if (recreate + surge <= slots) return { fits: true };
  return { fits: false, why: `a surge of ${strategy.maxSurge} instance(s) needs ${needed} GPUs (${recreate + surge} pod(s) × ${gpusPerPod}), ${free} free` };
}

// ---------------------------------------------------------------------------------------------
// From observed pods

const replicaLabel = (pod: V1Pod) => Number(pod.metadata?.labels?.[LABELS.replica] ?? -1);
const ready = (pod: V1Pod) => (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

/** Free GPUs per node of `gpuType` (any GPU node when the role names none); undefined without an inventory. */
export function freeGpusOf(gpuType: string | undefined, inventory: Inventory | undefined): number[] | undefined {
  if (!inventory) return undefined;
  return inventory.nodes.filter((n) => (gpuType ? n.gpuType === gpuType : n.gpuAllocatable > 0)).map((n) => n.gpuFree);
}

/** The role's instances from its pods: an instance with a terminating pod is leaving and is left out. */
export function rolloutInstances(role: Role, pods: readonly V1Pod[], hash: string): RolloutInstance[] {
  const groups = new Map<number, V1Pod[]>();
  for (const pod of pods) groups.set(replicaLabel(pod), [...(groups.get(replicaLabel(pod)) ?? []), pod]);
  const size = podsPerInstance(role);
  const instances: RolloutInstance[] = [];
  for (const [replica, members] of groups) {
    if (replica < 0 || members.some((p) => p.metadata?.deletionTimestamp != null)) continue;
    instances.push({
      replica,
      ready: members.length >= size && members.every(ready),
      serving: members.some(ready),
      current: members.every((p) => p.metadata?.labels?.[LABELS.specHash] === hash),
      scheduled: members.filter((p) => p.spec?.nodeName).length,
    });
  }
  return instances.sort((a, b) => a.replica - b.replica);
}

const podsPerInstance = (role: Role) => (role.elastic ? role.elastic.width : role.size);

/** planRollout for one role of a rendered deployment, from the observed pods and the last inventory. */
export function planRoleRollout(render: RenderInput, roleName: string, pods: readonly V1Pod[], inventory: Inventory | undefined): RolloutPlan {
  const role = render.deployment.spec.roles.find((r) => r.name === roleName)!;
  const hash = specHashOf(render.deployment.spec, role.name, render.options);
  const freeGpus = freeGpusOf(role.resources.gpuType, inventory);
  return planRollout({
    desired: role.replicas ?? 1,
    strategy: role.rollout ?? DEFAULT_ROLLOUT,
    instances: rolloutInstances(role, pods.filter((p) => p.metadata?.labels?.[LABELS.role] === role.name), hash),
    podsPerInstance: podsPerInstance(role),
    gpusPerPod: role.resources.gpus,
    ...(freeGpus && { freeGpus }),
  });
}

/** The deployment's UpToDate condition: the first role not up to date speaks (SurgeDoesNotFit before RollingOut). */
export function upToDateCondition(render: RenderInput, pods: readonly V1Pod[], inventory: Inventory | undefined): UpToDateCondition {
  const conditions = render.deployment.spec.roles.map((role) => ({ role: role.name, ...planRoleRollout(render, role.name, pods, inventory).condition }));
  const pending = conditions.find((c) => c.reason === "SurgeDoesNotFit") ?? conditions.find((c) => c.status === "False");
  if (!pending) return { status: "True", reason: "AllUpdated", message: `every instance runs generation ${render.deployment.generation}` };
  return { status: "False", reason: pending.reason, message: `${pending.role}: ${pending.message}` };
}

// Instance groups (pure): a multi-host instance is one unit, as in LeaderWorkerSet (a group of
// pods is "a super pod", created, rolled and recreated together; its RecreateGroupOnRestart
// policy recreates every pod of a group when one of them restarts:
// https://github.com/kubernetes-sigs/lws README "Feature overview" and docs/examples/sample/README.md
// "Restart Policy"). A vLLM or SGLang collective (NCCL/Gloo over hosts) cannot take a replacement
// member, so the agent judges the group as a whole (docs/design.md §5.4):
//   - its EXPECTED members come from the render (size members m0…), for an elastic role the ranks
//     below the width its engine runs at (elastic.ts);
//   - it is whole and ready only when every expected member exists, is Ready, is not terminating,
//     has not failed, and every member carries the revision of the leader;
//   - a member lost after the group started takes the rest with it (groupRecreate);
//   - a group that cannot place every member holds no GPUs (placementHold).
import type { V1Pod } from "@kubernetes/client-node";
import { everyMemberServes, isGroup, LABELS, membersOf, podName, type RenderInput } from "../../k8s/render/index.ts";
import type { Inventory } from "../domain/cluster.ts";
import type { Role } from "../domain/deployment-spec.ts";
import { memberOf, recordedWidth } from "./elastic.ts";

// Label reads of plan.ts, repeated so plan.ts can import this module without a cycle.
const isTerminating = (pod: V1Pod) => pod.metadata?.deletionTimestamp != null;
const isReady = (pod: V1Pod) => !isTerminating(pod) && (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
const hashOf = (pod: V1Pod) => pod.metadata?.labels?.[LABELS.specHash];

export type MemberReason = "MemberMissing" | "MemberTerminating" | "MemberFailed" | "MemberUnschedulable" | "MemberNotReady" | "MemberStale";

export interface GroupVerdict {
  /** Every expected member exists, is Ready, not terminating, not failed, and all carry the leader's revision. */
  ready: boolean;
  /** Every expected member exists and carries `hash` (the role's current revision). */
  updated: boolean;
  /** The first member (in member order) that keeps the group from being ready, and why. */
  problem?: { member: number; pod: string; reason: MemberReason; message: string };
}

/** The member indices an instance must have: 0…size-1, or an elastic leader's ranks below its recorded width. */
export function expectedMembers(role: Role, pods: readonly V1Pod[]): number[] {
  if (!role.elastic) return Array.from({ length: membersOf(role) }, (_, m) => m);
  const leader = pods.find((p) => memberOf(p) === 0 && !isTerminating(p));
  const width = (leader && recordedWidth(leader)) ?? role.elastic.width;
  return Array.from({ length: width }, (_, m) => m);
}

/**
 * Failed beyond waiting: the pod phase is Failed, a container is in CrashLoopBackOff, or a container
 * restarted (its process exited once: the collective it belonged to is gone, LWS's "container
 * restart" trigger). A new pod of the group starts at restart count 0. `restartFails` false: a
 * single pod (or an elastic rank, which the resize executor owns) that restarted and came back is fine.
 */
export function memberFailure(pod: V1Pod, restartFails = true): string | undefined {
  if (pod.status?.phase === "Failed") return `pod phase Failed${pod.status.reason ? ` (${pod.status.reason})` : ""}`;
  for (const c of pod.status?.containerStatuses ?? []) {
    if (c.state?.waiting?.reason === "CrashLoopBackOff") return "CrashLoopBackOff";
    if (restartFails && (c.restartCount ?? 0) > 0) {
      const last = c.lastState?.terminated ?? c.state?.terminated;
      return `container ${c.name} restarted ${c.restartCount}×${last ? ` (exit ${last.exitCode})` : ""}`;
    }
  }
  return undefined;
}

/** The scheduler refused the pod for lack of GPUs (`Insufficient nvidia.com/gpu` / `amd.com/gpu`). */
export function unschedulableForGpus(pod: V1Pod): boolean {
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  return scheduled?.status === "False" && scheduled.reason === "Unschedulable" && /Insufficient (nvidia\.com|amd\.com)\/gpu/.test(scheduled.message ?? "");
}

/**
 * Judge one instance. `pods` are the instance's observed pods (any member index); `hash` the
 * role's current spec hash. Members are looked at leader first, so the message names the first one.
 */
export function judgeGroup(render: RenderInput, role: Role, replica: number, pods: readonly V1Pod[], hash: string): GroupVerdict {
  const byMember = new Map<number, V1Pod>();
  for (const pod of pods) {
    const m = memberOf(pod);
    const seen = byMember.get(m);
    // Two pods for one member (a replacement created while the old one terminates): the live one counts.
    if (!seen || (isTerminating(seen) && !isTerminating(pod))) byMember.set(m, pod);
  }
  const expected = expectedMembers(role, pods);
  const leaderHash = byMember.get(0) && hashOf(byMember.get(0)!);
  let problem: GroupVerdict["problem"];
  let updated = true;
  const name = (m: number) => podName(render.deployment.name, role.name, replica, m);
  for (const m of expected) {
    const pod = byMember.get(m);
    if (!pod || hashOf(pod) !== hash) updated = false;
    if (problem) continue;
    const failure = pod && memberFailure(pod, recreatesAsGroup(role));
    const where = `member m${m} of ${role.name} r${replica}`;
    if (!pod) problem = { member: m, pod: name(m), reason: "MemberMissing", message: `${where} (${name(m)}) is missing` };
    else if (isTerminating(pod)) problem = { member: m, pod: name(m), reason: "MemberTerminating", message: `${where} (${name(m)}) is terminating` };
    else if (failure) problem = { member: m, pod: name(m), reason: "MemberFailed", message: `${where} (${name(m)}) failed: ${failure}` };
    else if (unschedulableForGpus(pod)) problem = { member: m, pod: name(m), reason: "MemberUnschedulable", message: `${where} (${name(m)}) cannot be placed` };
    else if (!isReady(pod)) problem = { member: m, pod: name(m), reason: "MemberNotReady", message: `${where} (${name(m)}) is not Ready` };
    else if (hashOf(pod) !== leaderHash) {
      problem = { member: m, pod: name(m), reason: "MemberStale", message: `${where} (${name(m)}) runs another revision than its leader` };
    }
  }
  return { ready: problem === undefined, updated, ...(problem && { problem }) };
}

/**
 * A multi-pod instance served through its leader (multi-host TP/PP, internal-LB DP, SGLang
 * multi-node, elastic EP): it serves only while whole. External DP members each run their own API
 * server and are routed, covered and replaced one rank at a time (docs/design.md §8.3).
 */
export const leaderServed = (role: Role) => isGroup(role) && !everyMemberServes(role);

/** A multi-host instance that restarts as one (not elastic: the resize executor owns an elastic instance's ranks). */
export const recreatesAsGroup = (role: Role) => leaderServed(role) && !role.elastic;

/** The group has run: some member's container started (or restarted). Before that a missing member is simply created. */
const started = (pod: V1Pod) => (pod.status?.containerStatuses ?? []).some((c) => c.state?.running !== undefined || c.state?.terminated !== undefined || (c.restartCount ?? 0) > 0);

/**
 * Recreate as a unit: when a member of a started group is lost (gone, terminating, Failed, restarted),
 * every other live member is deleted, so the group starts again together. Returns the pods to delete
 * and why (empty when the group is intact or has not started).
 */
export function groupRecreate(render: RenderInput, role: Role, replica: number, pods: readonly V1Pod[]): { pods: V1Pod[]; why?: string } {
  if (!recreatesAsGroup(role)) return { pods: [] };
  const live = pods.filter((p) => !isTerminating(p));
  if (live.length === 0 || !pods.some(started)) return { pods: [] };
  for (const m of expectedMembers(role, pods)) {
    const pod = live.find((p) => memberOf(p) === m);
    const failure = pod && memberFailure(pod);
    if (pod && !failure) continue;
    const what = `member m${m} (${podName(render.deployment.name, role.name, replica, m)}) ${failure ? `failed: ${failure}` : "was lost"}`;
    return { pods: live, why: `${role.name} r${replica}: ${what}; the group is recreated` };
  }
  return { pods: [] };
}

/** The node a pod is bound to (the simulated and real schedulers both set spec.nodeName). */
const nodeOf = (pod: V1Pod) => pod.spec?.nodeName;

/**
 * Whether the inventory has room for the whole group: Σ over nodes of the role's GPU type of
 * ⌊free / gpus⌋ ≥ size, counting the GPUs the instance's own pods hold as free (deleting them frees
 * them). Undefined when unknown (no inventory yet).
 */
export function groupFits(
  role: Role,
  inventory: Inventory | undefined,
  own: readonly V1Pod[] = [],
  /** Pod slots already promised to other pods of the role (created, not yet bound). */
  reserved = 0,
): { fits: boolean; needed: number; free: number } | undefined {
  if (!inventory) return undefined;
  const gpus = role.resources.gpus;
  const size = membersOf(role);
  const gpuType = role.resources.gpuType;
  const nodes = inventory.nodes.filter((n) => (gpuType ? n.gpuType === gpuType : n.gpuAllocatable > 0));
  let slots = 0;
  let free = 0;
  for (const node of nodes) {
    const held = own.filter((p) => nodeOf(p) === node.name && !isTerminating(p)).length * gpus;
    const available = Math.min(node.gpuAllocatable, node.gpuFree + held);
    free += available;
    slots += gpus > 0 ? Math.floor(available / gpus) : size;
  }
  return { fits: gpus === 0 || slots - reserved >= size, needed: gpus * size, free: Math.max(0, free - reserved * gpus) };
}

export interface PlacementHold {
  /** Live members to delete: they hold (or would take) GPUs for a group that cannot run. */
  delete: V1Pod[];
  /** Create no member of this instance now. */
  hold: boolean;
  /** InsufficientGPU naming the group, the GPUs it needs and those free. */
  message?: string;
}

/**
 * All-or-nothing placement, level-triggered on the inventory. A member the scheduler refused for
 * GPUs while the inventory (crediting the group's own pods) has no room for the whole group → every
 * live member not Ready is deleted; an instance with no live member is created only once the
 * inventory has room for all of it. Both sides read the same predicate on the same inventory, so a
 * create followed by a delete needs the inventory to change in between: no flapping on one view.
 * Without an inventory nothing is held (the scheduler's own answer stands).
 */
export function placementHold(
  render: RenderInput,
  role: Role,
  replica: number,
  pods: readonly V1Pod[],
  inventory: Inventory | undefined,
  /** Slots other instances of the role will take (pending pods, groups created this pass): a new group needs room beyond them. */
  reserved = 0,
): PlacementHold {
  if (!recreatesAsGroup(role) || role.resources.gpus === 0) return { delete: [], hold: false };
  const live = pods.filter((p) => !isTerminating(p));
  const fit = groupFits(role, inventory, live, live.length === 0 ? reserved : 0);
  if (!fit || fit.fits) return { delete: [], hold: false };
  const group = `${render.deployment.name}-${role.name}-r${replica}`;
  const gpuType = role.resources.gpuType ? ` ${role.resources.gpuType}` : "";
  const message = `${group} needs ${fit.needed}${gpuType} GPUs (${membersOf(role)} × ${role.resources.gpus}) placed together; ${fit.free} free: the group holds no GPUs until they are`;
  if (live.length === 0) return { delete: [], hold: true, message };
  if (!live.some(unschedulableForGpus)) return { delete: [], hold: false };
  return { delete: live.filter((p) => !isReady(p)), hold: true, message };
}

export interface GroupPlan {
  /** Live members to delete (UID preconditions in the plan), with why. */
  delete: V1Pod[];
  why?: string;
  /** Create no missing member this pass. */
  hold: boolean;
  /** Held because the group cannot be placed whole: the InsufficientGPU message. */
  insufficient?: string;
  /** The deletes free the GPUs of a group that cannot be placed (the agent pauses its next try). */
  released?: true;
}

/**
 * What the plan does for one instance of a multi-host role, besides creating missing members:
 * recreate a broken group, free the GPUs of a group that cannot be placed, and create nothing
 * while any member still terminates (a member created next to a dying peer would start a
 * collective the rest never joins, and be lost again when they arrive).
 */
export function planGroup(render: RenderInput, role: Role, replica: number, pods: readonly V1Pod[], inventory: Inventory | undefined, reserved = 0): GroupPlan {
  if (!recreatesAsGroup(role)) return { delete: [], hold: false };
  const recreate = groupRecreate(render, role, replica, pods);
  if (recreate.pods.length > 0) return { delete: recreate.pods, why: recreate.why!, hold: true };
  const placement = placementHold(render, role, replica, pods, inventory, reserved);
  if (placement.delete.length > 0) return { delete: placement.delete, why: placement.message!, hold: true, insufficient: placement.message!, released: true };
  return { delete: [], hold: placement.hold || pods.some(isTerminating), ...(placement.hold && { insufficient: placement.message! }) };
}

const NOT_A_GROUP: GroupPlan = { delete: [], hold: false };

/** When the scheduler bound the pod (PodScheduled True; second precision), or +∞ when unknown (counted as unseen). */
function boundAt(pod: V1Pod): number {
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "True");
  const at = scheduled?.lastTransitionTime ? new Date(scheduled.lastTransitionTime).getTime() : Number.NaN;
  return Number.isFinite(at) ? at : Number.POSITIVE_INFINITY;
}

/**
 * Every current instance of a role, lowest replica first, sharing one view of the room: a group
 * created this pass, and every member the inventory does not count yet (not bound to a node, or
 * bound after the inventory's pod list was read), takes its slots before the next instance is judged. Two groups of one deployment that each fit alone but not together
 * are then never created together to race each other on the scheduler (both partly placed, both
 * freed, both created again).
 */
export function planGroups(
  render: RenderInput,
  role: Role,
  byReplica: ReadonlyMap<number, readonly V1Pod[]>,
  desired: number,
  inventory: Inventory | undefined,
  pauses: PlacementPauses = new Map(),
  now = 0,
  /** When the inventory's pod list was read (epoch ms): pods bound since are not in it yet. */
  inventoryAt?: number,
): (replica: number) => GroupPlan {
  const plans = new Map<number, GroupPlan>();
  if (!recreatesAsGroup(role)) return () => NOT_A_GROUP;
  const unseen = (p: V1Pod) => !nodeOf(p) || (inventoryAt !== undefined && boundAt(p) >= Math.floor(inventoryAt / 1000) * 1000);
  let reserved = [...byReplica.values()].flat().filter((p) => !isTerminating(p) && !unschedulableForGpus(p) && unseen(p)).length;
  for (let replica = 0; replica < desired; replica++) {
    const pods = byReplica.get(replica) ?? [];
    const pause = pauses.get(pauseKey(role.name, replica));
    if (pause && pause.until > now && pods.length === 0) {
      const group = `${render.deployment.name}-${role.name}-r${replica}`;
      const message = `${group} was freed ${pause.releases}× for lack of GPUs to place it whole; it is tried again at ${new Date(pause.until).toISOString()}`;
      plans.set(replica, { delete: [], hold: true, insufficient: message });
      continue;
    }
    const plan = planGroup(render, role, replica, pods, inventory, reserved);
    if (!plan.hold && pods.length === 0) reserved += membersOf(role);
    plans.set(replica, plan);
  }
  return (replica) => plans.get(replica) ?? NOT_A_GROUP;
}

/**
 * Members that answer HTTP (the render's `berth.dev/serving=true`, k8s/render/pods.ts): the only ones
 * with /metrics to read. Headless followers (vLLM `--headless`, SGLang node rank ≥ 1, Ray workers)
 * serve nothing, so they hold no request of their own (docs/design.md §7.6).
 */
export const servesHttp = (pod: V1Pod) => pod.metadata?.labels?.[LABELS.serving] === "true";

/**
 * Groups freed for lack of GPUs, by `role/replica`: how many times, and until when the next
 * creation waits (30 s doubling per release, at most 10 min). On one view of the inventory the
 * plan cannot free a group it just created (placementHold), but two deployments' groups that are
 * created together and interleave on the scheduler can each be half-placed, freed, and created
 * again: the pause bounds how often that can repeat, like CrashLoopBackOff. Kept by the agent in
 * memory (a restart only starts the schedule again), cleared once the group is whole and ready.
 */
export type PlacementPauses = ReadonlyMap<string, { releases: number; until: number }>;
export const PLACEMENT_PAUSE = { baseMs: 30_000, capMs: 600_000 } as const;
export const pauseKey = (role: string, replica: number) => `${role}/${replica}`;

/** The pauses after a pass: a release starts (or lengthens) one; a group observed whole and ready ends it. */
export function nextPauses(
  pauses: PlacementPauses,
  released: ReadonlyArray<{ role: string; replica: number }>,
  readyGroups: ReadonlySet<string>,
  now: number,
): Map<string, { releases: number; until: number }> {
  const next = new Map([...pauses].filter(([key]) => !readyGroups.has(key)));
  for (const key of new Set(released.map(({ role, replica }) => pauseKey(role, replica)))) {
    const releases = (next.get(key)?.releases ?? 0) + 1;
    next.set(key, { releases, until: now + Math.min(PLACEMENT_PAUSE.capMs, PLACEMENT_PAUSE.baseMs * 2 ** (releases - 1)) });
  }
  return next;
}

/** `role/replica` of every multi-host group observed whole and ready. */
export function readyGroups(render: RenderInput, pods: readonly V1Pod[]): Set<string> {
  const ready = new Set<string>();
  for (const role of render.deployment.spec.roles.filter(recreatesAsGroup)) {
    const byReplica = new Map<number, V1Pod[]>();
    for (const pod of pods.filter((p) => p.metadata?.labels?.[LABELS.role] === role.name)) {
      const replica = Number(pod.metadata?.labels?.[LABELS.replica] ?? -1);
      byReplica.set(replica, [...(byReplica.get(replica) ?? []), pod]);
    }
    for (const [replica, members] of byReplica) {
      if (judgeGroup(render, role, replica, members, "").ready) ready.add(pauseKey(role.name, replica));
    }
  }
  return ready;
}

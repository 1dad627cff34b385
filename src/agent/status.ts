// Status (pure): observed objects → DeploymentStatus (docs/design.md §3.2). Counts are in instances
// and only from what was observed; conditions keep their lastTransitionTime until their
// status flips. "Why not ready" names the cause: InsufficientGPU, ImagePullBackOff, CrashLoopBackOff.
// With a router, the endpoint is the router Service and Ready also needs RouterReady: the router
// Deployment's ready replicas reach the declared count and (builtin) every Ready router pod
// acknowledged the endpoint list that the observed pods give now. External DP roles report
// `ranks` and, with the builtin router, Ready also needs RouterCoverage: every declared rank
// confirmed serving by every Ready router pod (rank-coverage.ts).
// An instance counts as a unit (instance-group.ts): ready only when every member the render expects
// is present, Ready and of one revision; a multi-host one names its first missing or failed member,
// and one that cannot be placed whole says InsufficientGPU for the group (needed and free GPUs).
// Ready also needs the endpoint to have answered the agent (endpoint-check.ts): readiness of the
// pods does not mean the Service routes to them yet.
import type { V1PersistentVolumeClaim, V1Pod, V1Service } from "@kubernetes/client-node";
import {
  GPU_TYPE_LABEL,
  resolveOptions,
  roleServiceName,
  type RenderInput,
  routerName,
  routerServiceName,
  specHashOf,
} from "../../k8s/render/index.ts";
import type { Condition, DeploymentStatus, RankCoverage, Role, RoleStatus, ScalingStatus } from "../domain/deployment-spec.ts";
import type { Inventory } from "../domain/cluster.ts";
import type { ScalingCondition } from "../domain/scaling.ts";
import { ENDPOINT_CHECK_PATH, type EndpointCheck } from "./endpoint-check.ts";
import { elasticInstances, memberOf, recordedWidth } from "./elastic.ts";
import { judgeGroup, leaderServed, type PlacementPauses, planGroups } from "./instance-group.ts";
import type { Observed } from "./observe.ts";
import type { ResizeView } from "./resize-executor.ts";
import { rankCoverage, routerCoverageCondition, type RouterViews } from "./rank-coverage.ts";
import { planRoleRollout, upToDateCondition } from "./rollout.ts";
import { isPodReady, isTerminating, replicaOf, roleOf } from "./plan.ts";
import { buildEndpointsBody, endpointsHash, routersAcknowledged } from "./router-endpoint-list.ts";

export interface StatusInput {
  render: RenderInput;
  deleting: boolean;
  /** Undefined when this pass could not observe the cluster: nothing is counted then. */
  observed: Observed | undefined;
  /** The last apply error of this pass, if any: it can never yield Ready. */
  applyError?: string;
  previous?: DeploymentStatus | null;
  now: Date;
  /** Builtin router: router pod ack key → hash of the endpoint list it acknowledged. */
  routerAcks?: ReadonlyMap<string, string>;
  /** This pass's failed endpoint push, if any: it can never yield Ready. */
  pushError?: string;
  /** The deployment's retirement (retirement-executor.ts): the Retiring condition. */
  retirement?: {
    active?: { id: string; role: string; replica?: number; step: string };
    aborted?: { id: string; role: string; replica?: number; message: string };
  };
  /** Pods the push marked draining (a retiring instance): the list routers must hold for RouterReady. */
  drainingPods?: ReadonlySet<string>;
  /** The autoscaler's latest evaluation (`status.scaling` and the Scaling condition); absent when scaling is off. */
  scaling?: { status: ScalingStatus; condition?: ScalingCondition };
  /** The last heartbeat's inventory: InsufficientGPU names the free GPUs; absent = not known yet (not said). */
  inventory?: Inventory;
  /** Builtin router in front of external DP: what this pass read from its Ready pods; absent when not read. */
  routerViews?: RouterViews;
  /** The deployment's elastic resize (resize-executor.ts): the Resizing condition. */
  resize?: ResizeView;
  /** Multi-host groups freed for lack of GPUs, waiting to be tried again (instance-group.ts). */
  placementPauses?: PlacementPauses;
  /** When the inventory's pod list was read (epoch ms). */
  inventoryAt?: number;
  /** What the agent's question to the endpoint gave; absent: not asked (then Ready says EndpointNotChecked). */
  endpointCheck?: EndpointCheck;
}

type Problem = { reason: string; message: string };

/**
 * Free GPUs where the pod could go: per node of its GPU type (a pod's GPUs must all be on one
 * node, so the largest free count is what matters), and in total. Undefined when unknown.
 */
export function freeGpusFor(gpuType: string | undefined, inventory: Inventory | undefined): string | undefined {
  if (!inventory) return undefined;
  const nodes = inventory.nodes.filter((n) => (gpuType ? n.gpuType === gpuType : n.gpuAllocatable > 0));
  if (nodes.length === 0) return `no node${gpuType ? ` has ${gpuType}` : " has GPUs"}`;
  const total = nodes.reduce((sum, n) => sum + n.gpuFree, 0);
  const largest = Math.max(...nodes.map((n) => n.gpuFree));
  return `${largest} free on the best node, ${total} free on ${nodes.length} node${nodes.length === 1 ? "" : "s"}`;
}

/**
 * A claim the pod mounts that is missing or not Bound (kube-scheduler's VolumeBinding keeps such a
 * pod Pending: "pod has unbound immediate PersistentVolumeClaims" / `persistentvolumeclaim "x" not found`).
 */
function unboundClaim(pod: V1Pod, message: string, claims: readonly V1PersistentVolumeClaim[]): Problem | undefined {
  if (!/unbound immediate PersistentVolumeClaims|persistentvolumeclaim "[^"]*" (not found|is being deleted)/.test(message)) return undefined;
  for (const volume of pod.spec?.volumes ?? []) {
    const name = volume.persistentVolumeClaim?.claimName;
    if (!name) continue;
    const claim = claims.find((c) => c.metadata?.name === name);
    if (claim?.status?.phase === "Bound") continue;
    const what = claim
      ? `claim ${name} is ${claim.status?.phase ?? "Pending"} in storage class ${claim.spec?.storageClassName ?? "(the cluster default)"}; the class must exist and provision ReadWriteMany volumes`
      : `claim ${name} does not exist yet`;
    return { reason: "VolumeNotBound", message: `${pod.metadata?.name}: ${what}` };
  }
  return { reason: "VolumeNotBound", message: `${pod.metadata?.name}: ${message}` };
}

/** Why a pod is not running, most specific first. */
export function podProblem(pod: V1Pod, inventory?: Inventory, claims: readonly V1PersistentVolumeClaim[] = []): Problem | undefined {
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") {
    const message = scheduled.message ?? "";
    const volume = unboundClaim(pod, message, claims);
    if (volume) return volume;
    if (!/Insufficient (nvidia\.com|amd\.com)\/gpu/.test(message)) {
      return { reason: "Unschedulable", message: `${pod.metadata?.name}: ${message}` };
    }
    const requests = pod.spec?.containers?.[0]?.resources?.requests ?? {};
    const needed = requests["nvidia.com/gpu"] ?? requests["amd.com/gpu"] ?? "?";
    const gpuType = pod.spec?.nodeSelector?.[GPU_TYPE_LABEL];
    const what = `${needed} GPU${needed === "1" ? "" : "s"}${gpuType ? ` (${gpuType})` : ""}`;
    const free = freeGpusFor(gpuType, inventory);
    return { reason: "InsufficientGPU", message: `${pod.metadata?.name} needs ${what}${free ? `; ${free}` : ""}: ${message}` };
  }
  for (const container of pod.status?.containerStatuses ?? []) {
    const waiting = container.state?.waiting;
    if (waiting?.reason === "ImagePullBackOff" || waiting?.reason === "ErrImagePull") {
      return { reason: "ImagePullBackOff", message: `${pod.metadata?.name}: ${waiting.message ?? waiting.reason}` };
    }
    if (waiting?.reason === "CrashLoopBackOff") {
      const last = container.lastState?.terminated;
      const detail = last ? ` (exit ${last.exitCode}${last.message ? `: ${last.message.trim().split("\n").at(-1)}` : ""})` : "";
      return { reason: "CrashLoopBackOff", message: `${pod.metadata?.name}: restarting${detail}` };
    }
  }
  return undefined;
}

const clusterIpOf = (service: V1Service | undefined) => {
  const ip = service?.spec?.clusterIP;
  return ip && ip !== "None" ? ip : undefined;
};

/** RouterReady: the router Deployment ready at its declared count, the builtin one holding the current list. */
export function routerReadiness(
  render: RenderInput,
  observed: Observed,
  acks: ReadonlyMap<string, string>,
  pushError: string | undefined,
  draining: ReadonlySet<string> = new Set(),
): { ready: boolean; reason: string; message: string } | undefined {
  const { deployment } = render;
  const router = deployment.spec.router;
  if (!router) return undefined;
  const workload = observed.deployments.find((d) => d.metadata?.name === routerName(deployment.name));
  const readyReplicas = workload?.status?.readyReplicas ?? 0;
  const counts = `router ${readyReplicas}/${router.replicas} ready`;
  if (!workload || readyReplicas < router.replicas) return { ready: false, reason: "RouterStarting", message: counts };
  if (router.kind !== "builtin") return { ready: true, reason: "RouterReady", message: counts };
  if (pushError) return { ready: false, reason: "EndpointPushFailed", message: `${counts}; ${pushError}` };
  const hash = endpointsHash(buildEndpointsBody(render, observed.pods, draining));
  const { acked, ready } = routersAcknowledged(observed.routerPods, acks, hash);
  if (acked < ready || ready === 0) {
    return { ready: false, reason: "EndpointsNotPushed", message: `${counts}; ${acked}/${ready} router pods hold the current endpoints` };
  }
  return { ready: true, reason: "RouterReady", message: `${counts}; every router pod holds the current endpoints` };
}

/**
 * An elastic instance's pods that count for its readiness: the ranks its engine runs at. Rank pods
 * beyond the recorded width are joining a grow (or leaving a shrink): the Resizing condition
 * speaks for them, and a grow that cannot be placed never makes the serving instance unready.
 */
function servingMembers(pods: V1Pod[]): V1Pod[] {
  const leader = pods.find((p) => memberOf(p) === 0 && !isTerminating(p));
  const width = leader ? recordedWidth(leader) : undefined;
  return width === undefined ? pods : pods.filter((p) => memberOf(p) < width);
}

/** Elastic roles: ranks declared (width × replicas), eligible (Ready rank pods serving now), serving (widths the engines run at). */
function elasticRanks(role: Role, pods: readonly V1Pod[]): RankCoverage {
  const instances = elasticInstances(role, pods).filter((i) => i.replica < role.replicas);
  let eligible = 0;
  let serving = 0;
  for (const instance of instances) {
    if (!instance.leader || !isPodReady(instance.leader) || instance.width === undefined) continue;
    serving += instance.width;
    for (const [rank, pod] of instance.ranks) if (rank < instance.width && isPodReady(pod)) eligible++;
  }
  return { declared: role.elastic!.width * role.replicas, eligible, serving };
}

function resizingCondition(render: RenderInput, resize: ResizeView | undefined, pods: readonly V1Pod[]): Problem & { status: Condition["status"] } | undefined {
  const role = render.deployment.spec.roles.find((r) => r.elastic);
  if (!role) return undefined;
  if (resize?.active) {
    const { id, step, message, holding } = resize.active;
    return { status: "True", reason: holding?.reason ?? step, message: `${id} ${step}: ${holding?.message ?? message}` };
  }
  if (resize?.failed) return { status: "False", reason: resize.failed.reason, message: `${resize.failed.id}: ${resize.failed.message}` };
  const widths = elasticInstances(role, pods).filter((i) => i.replica < role.replicas && i.width !== undefined).map((i) => i.width);
  const at = widths.every((w) => w === role.elastic!.width);
  return at
    ? { status: "False", reason: "AtWidth", message: `every instance of ${role.name} runs ${role.elastic!.width} ranks` }
    : { status: "False", reason: "ResizePending", message: `${role.name} should run ${role.elastic!.width} ranks; instances run ${widths.join(", ")}` };
}

/** The deployment's endpoint: its router Service, else its serving role's Service; undefined until a ClusterIP is observed. */
export function endpointOf(render: RenderInput, observed: Observed): string | undefined {
  const { deployment } = render;
  const options = resolveOptions(deployment.spec, deployment.name, render.options);
  if (deployment.spec.router) {
    const ip = clusterIpOf(observed.services.find((s) => s.metadata?.name === routerServiceName(deployment.name)));
    return ip ? `http://${ip}:${options.routerPort}` : undefined;
  }
  const serving = deployment.spec.roles.find((r) => r.kind === "server") ?? deployment.spec.roles[0];
  const ip = serving ? clusterIpOf(observed.services.find((s) => s.metadata?.name === roleServiceName(deployment.name, serving.name))) : undefined;
  return ip ? `http://${ip}:${options.enginePort}` : undefined;
}

/** Why a deployment whose pods are all Ready is not: its endpoint has not answered (yet). */
function endpointProblem(endpoint: string | undefined, check: EndpointCheck | undefined): Problem {
  if (endpoint === undefined) return { reason: "EndpointPending", message: "the Service has no ClusterIP yet" };
  if (check?.endpoint !== endpoint) return { reason: "EndpointNotChecked", message: `every pod is Ready; ${endpoint} has not been asked yet` };
  return {
    reason: "EndpointNotAnswering",
    message: `every pod is Ready but GET ${endpoint}${ENDPOINT_CHECK_PATH} got no answer (${check.detail}); the Service may not route to them yet`,
  };
}

export function computeStatus({ render, deleting, observed, applyError, previous, now, routerAcks, pushError, scaling, retirement, drainingPods, inventory, routerViews, resize, placementPauses, inventoryAt, endpointCheck }: StatusInput): DeploymentStatus {
  const { deployment } = render;
  const generation = deployment.generation;
  const previousConditions = new Map((previous?.conditions ?? []).map((c) => [c.type, c]));
  const condition = (type: Condition["type"], status: Condition["status"], reason: string, message: string): Condition => {
    const before = previousConditions.get(type);
    const lastTransitionTime = before && before.status === status ? before.lastTransitionTime : now.toISOString();
    return { type, status, reason, message, observedGeneration: generation, lastTransitionTime };
  };

  if (!observed) {
    return {
      phase: previous?.phase ?? "Pending",
      conditions: [condition("Ready", "Unknown", "NotObserved", applyError ?? "the cluster could not be observed")],
      ...(applyError ? { message: applyError } : {}),
    };
  }

  const roles: RoleStatus[] = [];
  const problems: Problem[] = [];
  /** The first member of a multi-host instance still starting (named instead of a bare "starting"). */
  let memberStarting: Problem | undefined;
  let allReady = true;
  for (const role of deployment.spec.roles) {
    const desired = role.replicas ?? 1;
    const hash = specHashOf(deployment.spec, role.name, render.options);
    const instances = new Map<number, V1Pod[]>();
    for (const pod of observed.pods.filter((p) => roleOf(p) === role.name)) {
      instances.set(replicaOf(pod), [...(instances.get(replicaOf(pod)) ?? []), pod]);
    }
    for (const [replica, pods] of instances) {
      if (role.elastic) instances.set(replica, servingMembers(pods));
      for (const pod of instances.get(replica)!) {
        const problem = podProblem(pod, inventory, observed.claims);
        if (problem) problems.push(problem);
      }
    }
    let ready = 0;
    let updated = 0;
    let draining = 0;
    const group = leaderServed(role);
    // A surge instance the rollout keeps (rollout.ts) is extra capacity, not leaving: not draining.
    const surge = new Set(planRoleRollout(render, role.name, observed.pods, inventory).keep);
    for (const [replica, pods] of instances) {
      const current = replica >= 0 && replica < desired;
      if (!current && surge.has(replica) && !pods.some(isTerminating)) continue;
      if (pods.some(isTerminating) || !current) {
        draining++;
        continue;
      }
      // The instance as a unit (instance-group.ts): every expected member present, Ready, one revision.
      const verdict = judgeGroup(render, role, replica, pods, hash);
      if (verdict.ready) ready++;
      if (verdict.updated) updated++;
      if (group && verdict.problem) {
        const { reason, message } = verdict.problem;
        if (reason === "MemberNotReady") memberStarting ??= { reason, message };
        else if (reason !== "MemberUnschedulable") problems.push({ reason, message });
      }
    }
    // A multi-host instance that cannot be placed whole holds no GPUs: say so for the group, first.
    if (group) {
      for (let replica = 0; replica < desired && !memberStarting; replica++) {
        // An instance with no pod yet (new, or recreated as a unit) is starting: its leader is named.
        if (!instances.has(replica)) memberStarting = judgeGroup(render, role, replica, [], hash).problem;
      }
      const groupPlan = planGroups(render, role, instances, desired, inventory, placementPauses, now.getTime(), inventoryAt);
      for (let replica = desired - 1; replica >= 0; replica--) {
        const { insufficient } = groupPlan(replica);
        if (insufficient) problems.unshift({ reason: "InsufficientGPU", message: insufficient });
      }
    }
    if (ready < desired) allReady = false;
    roles.push({ name: role.name, kind: role.kind, desired, ready, updated, draining, ...(role.elastic ? { ranks: elasticRanks(role, observed.pods) } : {}) });
  }

  const coverage = rankCoverage(render, observed.pods, drainingPods ?? new Set(), routerViews);
  for (const { role, ranks } of coverage) {
    const entry = roles.find((r) => r.name === role);
    if (entry) entry.ranks = ranks;
  }
  const routerCoverage = routerCoverageCondition(render, coverage, routerViews);
  const covered = !routerCoverage?.gatesReady || routerCoverage.status === "True";

  const endpoint = endpointOf(render, observed);
  const router = routerReadiness(render, observed, routerAcks ?? new Map(), pushError, drainingPods);
  const resizing = resizingCondition(render, resize, observed.pods);

  const answered = endpoint !== undefined && endpointCheck?.endpoint === endpoint && endpointCheck.answered;
  const ready = allReady && (router?.ready ?? true) && covered && !applyError && !pushError && answered && !deleting;
  const unschedulable = problems.find((p) => p.reason === "InsufficientGPU" || p.reason === "Unschedulable" || p.reason === "VolumeNotBound");
  const firstProblem = problems[0];
  const phase: DeploymentStatus["phase"] = deleting
    ? "Deleting"
    : ready
      ? "Ready"
      : firstProblem || applyError || pushError
        ? "Degraded"
        : "Starting";
  const notReadyWhy = applyError
    ? { reason: "ApplyFailed", message: applyError }
    : (firstProblem ??
      (pushError
        ? { reason: "EndpointPushFailed", message: pushError }
        : allReady && router && !router.ready
          ? { reason: router.reason, message: router.message }
          : allReady && routerCoverage && !covered
            ? { reason: routerCoverage.reason, message: routerCoverage.message }
            : allReady && !answered
              ? endpointProblem(endpoint, endpointCheck)
              : { reason: "WeightsLoading", message: memberStarting ? `instances are starting; ${memberStarting.message}` : "instances are starting" }));
  const counts = roles.map((r) => `${r.name} ${r.ready}/${r.desired} ready`).join(", ");
  // The rollout planner's own view (rollout.ts): surge progress, or why the surge does not fit.
  const upToDate = upToDateCondition(render, observed.pods, inventory);

  const conditions: Condition[] = [
    condition("Accepted", "True", "AgentReconciling", "the agent is reconciling the spec"),
    unschedulable
      ? condition("Scheduled", "False", unschedulable.reason, unschedulable.message)
      : condition("Scheduled", "True", "AllScheduled", "every pod is placed on a node"),
    allReady
      ? condition("RolesReady", "True", "AllRolesReady", counts)
      : condition("RolesReady", "False", notReadyWhy.reason, `${counts}; ${notReadyWhy.message}`),
    ...(router ? [condition("RouterReady", router.ready ? "True" : "False", router.reason, router.message)] : []),
    ...(routerCoverage ? [condition("RouterCoverage", routerCoverage.status, routerCoverage.reason, routerCoverage.message)] : []),
    condition("UpToDate", upToDate.status, upToDate.reason, upToDate.message),
    // Present while a retirement runs or an aborted one waits to be tried again (docs/design.md §7.6).
    ...(retirement?.active
      ? [condition("Retiring", "True", retirement.active.step, `${retirement.active.id}: ${retirement.active.role} r${retirement.active.replica} ${retirement.active.step}`)]
      : retirement?.aborted
        ? [condition("Retiring", "False", "RetirementAborted", `${retirement.aborted.id}: ${retirement.aborted.message}`)]
        : []),
    ...(resizing ? [condition("Resizing", resizing.status, resizing.reason, resizing.message)] : []),
    ...(scaling?.condition ? [condition("Scaling", scaling.condition.status, scaling.condition.reason, scaling.condition.message)] : []),
    ready
      ? condition("Ready", "True", "Ready", `serving at ${endpoint}`)
      : condition("Ready", "False", deleting ? "Deleting" : notReadyWhy.reason, deleting ? "removing every object" : notReadyWhy.message),
  ];

  return {
    phase,
    observedGeneration: generation,
    ...(endpoint ? { endpoint } : {}),
    roles,
    conditions,
    ...(scaling && { scaling: scaling.status }),
    ...(phase === "Ready" ? {} : { message: deleting ? "removing every object" : notReadyWhy.message }),
  };
}

// Status (pure): observed objects → DeploymentStatus (DESIGN §3.2). Counts are in instances
// and only from what was observed; conditions keep their lastTransitionTime until their
// status flips. "Why not ready" names the cause: InsufficientGPU, ImagePullBackOff, CrashLoopBackOff.
import type { V1Pod } from "@kubernetes/client-node";
import { GPU_TYPE_LABEL, LABELS, resolveOptions, roleServiceName, type RenderInput, specHashOf } from "../../k8s/render/index.ts";
import type { Condition, DeploymentStatus, RoleStatus } from "../domain/deployment-spec.ts";
import type { Observed } from "./observe.ts";
import { isPodReady, isTerminating, replicaOf, roleOf } from "./plan.ts";

export interface StatusInput {
  render: RenderInput;
  deleting: boolean;
  /** Undefined when this pass could not observe the cluster: nothing is counted then. */
  observed: Observed | undefined;
  /** The last apply error of this pass, if any: it can never yield Ready. */
  applyError?: string;
  previous?: DeploymentStatus | null;
  now: Date;
}

type Problem = { reason: string; message: string };

/** Why a pod is not running, most specific first. */
export function podProblem(pod: V1Pod): Problem | undefined {
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") {
    const message = scheduled.message ?? "";
    if (!/Insufficient (nvidia\.com|amd\.com)\/gpu/.test(message)) {
      return { reason: "Unschedulable", message: `${pod.metadata?.name}: ${message}` };
    }
    const requests = pod.spec?.containers?.[0]?.resources?.requests ?? {};
    const needed = requests["nvidia.com/gpu"] ?? requests["amd.com/gpu"] ?? "?";
    const gpuType = pod.spec?.nodeSelector?.[GPU_TYPE_LABEL];
    const what = `${needed} GPU${needed === "1" ? "" : "s"}${gpuType ? ` (${gpuType})` : ""}`;
    return { reason: "InsufficientGPU", message: `${pod.metadata?.name} needs ${what}: ${message}` };
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

export function computeStatus({ render, deleting, observed, applyError, previous, now }: StatusInput): DeploymentStatus {
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
  let allReady = true;
  let allUpdated = true;
  for (const role of deployment.spec.roles) {
    const desired = role.replicas ?? 1;
    const hash = specHashOf(deployment.spec, role.name, render.options);
    const instances = new Map<number, V1Pod[]>();
    for (const pod of observed.pods.filter((p) => roleOf(p) === role.name)) {
      instances.set(replicaOf(pod), [...(instances.get(replicaOf(pod)) ?? []), pod]);
      const problem = podProblem(pod);
      if (problem) problems.push(problem);
    }
    let ready = 0;
    let updated = 0;
    let draining = 0;
    for (const [replica, pods] of instances) {
      const current = replica >= 0 && replica < desired;
      if (pods.some(isTerminating) || !current) {
        draining++;
        continue;
      }
      if (pods.every(isPodReady)) ready++;
      if (pods.every((p) => p.metadata?.labels?.[LABELS.specHash] === hash)) updated++;
    }
    if (ready < desired) allReady = false;
    if (updated < desired) allUpdated = false;
    roles.push({ name: role.name, kind: role.kind, desired, ready, updated, draining });
  }

  const options = resolveOptions(deployment.spec, deployment.name, render.options);
  const serving = deployment.spec.roles.find((r) => r.kind === "server") ?? deployment.spec.roles[0];
  const service = serving
    ? observed.services.find((s) => s.metadata?.name === roleServiceName(deployment.name, serving.name))
    : undefined;
  const clusterIP = service?.spec?.clusterIP;
  const endpoint = clusterIP && clusterIP !== "None" ? `http://${clusterIP}:${options.enginePort}` : undefined;

  const ready = allReady && !applyError && endpoint !== undefined && !deleting;
  const unschedulable = problems.find((p) => p.reason === "InsufficientGPU" || p.reason === "Unschedulable");
  const firstProblem = problems[0];
  const phase: DeploymentStatus["phase"] = deleting
    ? "Deleting"
    : ready
      ? "Ready"
      : firstProblem || applyError
        ? "Degraded"
        : "Starting";
  const notReadyWhy = applyError
    ? { reason: "ApplyFailed", message: applyError }
    : (firstProblem ?? { reason: "WeightsLoading", message: "instances are starting" });
  const counts = roles.map((r) => `${r.name} ${r.ready}/${r.desired} ready`).join(", ");

  const conditions: Condition[] = [
    condition("Accepted", "True", "AgentReconciling", "the agent is reconciling the spec"),
    unschedulable
      ? condition("Scheduled", "False", unschedulable.reason, unschedulable.message)
      : condition("Scheduled", "True", "AllScheduled", "every pod is placed on a node"),
    allReady
      ? condition("RolesReady", "True", "AllRolesReady", counts)
      : condition("RolesReady", "False", notReadyWhy.reason, `${counts}; ${notReadyWhy.message}`),
    allUpdated
      ? condition("UpToDate", "True", "AllUpdated", `every instance runs generation ${generation}`)
      : condition("UpToDate", "False", "RollingUpdate", "instances are being replaced one per role at a time"),
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
    ...(phase === "Ready" ? {} : { message: deleting ? "removing every object" : notReadyWhy.message }),
  };
}

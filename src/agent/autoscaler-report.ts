// The autoscaler's pure edges: which pods to read (from the informers' cache), the reported
// metrics in the decision's terms, and the decision in the API's shapes (`status.scaling`, a
// shadow `deployment.scaled` event). Unknowns stay unknown: a pod that could not be read makes its
// role's sums missing (no decision), never a smaller number.
import type { V1Pod } from "@kubernetes/client-node";
import { LABELS } from "../../k8s/render/index.ts";
import type { Inventory } from "../domain/cluster.ts";
import type { DeploymentSpec, ScalingSignal, ScalingStatus } from "../domain/deployment-spec.ts";
import { REPORT_SIGNAL_NAMES, roleSignalsFromReport, type RoleSignals as ScalingRoleSignals, type ScalingDecision } from "../domain/scaling.ts";
import { isPodReady, isTerminating, roleOf } from "./plan.ts";
import type { EnginePod, RoleSignals, RouterPod } from "./signals/index.ts";

const MESSAGE_MAX = 4096;
const clip = (text: string) => (text.length > MESSAGE_MAX ? `${text.slice(0, MESSAGE_MAX - 1)}…` : text);
const hostOf = (ip: string) => (ip.includes(":") ? `[${ip}]` : ip);
const restartsOf = (pod: V1Pod) => (pod.status?.containerStatuses ?? []).reduce((sum, c) => sum + (c.restartCount ?? 0), 0);

/** Ready, serving, not terminating engine pods of the spec's roles: the ones that take requests. */
export function enginePodsToRead(spec: Pick<DeploymentSpec, "roles" | "engine">, pods: readonly V1Pod[], enginePort: number): EnginePod[] {
  const roles = new Set(spec.roles.map((role) => role.name));
  return pods.flatMap((pod) => {
    const ip = pod.status?.podIP;
    const role = roleOf(pod);
    if (!ip || !roles.has(role) || pod.metadata?.labels?.[LABELS.serving] !== "true" || !isPodReady(pod) || isTerminating(pod)) return [];
    return [{ uid: pod.metadata!.uid!, name: pod.metadata!.name!, role, engine: spec.engine.name, url: `http://${hostOf(ip)}:${enginePort}`, restarts: restartsOf(pod) }];
  });
}

/** Ready router pods with their admin base URL (the router serves /admin on its one port). */
export function routerPodsToRead(pods: readonly V1Pod[], routerPort: number): RouterPod[] {
  return pods.flatMap((pod) => {
    const ip = pod.status?.podIP;
    if (!ip || !isPodReady(pod) || isTerminating(pod)) return [];
    return [{ uid: pod.metadata!.uid!, name: pod.metadata!.name!, url: `http://${hostOf(ip)}:${routerPort}` }];
  });
}

/**
 * One role's report as the decision's input. `roleSignalsFromReport` already names a signal
 * missing when a pod was unreachable (its share of a sum is unknown); a pod that answered 404
 * (`not-exposed`) leaves the same hole in a sum, so it counts as missing too.
 */
export function scalingSignalsOf(report: RoleSignals, now: string): ScalingRoleSignals {
  const signals = roleSignalsFromReport(report, now);
  const unexposed = report.missing.flatMap((m) => (m.pod !== undefined && m.reason === "not-exposed" && REPORT_SIGNAL_NAMES[m.name] ? [REPORT_SIGNAL_NAMES[m.name]!] : []));
  return unexposed.length === 0 ? signals : { ...signals, missing: [...new Set([...signals.missing, ...unexposed])] };
}

/** Free GPUs per GPU type from the heartbeat's inventory; a node without a type label counts under "". */
export function freeGpusByType(inventory: Inventory | undefined): Record<string, number> | undefined {
  if (!inventory) return undefined;
  const free: Record<string, number> = {};
  for (const node of inventory.nodes) free[node.gpuType ?? ""] = (free[node.gpuType ?? ""] ?? 0) + node.gpuFree;
  return free;
}

/** Milliseconds to the next evaluation: every second while a role that may rest at zero is at zero (its demand is held at the router). */
export function evaluationPeriodMs(spec: Pick<DeploymentSpec, "roles" | "scaling">): number {
  const scaling = spec.scaling;
  if (!scaling) return 15_000;
  const atZero = scaling.roles.some((entry) => entry.minReplicas === 0 && spec.roles.find((role) => role.name === entry.name)?.replicas === 0);
  return atZero ? 1_000 : scaling.intervalSeconds * 1_000;
}

const toSignal = (s: { name: string; value: number; unit: string; observedAt: string }): ScalingSignal[] =>
  Number.isFinite(s.value) ? [{ name: s.name, value: s.value, unit: s.unit, observedAt: s.observedAt }] : [];

/** The decision as `status.scaling` (strict schema: mode is top-level only; `recommended` absent when there was no decision). */
export function scalingStatusOf(decision: ScalingDecision, lastScaleAt?: string): ScalingStatus {
  return {
    mode: decision.mode,
    roles: decision.roles.map((role) => ({
      name: role.name,
      current: role.current,
      ...(role.recommended !== undefined && { recommended: role.recommended }),
      desired: role.desired,
      reason: role.reason,
      message: clip(role.message),
      ...(role.limitedBy !== undefined && { limitedBy: role.limitedBy }),
      signals: role.signals.flatMap(toSignal),
    })),
    ...(lastScaleAt !== undefined && { lastScaleAt }),
  };
}

/** `POST /v1/agent/events` data of a shadow recommendation (AgentScaledData): `applied`/`by` are the API's to add. */
export interface ShadowEventData {
  role: string;
  from: number;
  to: number;
  mode: "shadow";
  reason: string;
  message?: string;
  signals: ScalingSignal[];
}

/** Shadow mode's events: each changed recommendation, with the signals it rests on. Active changes are recorded by the PATCH. */
export function shadowEventsOf(decision: ScalingDecision): ShadowEventData[] {
  if (decision.mode !== "shadow") return [];
  return decision.events.map((event) => ({
    role: event.role,
    from: event.from,
    to: event.to,
    mode: "shadow" as const,
    reason: event.reason,
    ...(event.message !== "" && { message: clip(event.message) }),
    signals: (decision.roles.find((role) => role.name === event.role)?.signals ?? []).flatMap(toSignal),
  }));
}

/**
 * The roles to PATCH for an active decision: the stored roles with each action's `to`, or
 * undefined when the stored spec moved since the decision (an action's `from` differs) or
 * nothing changes.
 */
export function rolesAfterActions(roles: DeploymentSpec["roles"], decision: ScalingDecision): DeploymentSpec["roles"] | undefined {
  if (decision.actions.length === 0) return undefined;
  const byRole = new Map(decision.actions.map((action) => [action.role, action]));
  for (const action of decision.actions) if (roles.find((role) => role.name === action.role)?.replicas !== action.from) return undefined;
  return roles.map((role) => (byRole.has(role.name) ? { ...role, replicas: byRole.get(role.name)!.to } : role));
}

// Retirement (docs/design.md §7.6), the pure half: a persisted retire Operation + what the agent reads now →
// the one next step. Withdrawing (every Ready router pod acknowledged the list that marks the
// instance draining) → Draining (router in-flight 0 on every router pod AND engine running+waiting
// 0 on every serving pod of the instance, on two consecutive reads at least READ_GAP_MS apart) → Deleting
// (UID preconditions) → Settling (the pods are gone and no longer hold GPUs) → Succeeded.
// Budgets are limits, not waits: a step ends as soon as its condition holds, and each budget is
// measured from the step's `startedAt` in the record, so a restarted agent keeps the same clock.
// A budget spent before deletion aborts and keeps the instance (its capacity stays); an unknown
// reading (a router or engine that did not answer) never counts as 0.
import type { V1Pod } from "@kubernetes/client-node";
import type { DeploymentSpec } from "../domain/deployment-spec.ts";
import type { Operation, OperationStep } from "../domain/operations.ts";
import { servesHttp } from "./instance-group.ts";
import { isTerminating, type RetirementReason } from "./plan.ts";

export const RETIREMENT_STEPS = ["Withdrawing", "Draining", "Deleting", "Settling"] as const;
export type RetirementStep = (typeof RETIREMENT_STEPS)[number];

export interface RetirementBudgets {
  withdrawSeconds: number;
  drainSeconds: number;
  settleSeconds: number;
}

/** The defaults of docs/design.md §3.1; admission fills them in only when `spec.scaling` is given. */
export const DEFAULT_RETIREMENT_BUDGETS: RetirementBudgets = { withdrawSeconds: 30, drainSeconds: 240, settleSeconds: 30 };

export const budgetsOf = (spec: DeploymentSpec): RetirementBudgets => ({ ...DEFAULT_RETIREMENT_BUDGETS, ...spec.scaling?.retirement });

/** What a retire operation records as its inputs: the budgets it runs under and the pods it retires. */
export interface RetirementParams extends RetirementBudgets {
  podUids: string[];
  /** The same pods' names: router endpoint ids, and what to read after a restart. */
  podNames: string[];
  /** Why the instance leaves: a rollout replaces a stale instance the spec still counts. */
  reason: RetirementReason;
}

/**
 * Whether the spec wants the retiring instance kept, so the retirement aborts before deletion. A
 * scale-down's instance is wanted once replicas grew back past it; a rollout's stale instance is
 * below replicas by design and is wanted only when it carries the current revision again (the spec
 * went back to it).
 */
export function retiringWanted(reason: RetirementReason, replica: number, replicas: number, current: boolean): boolean {
  const counted = replica >= 0 && replica < replicas;
  return reason === "rollout" ? counted && current : counted;
}

/** Two zero reads must be this far apart to count as two (a burst of passes is one read). */
export const READ_GAP_MS = 1_000;

/** The part of the record the planner reads. */
export type RetirementRecord = Pick<Operation, "id" | "role" | "phase" | "step" | "steps"> & { replica?: number; params?: Record<string, unknown> };

export interface RetirementObserved {
  /** Pods the cache holds with one of the operation's pod uids (terminating ones included). */
  pods: readonly V1Pod[];
  /** The spec wants this replica again (retiringWanted). */
  wanted: boolean;
  /** A builtin router is configured: without one there is nobody to withdraw from. */
  builtinRouter: boolean;
  /** Ready router pods, and how many of them acknowledged the list that marks the instance draining. */
  routers: { ready: number; acked: number };
  /** Settling: pods with the operation's uids still counted against a node's GPUs in a fresh pod list. */
  gpuHolders?: number;
  /** Draining: when the first of the current run of zero reads was taken (memory only). */
  firstZeroAt?: number;
}

/** One router pod's answer for the retiring endpoints; `inFlight` absent when it did not answer. */
export interface RouterInFlightReading {
  router: string;
  inFlight?: number;
  error?: string;
}

/** One engine pod's running + waiting; `load` absent when it could not be read. */
export interface EngineLoadReading {
  pod: string;
  load?: number;
  error?: string;
}

export type RetirementDecision =
  /** Stay in the step and look again shortly. */
  | { kind: "wait"; message: string; firstZeroAt?: number; progress?: { current: number; target: number; unit: string } }
  /** Record the next step (the executor acts on it from the next pass on). */
  | { kind: "advance"; to: RetirementStep; message: string }
  /** Delete these pods, each with its observed UID as a precondition. */
  | { kind: "delete"; pods: Array<{ name: string; namespace: string; uid: string }>; message: string }
  /** Before deletion: give the instance back (eligible again, capacity kept). */
  | { kind: "abort"; reason: string; message: string }
  /** After deletion: the pods cannot be kept any more; the operation fails. */
  | { kind: "fail"; reason: string; message: string }
  | { kind: "succeed"; message: string };

export function paramsOf(record: RetirementRecord): RetirementParams {
  const p = record.params ?? {};
  const num = (key: keyof RetirementBudgets) => (typeof p[key] === "number" ? (p[key] as number) : DEFAULT_RETIREMENT_BUDGETS[key]);
  const strings = (value: unknown) => (Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []);
  return {
    withdrawSeconds: num("withdrawSeconds"),
    drainSeconds: num("drainSeconds"),
    settleSeconds: num("settleSeconds"),
    podUids: strings(p.podUids),
    podNames: strings(p.podNames),
    reason: p.reason === "rollout" ? "rollout" : "scale-down",
  };
}

/** When the current step began, from the record (the open step of that name), else the last step's start. */
export function stepStartedAt(record: RetirementRecord): number {
  const open = [...record.steps].reverse().find((s: OperationStep) => s.name === record.step && s.finishedAt === undefined);
  const last = open ?? record.steps.at(-1);
  return last ? Date.parse(last.startedAt) : Number.NaN;
}

/** The step history with the open step closed and `next` opened, both at `now`. */
export function stepsAfter(record: RetirementRecord, next: string | undefined, now: Date): OperationStep[] {
  const at = now.toISOString();
  const steps = record.steps.map((s) => (s.finishedAt === undefined ? { ...s, finishedAt: at } : s));
  return next === undefined ? steps : [...steps, { name: next, startedAt: at }];
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

export function planRetirement(
  record: RetirementRecord,
  observed: RetirementObserved,
  routerReadings: readonly RouterInFlightReading[],
  engineReadings: readonly EngineLoadReading[],
  now: number,
): RetirementDecision {
  const params = paramsOf(record);
  const elapsed = now - stepStartedAt(record);
  const instance = `${record.role} r${record.replica ?? "?"}`;
  const live = observed.pods.filter((p) => !isTerminating(p));
  const step = record.step as RetirementStep;

  if ((step === "Withdrawing" || step === "Draining") && observed.wanted) {
    const why = params.reason === "rollout" ? "it runs the current revision again" : "replicas grew";
    return { kind: "abort", reason: "ReplicaWanted", message: `${instance} is wanted again (${why}); it keeps serving` };
  }
  // Nothing left to withdraw or drain (the pods went by other means): only settling remains.
  if ((step === "Withdrawing" || step === "Draining") && live.length === 0) {
    return { kind: "advance", to: "Settling", message: `${instance}'s pods are already gone or terminating` };
  }

  switch (step) {
    case "Withdrawing": {
      if (!observed.builtinRouter) return { kind: "advance", to: "Draining", message: `${instance}: no builtin router to withdraw from` };
      const { ready, acked } = observed.routers;
      if (acked >= ready) return { kind: "advance", to: "Draining", message: `${instance} is draining on ${acked}/${ready} router pods` };
      if (elapsed > params.withdrawSeconds * 1000) {
        return {
          kind: "abort",
          reason: "WithdrawBudgetExceeded",
          message: `only ${acked}/${ready} router pods confirmed ${instance} as draining within ${params.withdrawSeconds} s; it stays eligible and keeps its capacity`,
        };
      }
      return { kind: "wait", message: `${instance}: ${acked}/${ready} router pods confirmed draining` };
    }
    case "Draining": {
      const zero = drainedNow(observed, routerReadings, engineReadings);
      if (zero.drained) {
        // Two consecutive zero reads, READ_GAP_MS apart: a request between reads resets the run.
        if (observed.firstZeroAt !== undefined && now - observed.firstZeroAt >= READ_GAP_MS) {
          return { kind: "advance", to: "Deleting", message: `${instance} drained: nothing in flight on two reads ${seconds(now - observed.firstZeroAt)} apart` };
        }
        if (elapsed <= params.drainSeconds * 1000) {
          return { kind: "wait", message: `${instance}: nothing in flight; confirming`, firstZeroAt: observed.firstZeroAt ?? now, progress: zero.progress };
        }
      }
      if (elapsed > params.drainSeconds * 1000) {
        return {
          kind: "abort",
          reason: "DrainBudgetExceeded",
          message: `${instance} did not drain within ${params.drainSeconds} s (${zero.why}); it is eligible again and keeps its capacity`,
        };
      }
      return { kind: "wait", message: `${instance}: ${zero.why}`, progress: zero.progress };
    }
    case "Deleting": {
      const left = live.map((p) => ({ name: p.metadata!.name!, namespace: p.metadata!.namespace!, uid: p.metadata!.uid! }));
      if (left.length > 0) return { kind: "delete", pods: left, message: `deleting ${left.map((p) => p.name).join(", ")}` };
      return { kind: "advance", to: "Settling", message: `${instance}'s pods are terminating` };
    }
    case "Settling": {
      const gone = observed.pods.length === 0 && observed.gpuHolders === 0;
      if (gone) return { kind: "succeed", message: `${instance} retired: its pods are gone and their GPUs free` };
      if (elapsed > params.settleSeconds * 1000) {
        const what = observed.pods.length > 0 ? `${observed.pods.length} pod(s) still present` : `their GPUs not yet shown free`;
        return { kind: "fail", reason: "SettleBudgetExceeded", message: `${instance} was deleted but did not settle within ${params.settleSeconds} s: ${what}` };
      }
      return { kind: "wait", message: observed.pods.length > 0 ? `${instance}: waiting for the pods to go` : `${instance}: waiting for the GPUs to show free` };
    }
    default:
      return { kind: "fail", reason: "UnknownStep", message: `unknown retirement step ${record.step}` };
  }
}

/**
 * One read of "is anything in flight": every Ready router pod answered with 0 for the instance's
 * endpoints (for a decode endpoint this covers the decode leg, KV transfer included: the router
 * counts it from the leg's start until its stream ends), and every pod of the instance answered
 * running + waiting 0. A missing answer is "not drained", never 0.
 */
function drainedNow(
  observed: RetirementObserved,
  routerReadings: readonly RouterInFlightReading[],
  engineReadings: readonly EngineLoadReading[],
): { drained: boolean; why: string; progress?: { current: number; target: number; unit: string } } {
  const problems: string[] = [];
  let inFlight = 0;
  if (observed.builtinRouter) {
    const answered = routerReadings.filter((r) => r.inFlight !== undefined);
    for (const r of routerReadings) if (r.inFlight === undefined) problems.push(`router ${r.router} unreadable${r.error ? ` (${r.error})` : ""}`);
    if (answered.length < observed.routers.ready) problems.push(`${answered.length}/${observed.routers.ready} router pods answered`);
    const routed = answered.reduce((sum, r) => sum + r.inFlight!, 0);
    if (routed > 0) problems.push(`${routed} request(s) in flight at the router`);
    inFlight += routed;
  }
  // Only members that serve HTTP hold requests; headless followers have no /metrics (§7.6).
  const live = observed.pods.filter((p) => !isTerminating(p) && servesHttp(p)).map((p) => p.metadata!.name!);
  for (const name of live) {
    const reading = engineReadings.find((r) => r.pod === name);
    if (reading?.load === undefined) {
      problems.push(`engine ${name} unreadable${reading?.error ? ` (${reading.error})` : ""}`);
      continue;
    }
    if (reading.load > 0) problems.push(`${reading.load} request(s) running or waiting on ${name}`);
    inFlight += reading.load;
  }
  return {
    drained: problems.length === 0,
    why: problems.length === 0 ? "nothing in flight" : problems.join("; "),
    progress: { current: inFlight, target: 0, unit: "requests" },
  };
}

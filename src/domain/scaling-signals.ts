// The autoscaler's inputs, outputs and carried state (docs/design.md §7). Plain types: the agent
// builds them in memory from its metrics scraper and informers, nothing here crosses the API.
// Invariant: an unread value is `undefined` and named in `missing`, never 0.
import type { DeploymentSpec } from "./deployment-spec.ts";

/** Names of the per-role signals, as listed in `RoleSignals.missing` and reported in `signals`. */
export const SIGNAL_NAMES = ["running", "waiting", "ttftMs", "itlMs", "queueTimeMs", "requestsPerSecond", "inputTokens", "outputTokens"] as const;
export type SignalName = (typeof SIGNAL_NAMES)[number];

/**
 * One role's engine metrics aggregated over the last interval.
 * - `running`, `waiting`: gauges summed over the role's ready pods at `observedAt`.
 * - `ttftMs`, `itlMs`, `queueTimeMs`, `inputTokens`, `outputTokens`: interval means from histogram deltas; absent
 *   (and not in `missing`) when no request finished in the interval: no sample, not a failed read.
 * - `requestsPerSecond`: requests finished per second over the interval.
 * - `podCount`: ready pods whose gauges were summed.
 * - `missing`: signals whose read failed (scrape error, metric absent). A role whose algorithm
 *   needs a missing signal gets no decision.
 */
export interface RoleSignals {
  running?: number;
  waiting?: number;
  ttftMs?: number;
  itlMs?: number;
  /** Mean time the interval's requests waited for a batch slot (part of their TTFT). */
  queueTimeMs?: number;
  requestsPerSecond?: number;
  inputTokens?: number;
  outputTokens?: number;
  /** First tokens the TTFT mean averages: the interval's requests, counted (not a rate × a nominal interval). */
  firstTokens?: number;
  podCount: number;
  /** ISO 8601 time of the read. */
  observedAt: string;
  missing: readonly string[];
}

/** What the autoscaler reads from the spec: scaling config, roles and their shapes, model, engine, router. */
export type ScalingSpec = Pick<DeploymentSpec, "model" | "engine" | "roles" | "scaling" | "router">;

export interface ScalingInput {
  /** Evaluation time (ISO 8601). */
  now: string;
  spec: ScalingSpec;
  /** Per role name; an absent entry is a failed read of the whole role. */
  signals: Readonly<Record<string, RoleSignals | undefined>>;
  /** Requests the built-in router holds for roles at zero replicas; undefined = not read. */
  held?: number;
  /** When `held` was read (ISO 8601); defaults to `now`. */
  heldObservedAt?: string;
  /** `roles[].replicas` of the spec as stored now, per role name. */
  currentReplicas: Readonly<Record<string, number>>;
  /** Free GPUs in the target cluster by GPU type; undefined = unknown (no bound). */
  freeGpus?: Readonly<Record<string, number>>;
  /** GPUs the project quota still allows; undefined = no quota. */
  quotaGpusLeft?: number;
  /** A replica retirement of this deployment is under way (an Operation not yet finished). */
  retirementInFlight: boolean;
}

// ---------------------------------------------------------------------------------------------
// Output

export interface SignalUsed {
  name: string;
  value: number;
  unit: string;
  observedAt: string;
}

export const LIMITS = ["MaxReplicas", "MinReplicas", "Quota", "InsufficientGPU", "PdRatio", "Stabilization", "RetirementInFlight"] as const;
export type LimitedBy = (typeof LIMITS)[number];

export interface RoleScalingDecision {
  name: string;
  /** `roles[].replicas` now. */
  current: number;
  /** What the algorithm asks for, before any bound; absent when there was no decision. */
  recommended?: number;
  /** The target after bounds, stabilization and capacity. */
  desired: number;
  /** CamelCase cause of `desired`: QueueDepth, WithinTolerance, SlaCapacity, SlaUnreachable, MetricsMissing, RequestsHeld, Idle, NoPerfModel. */
  reason: string;
  message: string;
  /** The bound that moved `desired` away from `recommended`, the last one applied. */
  limitedBy?: LimitedBy;
  signals: SignalUsed[];
  mode: "shadow" | "active";
}

/** One write of `roles[].replicas`. A scale-down may span several replicas; the agent retires them one at a time. */
export interface ScalingAction {
  type: "scaleUp" | "scaleDown";
  role: string;
  from: number;
  to: number;
}

export interface ScalingCondition {
  type: "Scaling";
  status: "True" | "False";
  /** ScaledUp, ScaledDown, Recommended (shadow), Steady, CapacityShort, MetricsMissing. */
  reason: string;
  message: string;
}

/** Payload for a `deployment.scaled` event: every change of a role's target (active) or recommendation (shadow). */
export interface ScalingEventData {
  role: string;
  from: number;
  to: number;
  mode: "shadow" | "active";
  applied: boolean;
  reason: string;
  message: string;
  by: "autoscaler";
}

export interface ScalingDecision {
  mode: "off" | "shadow" | "active";
  evaluatedAt: string;
  roles: RoleScalingDecision[];
  /** Writes to make now: always empty unless mode is active. Scale-ups first; at most one scale-down. */
  actions: ScalingAction[];
  /** Absent when mode is off. */
  condition?: ScalingCondition;
  events: ScalingEventData[];
}

// ---------------------------------------------------------------------------------------------
// State the caller keeps between evaluations (in memory, or persisted as JSON)

export interface RoleScalingState {
  /** Start of the unbroken run of evaluations the history covers (ISO 8601). */
  since: string;
  /** Bounded recommendations within the stabilization window, oldest first. */
  history: { at: string; replicas: number }[];
  /** The last evaluation that produced a recommendation (ISO 8601). */
  lastAt?: string;
  /** The last reported desired count (events fire when it changes). */
  lastDesired?: number;
  /** The last observed workload means, used while an interval has no finished request. */
  workload?: { inputTokens: number; outputTokens: number };
  /** The last applied sla correction factors, used while an interval cannot measure one. */
  corrections?: { ttft?: number; itl?: number };
  /** Σ(running + waiting) at the last read (ISO 8601 time): its growth to the next read counts as arrivals. */
  inEngines?: { at: string; requests: number };
  /** The role's ready pods read, and since when (ISO 8601) that count has held. */
  readyPods?: { count: number; since: string };
}

export interface ScalingState {
  roles: Record<string, RoleScalingState>;
}

export function emptyScalingState(): ScalingState {
  return { roles: {} };
}

// ---------------------------------------------------------------------------------------------
// From the agent's metrics report (src/agent/signals: `RoleMetrics`), structurally typed

/** Report names (src/agent/signals/signals.ts ENGINE_SIGNALS) → the autoscaler's. */
export const REPORT_SIGNAL_NAMES: Readonly<Record<string, SignalName>> = {
  requests_running: "running",
  requests_waiting: "waiting",
  ttft_mean: "ttftMs",
  itl_mean: "itlMs",
  queue_time_mean: "queueTimeMs",
  requests_per_second: "requestsPerSecond",
  prompt_tokens_per_request: "inputTokens",
  generation_tokens_per_request: "outputTokens",
};

export interface ReportedRole {
  signals: readonly { name: string; value?: number; podCount: number; samples?: number; observedAt: string }[];
  missing: readonly { name: string; pod?: string; reason: string }[];
}

/**
 * One role's report as the autoscaler's input. A signal counts as missing when the whole role
 * lacks it or a pod was unreachable (its share of a sum is unknown: reading it as 0 could scale
 * down); a pod's `first-read`/`reset` leaves the other pods' interval values standing.
 * `podCount` is that of the running gauge; `observedAt` the latest read.
 */
export function roleSignalsFromReport(report: ReportedRole, fallbackObservedAt: string): RoleSignals {
  const out: RoleSignals = { podCount: 0, observedAt: fallbackObservedAt, missing: [] };
  const missing = new Set<string>();
  let latest = "";
  for (const s of report.signals) {
    const name = REPORT_SIGNAL_NAMES[s.name];
    if (!name) continue;
    if (s.value !== undefined) out[name] = s.value;
    if (name === "running") out.podCount = s.podCount;
    if (name === "ttftMs" && s.samples !== undefined) out.firstTokens = s.samples;
    if (s.observedAt > latest) latest = s.observedAt;
  }
  for (const m of report.missing) {
    const name = REPORT_SIGNAL_NAMES[m.name];
    if (name && (m.pod === undefined || m.reason === "unreachable")) missing.add(name);
  }
  return { ...out, observedAt: latest || fallbackObservedAt, missing: [...missing] };
}

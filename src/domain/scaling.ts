// The autoscaler's decision for one deployment and one interval (docs/design.md §7): per role a
// recommendation (queue_depth or sla), then min/max, scale-down stabilization and the
// one-retirement rule, the prefill:decode ratio, and capacity (quota, free GPUs). Pure: signals,
// spec and the carried state in; decisions, writes to make, a condition, events and state' out.
import type { Role } from "./deployment-spec.ts";
import { applyPdRatio, clampReplicas, describeShortage, fitCapacity, ratioHolds, type RatioSide, type Shortage } from "./scaling-bounds.ts";
import { recommendQueueDepth } from "./scaling-queue-depth.ts";
import {
  emptyScalingState,
  type LimitedBy,
  type RoleScalingDecision,
  type RoleScalingState,
  type RoleSignals,
  type ScalingAction,
  type ScalingCondition,
  type ScalingDecision,
  type ScalingEventData,
  type ScalingInput,
  type ScalingSpec,
  type ScalingState,
  type SignalName,
  type SignalUsed,
} from "./scaling-signals.ts";
import { gpusPerReplica, recommendSlaAggregated, recommendSlaDecode, recommendSlaPrefill, roleShape, servingRanks } from "./scaling-sla.ts";
import { recordRecommendation, stabilize } from "./scaling-stabilization.ts";
import type { Workload } from "./serving-estimate.ts";

export * from "./scaling-signals.ts";

/**
 * sla's tolerance band, HPA's default: while the load needs within ±10% of the current replicas
 * nothing changes. Arrival counts over one interval are Poisson-noisy (±15% at 3 requests/s over
 * 15 s), and a replica added on noise is held for the whole scale-down stabilization window.
 */
export const SLA_TOLERANCE = 0.1;

/**
 * Intervals a role's count of ready pods must have held before its latencies correct the model:
 * when replicas join, the router fills them with a burst of prompts (prefill-heavy steps, higher
 * ITL); when they leave, their load lands on the others. Either is a transient, not model error.
 */
export const STEADY_INTERVALS = 2;

/** Workload assumed until a request has finished (the deployment-request defaults). */
export const DEFAULT_SCALING_WORKLOAD: Readonly<Workload> = { inputTokens: 4000, outputTokens: 1000 };

const UNITS: Record<SignalName, string> = {
  running: "requests",
  waiting: "requests",
  ttftMs: "ms",
  itlMs: "ms",
  queueTimeMs: "ms",
  requestsPerSecond: "requests/s",
  inputTokens: "tokens",
  outputTokens: "tokens",
};

/** Signals each algorithm reads, per role kind. A missing one means no decision for the role. */
function signalsNeeded(algorithm: "queue_depth" | "sla", kind: Role["kind"]): SignalName[] {
  if (algorithm === "queue_depth") return ["running", "waiting"];
  switch (kind) {
    case "prefill":
      return ["requestsPerSecond", "ttftMs", "inputTokens"];
    case "decode":
      return ["running", "waiting", "requestsPerSecond", "itlMs", "inputTokens", "outputTokens"];
    case "encode":
      return [];
    default:
      return ["running", "waiting", "requestsPerSecond", "ttftMs", "itlMs", "inputTokens", "outputTokens"];
  }
}

/** Gauges and rates must be present; latency and token means may be absent (no request finished). */
const ALWAYS_PRESENT: ReadonlySet<SignalName> = new Set(["running", "waiting", "requestsPerSecond"]);

interface Recommendation {
  recommended?: number;
  reason: string;
  message: string;
  signals: SignalUsed[];
  workload?: Workload;
  /** sla: the correction factors in use, carried to intervals that cannot measure them. */
  corrections?: { ttft?: number; itl?: number };
  /** sla: the requests in the engines now, for the next interval's arrival rate. */
  inEngines?: { at: string; requests: number };
  /** sla: the ready pods read now, and since when that count has held. */
  readyPods?: { count: number; since: string };
}

/**
 * Requests arriving per second since `previous` (the last evaluation's count; the state drops it
 * when an evaluation has none): those that finished plus the growth of those in the engines.
 * Undefined without a previous count, or with one not older than this.
 */
export function arrivalsPerSecond(finishedPerSecond: number, now: { at: string; requests: number }, previous: { at: string; requests: number } | undefined): number | undefined {
  if (!previous) return undefined;
  const seconds = (Date.parse(now.at) - Date.parse(previous.at)) / 1000;
  if (!(seconds > 0)) return undefined;
  // A pod lost with its requests shrinks the count without finishing them: never below 0.
  return Math.max(0, finishedPerSecond + (now.requests - previous.requests) / seconds);
}

function recommendRole(role: Role, current: number, input: ScalingInput, previous: RoleScalingState | undefined): Recommendation {
  const scaling = input.spec.scaling!;
  if (current === 0) {
    // Scale to zero: a role at zero has no pods to read; the router's held requests decide.
    const held = input.held;
    if (held === undefined) return { reason: "MetricsMissing", message: "role is at zero replicas and the router's held-request count was not read", signals: [] };
    const signals = [{ name: "held", value: held, unit: "requests", observedAt: input.heldObservedAt ?? input.now }];
    if (held > 0) return { recommended: 1, reason: "RequestsHeld", message: `${held} requests held at the router for a role at zero replicas`, signals };
    return { recommended: 0, reason: "Idle", message: "no replicas and no requests held", signals };
  }
  const s: RoleSignals | undefined = input.signals[role.name];
  if (!s) return { reason: "MetricsMissing", message: `no metrics read for role ${role.name} this interval`, signals: [] };
  const needed = signalsNeeded(scaling.algorithm.type, role.kind);
  const missing = needed.filter((n) => s.missing.includes(n) || (ALWAYS_PRESENT.has(n) && s[n] === undefined));
  if (missing.length > 0) return { reason: "MetricsMissing", message: `could not read ${missing.join(", ")} for role ${role.name}; no decision this interval`, signals: [] };
  if (s.podCount === 0) return { reason: "MetricsMissing", message: `role ${role.name} has ${current} replicas but no ready pod to read; no decision this interval`, signals: [] };
  // Optional reads: used when there, reported with the rest.
  const optional: SignalName[] = scaling.algorithm.type === "sla" && role.kind !== "prefill" && !s.missing.includes("queueTimeMs") ? ["queueTimeMs"] : [];
  const signals: SignalUsed[] = [...needed, ...optional].flatMap((n) => (s[n] === undefined ? [] : [{ name: n, value: s[n]!, unit: UNITS[n], observedAt: s.observedAt }]));
  const running = s.running ?? 0;
  const waiting = s.waiting ?? 0;

  const algorithm = scaling.algorithm;
  if (algorithm.type === "queue_depth") {
    const r = recommendQueueDepth({ running, waiting, current, targetPerReplica: algorithm.targetPerReplica, tolerance: algorithm.tolerance });
    return { recommended: r.replicas, reason: r.reason, message: r.message, signals };
  }

  if (role.kind === "encode") return { recommended: current, reason: "NoPerfModel", message: "the perf model has no encoder; sla keeps an encode role at its count", signals };
  const mean = (observed: number | undefined, last: number | undefined, fallback: number) => Math.max(1, Math.round(observed ?? last ?? fallback));
  const workload: Workload = {
    inputTokens: mean(s.inputTokens, previous?.workload?.inputTokens, DEFAULT_SCALING_WORKLOAD.inputTokens),
    outputTokens: mean(s.outputTokens, previous?.workload?.outputTokens, DEFAULT_SCALING_WORKLOAD.outputTokens),
  };
  const shape = roleShape(input.spec.model.name, input.spec.engine.name, role);
  const ranks = servingRanks(shape, s.podCount);
  const rate = s.requestsPerSecond ?? 0;
  // Requests behind the latency means; older reports without the count: the rate over a nominal interval.
  const samples = s.firstTokens ?? Math.round(rate * scaling.intervalSeconds);
  const demand = running + waiting;
  const inEngines = { at: s.observedAt, requests: demand };
  const readyPods = previous?.readyPods?.count === s.podCount ? previous.readyPods : { count: s.podCount, since: input.now };
  const steadySeconds = (Date.parse(input.now) - Date.parse(readyPods.since)) / 1000;
  const unsteady =
    steadySeconds < STEADY_INTERVALS * scaling.intervalSeconds
      ? `${s.podCount} ready pods for ${Math.round(steadySeconds)} s, under ${STEADY_INTERVALS} intervals: latencies measure the change`
      : undefined;
  const queueTimeMs = optional.includes("queueTimeMs") ? s.queueTimeMs : undefined;
  const observed = {
    ...(s.ttftMs !== undefined && { ttftMs: s.ttftMs }),
    ...(s.itlMs !== undefined && { itlMs: s.itlMs }),
    ...(queueTimeMs !== undefined && { queueTimeMs }),
    // Latencies are those of the batch the engines ran: waiting requests neither decode nor prefill.
    ...(ranks > 0 && { concurrencyPerRank: running / ranks }),
    waiting,
    samples,
    ...(previous?.corrections && { carried: previous.corrections }),
    ...(unsteady && { unsteady }),
  };
  const arrivals = arrivalsPerSecond(rate, inEngines, previous?.inEngines);
  const r =
    role.kind === "prefill"
      ? recommendSlaPrefill(shape, workload, rate, { ...observed, ranks }, algorithm.ttftMs)
      : role.kind === "decode"
        ? recommendSlaDecode(shape, workload, demand, observed, algorithm.itlMs)
        : recommendSlaAggregated(shape, workload, { inEngines: demand, ...(arrivals !== undefined && { arrivalsPerSecond: arrivals }) }, observed, algorithm);
  const ratio = r.needed / current;
  const within = r.reason === "SlaCapacity" && r.replicas !== current && Math.abs(ratio - 1) <= SLA_TOLERANCE + 1e-9;
  const corrections = {
    ...(r.ttftCorrection?.applied && { ttft: r.ttftCorrection.factor }),
    ...(r.itlCorrection?.applied && { itl: r.itlCorrection.factor }),
  };
  if (within) {
    const message = `${r.message}; ${round2(r.needed)} replicas' worth is within ${SLA_TOLERANCE * 100}% of ${current}, keeping ${current}`;
    return { recommended: current, reason: "WithinTolerance", message, signals, workload, corrections, inEngines, readyPods };
  }
  return { recommended: r.replicas, reason: r.reason, message: r.message, signals, workload, corrections, inEngines, readyPods };
}

interface Working {
  role: Role;
  current: number;
  min: number;
  max: number;
  rec: Recommendation;
  /** After min/max: what the stabilization window records. */
  bounded?: number;
  desired: number;
  limitedBy?: LimitedBy;
  notes: string[];
  state?: RoleScalingState;
}

export interface RoleBeyondSlots {
  role: string;
  /** Requests the router has in flight to the role. */
  inFlight: number;
  /** Σ batch slots of the role's ready engines (sequence limit × ranks). */
  slots: number;
}

/**
 * Roles whose requests at the router outnumber the batch slots of their ready engines: requests
 * are queueing in the engines, and every second until the next evaluation adds to TTFT. The
 * autoscaler then evaluates at once instead of at the end of its interval — Knative's panic mode,
 * read from berth's own router. Roles at zero (the held requests decide), without ready pods, or
 * already at maxReplicas (an evaluation could not add one) are left out.
 */
export function rolesBeyondSlots(spec: ScalingSpec, inFlight: Readonly<Record<string, number>>, readyPods: Readonly<Record<string, number>>): RoleBeyondSlots[] {
  const out: RoleBeyondSlots[] = [];
  for (const entry of spec.scaling?.roles ?? []) {
    const role = spec.roles.find((r) => r.name === entry.name);
    const pods = readyPods[entry.name] ?? 0;
    const requests = inFlight[entry.name];
    if (!role || role.replicas === 0 || role.replicas >= entry.maxReplicas || pods === 0 || requests === undefined) continue;
    const shape = roleShape(spec.model.name, spec.engine.name, role);
    const slots = Math.floor(servingRanks(shape, pods) * shape.limits.maxRunning);
    if (requests > slots) out.push({ role: role.name, inFlight: requests, slots });
  }
  return out;
}

/**
 * One evaluation. Order: recommendation → min/max (what the window records) → stabilization and
 * the retirement rule → at most one scale-down → pdRatio → capacity (quota, then free GPUs).
 * The ratio comes after stabilization so that a held-up side pulls the other up with it, and
 * the one scale-down is chosen so that it survives the ratio (else PD could deadlock, each side
 * held up by the other). Capacity comes last: it only holds scale-ups back, keeping the ratio
 * when it can, so free GPUs moving by one never turn into a scale-down.
 *
 * Scale-down: `to` may be several replicas below `from`; the agent writes it and retires one
 * replica at a time (each a persisted operation). While a retirement is in flight no new
 * scale-down is decided, and only one role of a deployment scales down per interval.
 */
export function decideScaling(input: ScalingInput, state: ScalingState = emptyScalingState()): { decision: ScalingDecision; state: ScalingState } {
  const scaling = input.spec.scaling;
  if (!scaling || scaling.mode === "off") {
    return { decision: { mode: "off", evaluatedAt: input.now, roles: [], actions: [], events: [] }, state: emptyScalingState() };
  }
  const mode = scaling.mode;
  const window = scaling.scaleDownStabilizationSeconds;
  // minReplicas 0 needs the built-in router, which holds requests while a role is at zero.
  const zeroAllowed = input.spec.router?.kind === "builtin";

  const working: Working[] = [];
  for (const role of input.spec.roles) {
    const entry = scaling.roles.find((r) => r.name === role.name);
    if (!entry) continue;
    const current = input.currentReplicas[role.name] ?? role.replicas;
    const min = entry.minReplicas === 0 && !zeroAllowed ? 1 : entry.minReplicas;
    const previous = state.roles[role.name];
    const rec = recommendRole(role, current, input, previous);
    const w: Working = { role, current, min, max: entry.maxReplicas, rec, desired: current, notes: [], ...(previous && { state: previous }) };
    if (rec.recommended !== undefined) {
      const clamped = clampReplicas(rec.recommended, min, entry.maxReplicas);
      w.bounded = clamped.replicas;
      if (clamped.limitedBy) {
        w.limitedBy = clamped.limitedBy;
        w.notes.push(clamped.limitedBy === "MaxReplicas" ? `capped at maxReplicas ${entry.maxReplicas}` : `raised to minReplicas ${min}`);
      }
      w.state = recordRecommendation(previous, input.now, clamped.replicas, window, scaling.intervalSeconds);
      const st = stabilize({ current, recommended: clamped.replicas, state: w.state, now: input.now, windowSeconds: window, retirementInFlight: input.retirementInFlight });
      w.desired = st.desired;
      if (st.limitedBy) {
        w.limitedBy = st.limitedBy;
        w.notes.push(st.message!);
      }
    }
    working.push(w);
  }

  // Prefill:decode ratio (PD only). A side the autoscaler does not manage is fixed at its count.
  const prefillRole = input.spec.roles.find((r) => r.kind === "prefill");
  const decodeRole = input.spec.roles.find((r) => r.kind === "decode");
  const ratio = prefillRole && decodeRole ? scaling.pdRatio : undefined;
  const byName = new Map(working.map((w) => [w.role.name, w]));
  const currentOf = (role: Role) => input.currentReplicas[role.name] ?? role.replicas;
  /** The ratio applied to a set of targets; unmanaged sides stay at their count. */
  const withRatio = (desired: Readonly<Record<string, number>>): { desired: Record<string, number>; holds: boolean } => {
    if (!ratio || !prefillRole || !decodeRole) return { desired: { ...desired }, holds: true };
    const side = (role: Role): RatioSide => {
      const w = byName.get(role.name);
      if (w) return { desired: desired[role.name]!, current: w.current, min: w.min, max: w.max };
      const current = currentOf(role);
      return { desired: current, current, min: current, max: current };
    };
    const adjusted = applyPdRatio(side(prefillRole), side(decodeRole), ratio);
    const next = { ...desired };
    if (byName.has(prefillRole.name)) next[prefillRole.name] = adjusted.prefill;
    if (byName.has(decodeRole.name)) next[decodeRole.name] = adjusted.decode;
    return { desired: next, holds: adjusted.holds };
  };

  // At most one role scales down per interval (each retirement is one replica, one at a time):
  // the first, in spec order, whose scale-down survives the ratio with the others held.
  const stabilized: Record<string, number> = Object.fromEntries(working.map((w) => [w.role.name, w.desired]));
  const shrinking = working.filter((w) => w.desired < w.current);
  const holdOthers = (keep: Working | undefined) => {
    const held = { ...stabilized };
    for (const w of shrinking) if (w !== keep) held[w.role.name] = w.current;
    return held;
  };
  const chosen = shrinking.find((w) => withRatio(holdOthers(w)).desired[w.role.name]! < w.current);
  for (const w of shrinking) {
    if (w === chosen) continue;
    w.notes.push(
      chosen
        ? `scale-down to ${w.desired} waits: role ${chosen.role.name} scales down first (one retirement at a time)`
        : `scale-down to ${w.desired} waits: alone it would break the prefill:decode ratio`,
    );
    w.limitedBy = chosen ? "RetirementInFlight" : "PdRatio";
  }
  const ratioed = withRatio(holdOthers(chosen));
  for (const w of working) {
    const value = ratioed.desired[w.role.name]!;
    const before = holdOthers(chosen)[w.role.name]!;
    w.desired = value;
    if (value === before) continue;
    w.notes.push(`prefill:decode kept within [${ratio!.min}, ${ratio!.max}]: ${before} → ${value}`);
    w.limitedBy = "PdRatio";
  }
  if (!ratioed.holds) {
    for (const w of working.filter((x) => x.role === prefillRole || x.role === decodeRole)) {
      w.notes.push(`prefill:decode is outside [${ratio!.min}, ${ratio!.max}] and min/max replicas do not allow fixing it`);
    }
  }

  // Capacity: scale-ups that fit the quota and the free GPUs.
  const shape = (w: Working) => ({
    gpusPerReplica: gpusPerReplica(w.role),
    ...(w.role.resources.gpuType !== undefined && { gpuType: w.role.resources.gpuType }),
  });
  const keepsRatio = (desired: Readonly<Record<string, number>>) => {
    if (!ratio || !prefillRole || !decodeRole) return true;
    const p = desired[prefillRole.name] ?? currentOf(prefillRole);
    const d = desired[decodeRole.name] ?? currentOf(decodeRole);
    return ratioHolds(p, d, ratio);
  };
  const fitted = fitCapacity(
    working.map((w) => ({ name: w.role.name, current: w.current, desired: w.desired, ...shape(w) })),
    { ...(input.quotaGpusLeft !== undefined && { quotaGpusLeft: input.quotaGpusLeft }), ...(input.freeGpus !== undefined && { freeGpus: input.freeGpus }) },
    keepsRatio,
  );
  const shortages: Shortage[] = fitted.shortages;
  const shortageMessages: string[] = [];
  for (const s of shortages) {
    const w = byName.get(s.role)!;
    w.desired = fitted.desired[s.role]!;
    w.limitedBy = s.limitedBy;
    const message = describeShortage(s, shape(w).gpusPerReplica, w.current);
    w.notes.push(message);
    shortageMessages.push(message);
  }

  const roles: RoleScalingDecision[] = working.map((w) => ({
    name: w.role.name,
    current: w.current,
    ...(w.rec.recommended !== undefined && { recommended: w.rec.recommended }),
    desired: w.desired,
    reason: w.rec.reason,
    message: [w.rec.message, ...w.notes].join("; "),
    ...(w.limitedBy && { limitedBy: w.limitedBy }),
    signals: w.rec.signals,
    mode,
  }));

  const changes = working.filter((w) => w.desired !== w.current);
  const allActions: ScalingAction[] = [
    ...changes.filter((w) => w.desired > w.current).map((w) => ({ type: "scaleUp" as const, role: w.role.name, from: w.current, to: w.desired })),
    ...changes.filter((w) => w.desired < w.current).map((w) => ({ type: "scaleDown" as const, role: w.role.name, from: w.current, to: w.desired })),
  ];
  const actions = mode === "active" ? allActions : [];

  const events: ScalingEventData[] = working
    .filter((w) => (mode === "active" ? w.desired !== w.current : w.desired !== (w.state?.lastDesired ?? w.current)))
    .map((w) => ({
      role: w.role.name,
      from: w.current,
      to: w.desired,
      mode,
      applied: mode === "active",
      reason: w.limitedBy ?? w.rec.reason,
      message: roles.find((r) => r.name === w.role.name)!.message,
      by: "autoscaler" as const,
    }));

  const condition = scalingCondition(mode, working, allActions, shortageMessages);

  const next: ScalingState = { roles: {} };
  for (const w of working) {
    const base = w.state ?? (w.rec.recommended === undefined ? undefined : { since: input.now, history: [] });
    if (!base) continue;
    const corrections = w.rec.corrections ?? base.corrections;
    // A count is only good for the next interval's growth: an evaluation without one drops it.
    const { inEngines: _stale, readyPods: _unread, ...kept } = base;
    next.roles[w.role.name] = {
      ...kept,
      lastDesired: w.desired,
      ...((w.rec.workload ?? base.workload) && { workload: w.rec.workload ?? base.workload }),
      ...(corrections && { corrections }),
      ...(w.rec.inEngines && { inEngines: w.rec.inEngines }),
      ...(w.rec.readyPods && { readyPods: w.rec.readyPods }),
    };
  }
  return { decision: { mode, evaluatedAt: input.now, roles, actions, condition, events }, state: next };
}

function scalingCondition(mode: "shadow" | "active", working: readonly Working[], changes: readonly ScalingAction[], shortages: readonly string[]): ScalingCondition {
  if (shortages.length > 0) return { type: "Scaling", status: "False", reason: "CapacityShort", message: shortages.join("; ") };
  const missing = working.filter((w) => w.rec.recommended === undefined);
  if (changes.length > 0) {
    const list = changes.map((a) => `${a.role} ${a.from} → ${a.to}`).join(", ");
    if (mode === "shadow") return { type: "Scaling", status: "True", reason: "Recommended", message: `shadow mode, not applied: ${list}` };
    return { type: "Scaling", status: "True", reason: changes.some((a) => a.type === "scaleUp") ? "ScaledUp" : "ScaledDown", message: list };
  }
  if (working.length > 0 && missing.length === working.length) {
    return { type: "Scaling", status: "False", reason: "MetricsMissing", message: missing.map((w) => w.rec.message).join("; ") };
  }
  const note = missing.length > 0 ? `; no decision for ${missing.map((w) => w.role.name).join(", ")} (metrics missing)` : "";
  return { type: "Scaling", status: "False", reason: "Steady", message: `every role at its target${note}` };
}

function round2(x: number): number {
  return Number(x.toFixed(2));
}

// The autoscaler loop (docs/design.md §7): one bounded loop per deployment whose
// `spec.scaling.mode` is not off. Each interval (each second while a role rests at zero; at once
// when the builtin router holds more requests for a role than its engines have batch slots): read
// every ready engine pod and router pod, report the per-role metrics, decide (pure, in
// src/domain/scaling.ts), hand the result to the reconcile pass (the one status writer) and wait
// until it is written, then — active mode only — PATCH `spec.roles[*].replicas` with If-Match on
// the resourceVersion that write returned. Samples and the decision state live in memory per
// deployment: a restarted agent starts with first reads (no rates) and an empty window, which
// only delays scale-downs.
import { sleepUnlessAborted } from "./abortable.ts";
import { resolveOptions } from "../../k8s/render/index.ts";
import type { Inventory } from "../domain/cluster.ts";
import type { Deployment } from "../domain/deployment.ts";
import { decideScaling, emptyScalingState, type RoleBeyondSlots, rolesBeyondSlots, type ScalingCondition, type ScalingDecision, type ScalingState } from "../domain/scaling.ts";
import type { ScalingStatus } from "../domain/deployment-spec.ts";
import { type AgentApi, ApiError } from "./api-client.ts";
import {
  enginePodsToRead,
  evaluationPeriodMs,
  freeGpusByType,
  rolesAfterActions,
  routerPodsToRead,
  scalingSignalsOf,
  shadowEventsOf,
  scalingStatusOf,
} from "./autoscaler-report.ts";
import type { Observed } from "./observe.ts";
import { roleOf } from "./plan.ts";
import { tokenFromSecret } from "./router-endpoints.ts";
import { aggregateRoles, type EngineSample, readRouters, routerSignalsByRole, scrapePods, totalHeld } from "./signals/index.ts";

/** What the reconcile pass puts into status for this deployment. */
export interface ScalingReport {
  status: ScalingStatus;
  condition?: ScalingCondition;
}

export interface AutoscalerDeps {
  api: AgentApi;
  /** The deployment as the agent knows it now; undefined once it is gone. */
  item(key: string): { deployment: Deployment; deleting: boolean } | undefined;
  /** The deployment's objects from the informers' cache; undefined until the kinds it reads have listed. */
  observe(key: string): Observed | undefined;
  /** The last heartbeat's inventory; undefined before the first one. */
  inventory(): Inventory | undefined;
  /**
   * Hands the report to the reconcile pass and resolves once a pass has written status with it:
   * with the stored deployment (its new resourceVersion), `"unchanged"` when no write was needed,
   * or undefined when that did not happen within `timeoutMs`.
   */
  report(key: string, report: ScalingReport | undefined, timeoutMs: number): Promise<Deployment | "unchanged" | undefined>;
  routerImage: string;
  logger: { info(msg: string, data?: object): void; warn(msg: string, data?: object): void };
  /** Per read of one engine or router pod. */
  readTimeoutMs?: number;
  /** How many times faster than the wall clock engine time runs (AgentConfig.metricsTimeScale); 1 by default. */
  metricsTimeScale?: number;
}

interface Memory {
  samples: Map<string, EngineSample>;
  state: ScalingState;
  lastScaleAt?: string;
}

export interface Autoscaler {
  /** Starts or stops the deployment's loop to match its spec (call on every desired-state change). */
  sync(key: string): void;
  stop(): Promise<void>;
}

const DEFAULT_READ_TIMEOUT_MS = 2_000;
const STATUS_WAIT_MS = 15_000;
/** Between evaluations the router is read this often for requests beyond the engines' batch slots. */
const OVERLOAD_CHECK_MS = 1_000;
/**
 * An early evaluation waits at least this long after the last one (or a third of the interval if
 * shorter): the arrival rate is the growth over the time since, and a second of it is noise.
 */
const MIN_EARLY_GAP_MS = 5_000;

/** Milliseconds that run `scale` times faster than the wall clock from now on. */
function scaledClock(scale: number): () => number {
  const origin = Date.now();
  return () => origin + (Date.now() - origin) * scale;
}

/** Says in the roles' messages (status and events) why this evaluation came before its interval ended. */
function noteEarly(decision: ScalingDecision, early: readonly RoleBeyondSlots[]): void {
  for (const { role, inFlight, slots } of early) {
    const note = `; evaluated early: ${inFlight} requests at the router over ${slots} batch slots`;
    for (const entry of decision.roles) if (entry.name === role) entry.message += note;
    for (const event of decision.events) if (event.role === role) event.message += note;
  }
}

export function createAutoscaler(deps: AutoscalerDeps): Autoscaler {
  // Engine time: engine reads are timestamped on it (rates per engine second), and the overload
  // check's cadence and minimum gap are durations of it.
  const timeScale = deps.metricsTimeScale ?? 1;
  const metricsNow = timeScale === 1 ? Date.now : scaledClock(timeScale);
  const overloadCheckMs = OVERLOAD_CHECK_MS / timeScale;
  const minEarlyGapMs = MIN_EARLY_GAP_MS / timeScale;
  const loops = new Map<string, Promise<void>>();
  const abort = new AbortController();
  let stopped = false;

  const enabled = (key: string) => {
    const item = deps.item(key);
    return item !== undefined && !item.deleting && (item.deployment.spec.scaling?.mode ?? "off") !== "off";
  };

  const sleep = (ms: number) => sleepUnlessAborted(ms, abort.signal);

  async function loop(key: string): Promise<void> {
    const memory: Memory = { samples: new Map(), state: emptyScalingState() };
    let early: RoleBeyondSlots[] = [];
    while (!stopped && enabled(key)) {
      const started = Date.now();
      try {
        await evaluate(key, memory, early);
      } catch (error) {
        if (!stopped) deps.logger.warn("autoscaler evaluation failed", { deploymentId: key, error: (error as Error).message });
      }
      const item = deps.item(key);
      if (!item || stopped) break;
      early = await untilNextEvaluation(key, started, evaluationPeriodMs(item.deployment.spec));
    }
    // Scaling turned off or the deployment is going: status no longer carries a recommendation.
    if (!stopped && deps.item(key)) await deps.report(key, undefined, 0);
    loops.delete(key);
  }

  /**
   * Sleeps to the end of the period, or until the router holds more requests than the engines have
   * slots: then returns the roles that are beyond them (empty at the end of a plain period).
   */
  async function untilNextEvaluation(key: string, started: number, periodMs: number): Promise<RoleBeyondSlots[]> {
    const end = started + periodMs;
    const earliest = started + Math.min(minEarlyGapMs, periodMs / 3);
    while (!stopped) {
      const left = end - Date.now();
      if (left <= 0) return [];
      await sleep(Math.min(overloadCheckMs, left));
      if (stopped || Date.now() >= end || Date.now() < earliest) continue;
      const beyond = await overloadedRoles(key).catch(() => []);
      if (beyond.length > 0) {
        deps.logger.info("requests beyond the engines' batch slots: evaluating now", { deploymentId: key, roles: beyond });
        return beyond;
      }
    }
    return [];
  }

  async function overloadedRoles(key: string): Promise<RoleBeyondSlots[]> {
    const item = deps.item(key);
    const observed = deps.observe(key);
    if (!item || !observed || item.deployment.spec.router?.kind !== "builtin") return [];
    const spec = item.deployment.spec;
    const options = resolveOptions(spec, item.deployment.name, { routerImage: deps.routerImage });
    const router = await readRouterSignals(spec, observed, options, deps.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS);
    if (!router?.extra) return [];
    const inFlight: Record<string, number> = {};
    for (const [role, { signals }] of router.extra) {
      const value = signals.find((s) => s.name === "router_in_flight")?.value;
      if (value !== undefined) inFlight[role] = value;
    }
    const readyPods: Record<string, number> = {};
    for (const pod of enginePodsToRead(spec, observed.pods, options.enginePort)) readyPods[pod.role] = (readyPods[pod.role] ?? 0) + 1;
    return rolesBeyondSlots(spec, inFlight, readyPods);
  }

  /** The builtin router's in-flight and held counts per role; undefined without a router or its admin token. */
  async function readRouterSignals(spec: Deployment["spec"], observed: Observed, options: ReturnType<typeof resolveOptions>, timeoutMs: number) {
    if (spec.router?.kind !== "builtin") return undefined;
    const { name: secretName, key: secretKey } = options.routerAdminTokenSecret;
    const token = tokenFromSecret(observed.secrets, secretName, secretKey);
    const routers = routerPodsToRead(observed.routerPods, options.routerPort);
    if (!token || routers.length === 0) return undefined;
    const read = await readRouters(routers, { token, timeoutMs });
    const podRoles = new Map(observed.pods.map((pod) => [pod.metadata!.name!, roleOf(pod)]));
    return {
      extra: routerSignalsByRole({ ...read, roles: spec.roles, podRoles, now: Date.now() }),
      held: totalHeld(read.readings),
      ...(read.readings.length > 0 && { heldAt: new Date(Math.max(...read.readings.map((r) => r.at))).toISOString() }),
    };
  }

  /** @param early roles whose overload brought this evaluation forward: said in their messages. */
  async function evaluate(key: string, memory: Memory, early: readonly RoleBeyondSlots[] = []): Promise<void> {
    const item = deps.item(key);
    const observed = deps.observe(key);
    if (!item || !observed) return;
    const { deployment } = item;
    const spec = deployment.spec;
    const options = resolveOptions(spec, deployment.name, { routerImage: deps.routerImage });
    const timeoutMs = deps.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS;

    // Signals: every ready engine pod, interval values against this deployment's previous reads.
    const scraped = await scrapePods(enginePodsToRead(spec, observed.pods, options.enginePort), memory.samples, { timeoutMs, now: metricsNow });
    memory.samples = scraped.samples;
    const router = await readRouterSignals(spec, observed, options, timeoutMs);
    const extra = router?.extra;
    const held = router?.held;
    const heldAt = router?.heldAt;
    const at = Date.now();
    const now = new Date(at).toISOString();
    const roles = aggregateRoles({ roles: spec.roles.map((role) => role.name), intervals: scraped.intervals, failures: scraped.failures, ...(extra && { extra }), now: metricsNow() });
    try {
      await deps.api.putMetrics(deployment.id, { observedAt: now, roles }, abort.signal);
    } catch (error) {
      // The report is for people; the decision below does not depend on it.
      deps.logger.warn("metrics report failed", { deploymentId: key, error: (error as Error).message });
    }

    const { decision, state } = decideScaling(
      {
        now,
        spec,
        signals: Object.fromEntries(roles.map((role) => [role.name, scalingSignalsOf(role, now)])),
        ...(held !== undefined && { held }),
        ...(heldAt !== undefined && { heldObservedAt: heldAt }),
        currentReplicas: Object.fromEntries(spec.roles.map((role) => [role.name, role.replicas])),
        ...(freeGpusByType(deps.inventory()) && { freeGpus: freeGpusByType(deps.inventory())! }),
        // The desired state carries no quota for the agent: unknown, so no bound from it here
        // (the API's admission still refuses a PATCH beyond the quota).
        retirementInFlight: await retirementInFlight(deployment.id),
      },
      memory.state,
    );
    memory.state = state;
    if (decision.mode === "off") return;
    noteEarly(decision, early);

    // Status first: the API explains an applied change with the recommendation status holds.
    const written = await deps.report(key, { status: scalingStatusOf(decision, memory.lastScaleAt), ...(decision.condition && { condition: decision.condition }) }, STATUS_WAIT_MS);
    for (const data of shadowEventsOf(decision)) {
      try {
        await deps.api.postEvent({ type: "deployment.scaled", deploymentId: deployment.id, data: { ...data } }, abort.signal);
      } catch (error) {
        deps.logger.warn("scaling event not recorded", { deploymentId: key, role: data.role, error: (error as Error).message });
      }
    }
    if (decision.mode !== "active" || decision.actions.length === 0) return;
    if (written === undefined) {
      deps.logger.warn("status with the scaling decision not written in time; not scaling this interval", { deploymentId: key });
      return;
    }
    const base = written === "unchanged" ? deps.item(key)?.deployment : written;
    const next = base && rolesAfterActions(base.spec.roles, decision);
    if (!base || !next) return;
    try {
      await deps.api.patchReplicas(deployment.id, next, base.resourceVersion, abort.signal);
      memory.lastScaleAt = now;
      deps.logger.info("replicas scaled", { deploymentId: key, actions: decision.actions });
    } catch (error) {
      // 412: someone changed the deployment since; the next interval decides on the new spec.
      if (error instanceof ApiError && error.status === 412) deps.logger.info("deployment changed under the autoscaler; skipping this interval", { deploymentId: key });
      else throw error;
    }
  }

  /** A retire Operation Pending or Running for the deployment; unknown (a failed read) counts as in flight, which only holds scale-downs back. */
  async function retirementInFlight(deploymentId: string): Promise<boolean> {
    try {
      const operations = await deps.api.listOperations({ deploymentId, kind: "retire", phase: ["Pending", "Running"] }, abort.signal);
      return operations.length > 0;
    } catch (error) {
      deps.logger.warn("operations not read; treating a retirement as in flight", { deploymentId, error: (error as Error).message });
      return true;
    }
  }

  return {
    sync(key) {
      if (stopped || loops.has(key) || !enabled(key)) return;
      loops.set(key, loop(key));
    },
    async stop() {
      stopped = true;
      abort.abort();
      await Promise.allSettled([...loops.values()]);
    },
  };
}

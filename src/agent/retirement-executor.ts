// Retirement, the I/O half: records a retire Operation before it acts (Idempotency-Key from the
// deployment, role, replica and first pod uid; a 409 adopts the active one), resumes Pending/Running
// ones after a restart, reads what planRetirement needs (router in-flight, engine running+waiting,
// a fresh pod list while settling), carries out its decision and PATCHes the record. At most one
// retirement per deployment; the rest wait. Nothing of the protocol lives only in memory except
// the current run of zero reads (a restart starts that run again: safe) and the abort backoff.
import type { V1Pod } from "@kubernetes/client-node";
import { LABELS, type RenderInput, resolveOptions, specHashOf } from "../../k8s/render/index.ts";
import type { Operation } from "../domain/operations.ts";
import { type AgentApi, ApiError } from "./api-client.ts";
import { applyAction } from "./apply.ts";
import { servesHttp } from "./instance-group.ts";
import type { Kube } from "./kube.ts";
import { resumeOperations } from "./resume-operations.ts";
import type { Observed } from "./observe.ts";
import { type RetirementCandidate, roleOf } from "./plan.ts";
import {
  budgetsOf,
  type EngineLoadReading,
  paramsOf,
  planRetirement,
  retiringWanted,
  type RetirementDecision,
  type RetirementObserved,
  type RouterInFlightReading,
  stepsAfter,
} from "./retirement.ts";
import { buildEndpointsBody, endpointsHash, readyRouterPods, routersAcknowledged } from "./router-endpoint-list.ts";
import { tokenFromSecret } from "./router-endpoints.ts";
import { readRouters } from "./signals/router.ts";
import { scrapePods } from "./signals/scrape.ts";

/** How often an active retirement is looked at again (Draining reads ~1 s apart). */
export const RETIREMENT_TICK_MS = 1_000;
const READ_TIMEOUT_MS = 2_000;
/** After an abort the same instance is tried again no sooner than max(drain budget, this), doubling per abort. */
const ABORT_BACKOFF_MIN_MS = 30_000;
const ABORT_BACKOFF_CAP_MS = 600_000;

export interface RetirementView {
  /** The deployment's running retirement. */
  active?: { id: string; role: string; replica?: number; step: string; message: string };
  /** The last one aborted, while its instance waits to be tried again. */
  aborted?: { id: string; role: string; replica?: number; message: string };
}

export interface RetirementPass {
  deploymentId: string;
  render: RenderInput;
  observed: Observed;
  deleting: boolean;
}

interface Logger {
  info(msg: string, data?: object): void;
  warn(msg: string, data?: object): void;
}

export interface RetirementExecutor {
  /** Lists the Pending/Running retire operations to resume (retried until it succeeds or stops). */
  resume(): Promise<void>;
  /**
   * Before the pass pushes endpoints: starts the next retirement if none runs and one is due (a
   * failed create is logged and tried again on the next tick).
   * @returns the pod names the push must mark draining
   */
  prepare(pass: RetirementPass, candidates: readonly RetirementCandidate[]): Promise<Set<string>>;
  /**
   * After the push: one step of the deployment's retirement. `pushed` is the draining set the push
   * used, undefined when this pass pushed nothing (no router pod then counts as confirmed).
   * Failures are logged and retried on the next tick, never thrown into the pass.
   */
  advance(pass: RetirementPass, acks: ReadonlyMap<string, string>, pushed: ReadonlySet<string> | undefined): Promise<void>;
  view(deploymentId: string): RetirementView;
  forget(deploymentId: string): void;
  stop(): void;
}

export function createRetirementExecutor({
  kube,
  api,
  logger,
  signal,
  wake,
  now = () => Date.now(),
  tickMs = RETIREMENT_TICK_MS,
}: {
  kube: Kube;
  api: AgentApi;
  logger: Logger;
  signal: AbortSignal;
  /** Runs a pass of the deployment soon (the agent's enqueue). */
  wake: (deploymentId: string) => void;
  now?: () => number;
  tickMs?: number;
}): RetirementExecutor {
  const active = new Map<string, Operation>();
  const firstZeroAt = new Map<string, number>();
  /** deploymentId → "role/replica" → { until, aborts, view }. */
  const backoff = new Map<string, Map<string, { until: number; aborts: number; view: NonNullable<RetirementView["aborted"]> }>>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let resumed = false;
  let stopped = false;

  const later = (deploymentId: string, ms = tickMs) => {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      wake(deploymentId);
    }, ms);
    timers.add(timer);
  };

  const podNamesOf = (op: Operation | undefined) => new Set(op ? paramsOf(op).podNames : []);

  async function adopt(deploymentId: string, id: string): Promise<Operation | undefined> {
    const ops = await api.listOperations({ deploymentId, kind: "retire", phase: ["Pending", "Running"] }, signal);
    return ops.find((op) => op.id === id);
  }

  async function start(pass: RetirementPass, candidate: RetirementCandidate): Promise<Operation | undefined> {
    const { spec } = pass.render.deployment;
    const pods = [...candidate.pods].sort((a, b) => (a.metadata!.name! < b.metadata!.name! ? -1 : 1));
    const params = {
      ...budgetsOf(spec),
      podUids: pods.map((p) => p.metadata!.uid!),
      podNames: pods.map((p) => p.metadata!.name!),
      reason: candidate.reason,
    };
    const base = `retire/${pass.deploymentId}/${candidate.role}/r${candidate.replica}/${params.podUids[0]}`;
    let key = base;
    // The key replays the first answer: when that operation has already ended (an earlier attempt
    // on the same pods that aborted), chain a new key after it. Bounded by the aborts seen.
    for (let attempt = 0; attempt < 16; attempt++) {
      let op: Operation;
      try {
        op = await api.createOperation(
          {
            kind: "retire",
            deploymentId: pass.deploymentId,
            role: candidate.role,
            replica: candidate.replica,
            params,
            phase: "Running",
            step: "Withdrawing",
            message: `withdrawing ${candidate.role} r${candidate.replica} from the router (${candidate.reason})`,
          },
          key,
          signal,
        );
      } catch (error) {
        const existing = error instanceof ApiError && error.status === 409 ? (error.body as { existingOperationId?: string })?.existingOperationId : undefined;
        if (!existing) throw error;
        return adopt(pass.deploymentId, existing);
      }
      if (op.phase === "Pending" || op.phase === "Running") return op;
      key = `${base}/after/${op.id}`;
    }
    throw new Error(`could not record a retirement of ${candidate.role} r${candidate.replica}: every idempotency key replayed an ended operation`);
  }

  async function patch(op: Operation, body: Parameters<AgentApi["patchOperation"]>[1]): Promise<Operation | undefined> {
    try {
      return await api.patchOperation(op.id, body, signal);
    } catch (error) {
      // Gone (the deployment was deleted) or already ended by someone else: nothing left to move on.
      if (error instanceof ApiError && (error.status === 404 || error.status === 409)) return undefined;
      throw error;
    }
  }

  function end(deploymentId: string, op: Operation) {
    active.delete(deploymentId);
    firstZeroAt.delete(op.id);
  }

  /** Router in-flight for the retiring endpoints, per Ready router pod (a failed read has no value). */
  async function readRouterInFlight(pass: RetirementPass, names: ReadonlySet<string>): Promise<RouterInFlightReading[]> {
    const { spec, name } = pass.render.deployment;
    const options = resolveOptions(spec, name, pass.render.options);
    const routers = readyRouterPods(pass.observed.routerPods);
    const { name: secretName, key } = options.routerAdminTokenSecret;
    const token = tokenFromSecret(pass.observed.secrets, secretName, key);
    if (!token) return routers.map((pod) => ({ router: pod.metadata!.name!, error: "the admin token Secret is not observed" }));
    const ip = (pod: V1Pod) => (pod.status!.podIP!.includes(":") ? `[${pod.status!.podIP}]` : pod.status!.podIP!);
    const { readings, failures } = await readRouters(
      routers.map((pod) => ({ uid: pod.metadata!.uid!, name: pod.metadata!.name!, url: `http://${ip(pod)}:${options.routerPort}` })),
      { token, timeoutMs: READ_TIMEOUT_MS },
    );
    return [
      ...readings.map((r) => ({ router: r.router.name, inFlight: r.view.endpoints.filter((e) => names.has(e.id)).reduce((sum, e) => sum + e.inFlight, 0) })),
      ...failures.map((f) => ({ router: f.router.name, error: f.detail })),
    ];
  }

  /**
   * running + waiting of each live serving pod of the instance; a failed or partial read has no
   * value. Headless followers are not read: they answer no HTTP and queue nothing of their own.
   */
  async function readEngineLoad(pass: RetirementPass, pods: readonly V1Pod[]): Promise<EngineLoadReading[]> {
    const { spec, name } = pass.render.deployment;
    const { enginePort } = resolveOptions(spec, name, pass.render.options);
    const targets = pods.filter((p) => servesHttp(p) && p.status?.podIP && p.metadata?.deletionTimestamp == null);
    const { samples, failures } = await scrapePods(
      targets.map((pod) => ({
        uid: pod.metadata!.uid!,
        name: pod.metadata!.name!,
        role: roleOf(pod),
        engine: spec.engine.name,
        url: `http://${pod.status!.podIP!.includes(":") ? `[${pod.status!.podIP}]` : pod.status!.podIP}:${enginePort}`,
      })),
      new Map(),
      { timeoutMs: READ_TIMEOUT_MS },
    );
    return targets.map((pod) => {
      const failure = failures.find((f) => f.pod.uid === pod.metadata!.uid);
      const values = failure ? undefined : samples.get(pod.metadata!.uid!)?.values;
      const load = values?.running !== undefined && values.waiting !== undefined ? values.running + values.waiting : undefined;
      return { pod: pod.metadata!.name!, ...(load !== undefined ? { load } : { error: failure?.detail ?? "running/waiting not exposed" }) };
    });
  }

  /** Pods of the operation still counted against a node's GPUs in a fresh list (the inventory's rule). */
  async function gpuHolders(pass: RetirementPass, op: Operation): Promise<number> {
    const uids = new Set(paramsOf(op).podUids);
    const namespace = pass.observed.pods[0]?.metadata?.namespace ?? `berth-${pass.render.deployment.projectName}`;
    const list = await kube.core.listNamespacedPod({
      namespace,
      labelSelector: `${LABELS.deploymentId}=${pass.deploymentId},${LABELS.role}=${op.role},${LABELS.replica}=${op.replica}`,
    });
    return list.items.filter((p) => uids.has(p.metadata?.uid ?? "") && p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed").length;
  }

  async function carryOut(pass: RetirementPass, op: Operation, decision: RetirementDecision): Promise<void> {
    const at = new Date(now());
    const where = { deploymentId: pass.deploymentId, operationId: op.id, role: op.role, replica: op.replica };
    switch (decision.kind) {
      case "wait":
        if (decision.firstZeroAt !== undefined) firstZeroAt.set(op.id, decision.firstZeroAt);
        else firstZeroAt.delete(op.id);
        later(pass.deploymentId);
        return;
      case "advance": {
        const next = await patch(op, { phase: "Running", step: decision.to, steps: stepsAfter(op, decision.to, at), message: decision.message });
        firstZeroAt.delete(op.id);
        if (!next) return end(pass.deploymentId, op);
        active.set(pass.deploymentId, next);
        logger.info("retirement step", { ...where, step: decision.to, message: decision.message });
        later(pass.deploymentId, 0);
        return;
      }
      case "delete":
        for (const pod of decision.pods) await applyAction(kube, { kind: "deletePod", ...pod, reason: "surplus" });
        logger.info("retirement deleting", { ...where, pods: decision.pods.map((p) => p.name) });
        later(pass.deploymentId);
        return;
      case "abort": {
        await patch(op, {
          phase: "Aborted",
          steps: stepsAfter(op, undefined, at),
          message: decision.message,
          error: { reason: decision.reason, message: decision.message },
        });
        end(pass.deploymentId, op);
        if (decision.reason !== "ReplicaWanted") {
          const slot = `${op.role}/${op.replica}`;
          const byDeployment = backoff.get(pass.deploymentId) ?? new Map();
          const aborts = (byDeployment.get(slot)?.aborts ?? 0) + 1;
          const base = Math.max(ABORT_BACKOFF_MIN_MS, paramsOf(op).drainSeconds * 1000);
          const wait = Math.min(ABORT_BACKOFF_CAP_MS, base * 2 ** (aborts - 1));
          byDeployment.set(slot, { until: now() + wait, aborts, view: { id: op.id, role: op.role, replica: op.replica, message: decision.message } });
          backoff.set(pass.deploymentId, byDeployment);
          later(pass.deploymentId, wait);
        }
        logger.warn("retirement aborted", { ...where, reason: decision.reason, message: decision.message });
        // The next pass pushes the instance eligible again.
        later(pass.deploymentId, 0);
        return;
      }
      case "fail":
      case "succeed": {
        const failed = decision.kind === "fail";
        await patch(op, {
          phase: failed ? "Failed" : "Succeeded",
          steps: stepsAfter(op, undefined, at),
          message: decision.message,
          ...(failed ? { error: { reason: decision.reason, message: decision.message } } : { result: { podUids: paramsOf(op).podUids } }),
        });
        end(pass.deploymentId, op);
        backoff.get(pass.deploymentId)?.delete(`${op.role}/${op.replica}`);
        logger.info(failed ? "retirement failed" : "retirement succeeded", { ...where, message: decision.message });
        later(pass.deploymentId, 0);
        return;
      }
    }
  }

  async function step(pass: RetirementPass, acks: ReadonlyMap<string, string>, pushed: ReadonlySet<string> | undefined): Promise<void> {
    let op = active.get(pass.deploymentId);
    if (!op) return;
    const at = () => new Date(now());
    if (pass.deleting) {
      const message = "the deployment is being deleted with every pod";
      await patch(op, { phase: "Failed", steps: stepsAfter(op, undefined, at()), message, error: { reason: "DeploymentDeleted", message } });
      return end(pass.deploymentId, op);
    }
    if (op.phase === "Pending") {
      const running = await patch(op, { phase: "Running" });
      if (!running) return end(pass.deploymentId, op);
      active.set(pass.deploymentId, (op = running));
    }
    const params = paramsOf(op);
    const uids = new Set(params.podUids);
    const pods = pass.observed.pods.filter((p) => uids.has(p.metadata?.uid ?? ""));
    const { spec } = pass.render.deployment;
    const role = spec.roles.find((r) => r.name === op.role);
    const builtinRouter = spec.router?.kind === "builtin";
    // A router pod confirms the withdrawal by having acknowledged exactly the list this pass pushed.
    const routers = pushed
      ? routersAcknowledged(pass.observed.routerPods, acks, endpointsHash(buildEndpointsBody(pass.render, pass.observed.pods, pushed)))
      : { acked: 0, ready: readyRouterPods(pass.observed.routerPods).length };
    const replica = op.replica ?? -1;
    const hash = role ? specHashOf(spec, role.name, pass.render.options) : undefined;
    const current = pods.length > 0 && pods.every((p) => p.metadata?.labels?.[LABELS.specHash] === hash);
    const observed: RetirementObserved = {
      pods,
      wanted: role !== undefined && retiringWanted(params.reason, replica, role.replicas, current),
      builtinRouter,
      routers,
      firstZeroAt: firstZeroAt.get(op.id),
    };
    let routerReadings: RouterInFlightReading[] = [];
    let engineReadings: EngineLoadReading[] = [];
    if (op.step === "Draining" && pods.length > 0) {
      [routerReadings, engineReadings] = await Promise.all([
        builtinRouter ? readRouterInFlight(pass, new Set(params.podNames)) : Promise.resolve([]),
        readEngineLoad(pass, pods),
      ]);
    }
    if (op.step === "Settling" && pods.length === 0) observed.gpuHolders = await gpuHolders(pass, op);
    await carryOut(pass, op, planRetirement(op, observed, routerReadings, engineReadings, now()));
  }

  return {
    async resume() {
      // New work only once the recorded work is known (else a second operation could start).
      resumed = await resumeOperations(api, "retire", { signal, stopped: () => stopped, logger, active, wake });
    },

    async prepare(pass, candidates) {
      let op = active.get(pass.deploymentId);
      // New work only once the recorded work is known (else a second operation could start).
      if (!op && resumed && !pass.deleting && !stopped) {
        const slots = backoff.get(pass.deploymentId);
        const due = candidates.find((c) => (slots?.get(`${c.role}/${c.replica}`)?.until ?? 0) <= now());
        if (due) {
          try {
            op = await start(pass, due);
          } catch (error) {
            logger.warn("retirement could not be recorded; retrying", { deploymentId: pass.deploymentId, error: (error as Error).message });
            later(pass.deploymentId);
          }
          if (op) {
            active.set(pass.deploymentId, op);
            logger.info("retirement started", { deploymentId: pass.deploymentId, operationId: op.id, role: op.role, replica: op.replica });
          }
        }
      }
      return podNamesOf(op);
    },

    async advance(pass, acks, pushed) {
      try {
        await step(pass, acks, pushed);
      } catch (error) {
        if (signal.aborted) return;
        logger.warn("retirement step failed; retrying", { deploymentId: pass.deploymentId, error: (error as Error).message });
        later(pass.deploymentId);
      }
    },

    view(deploymentId) {
      const op = active.get(deploymentId);
      const slots = [...(backoff.get(deploymentId)?.values() ?? [])].filter((s) => s.until > now());
      const aborted = slots.at(-1)?.view;
      return {
        ...(op ? { active: { id: op.id, role: op.role, replica: op.replica, step: op.step, message: op.message } } : {}),
        ...(aborted && !op ? { aborted } : {}),
      };
    },

    forget(deploymentId) {
      active.delete(deploymentId);
      backoff.delete(deploymentId);
    },

    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

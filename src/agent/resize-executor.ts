// Elastic EP resize (docs/design.md §8.2), carried out by the agent as a persisted `resize` Operation, one
// instance of the role at a time:
//   grow    AdmittingPods (create the new rank pods; unschedulable ones hold the operation while
//           the old width serves) → Joining (each new rank Running and Ready: its Ray worker is in
//           the head's cluster) → Scaling → Verifying → UpdatingRouter
//   shrink  Scaling → Verifying → Deleting (the leaving rank pods, UID preconditions, never the
//           leader) → Settling (gone, GPUs free) → UpdatingRouter
// Scaling records each engine call in the operation *before* sending it. An answer of 200 moves on
// to Verifying; a definite refusal (any other status) is retried 15 s later, doubling to 4 min, 5
// tries, then fails with ScaleRefused; a call with no answer (timeout, broken connection, an agent
// restart after sending) is never sent again: Observing waits until the engine stops scaling and
// reads its width. Verifying proves the width by observation, never by the 200 alone: the engine's
// `/metrics` shows exactly ranks 0..w-1 and a completion pinned to each rank (X-data-parallel-rank)
// is answered (and, after a shrink, one pinned to rank w is refused as out of range). The proven
// width is then recorded on the leader pod (`berth.dev/elastic-width`), the plan's source of truth
// for which rank pods the instance has. Nothing is deleted unless its rank is proven out of the
// collective.
import type { V1Pod } from "@kubernetes/client-node";
import { ANNOTATIONS, LABELS, type RenderInput, renderMemberPod, resolveOptions } from "../../k8s/render/index.ts";
import type { Role } from "../domain/deployment-spec.ts";
import type { Operation } from "../domain/operations.ts";
import { type AgentApi, ApiError } from "./api-client.ts";
import { applyAction } from "./apply.ts";
import { type ElasticInstance, elasticInstances, isWidth, RESIZE_RETRY, ranksFromMetrics, retryDelayMs, type RetrySchedule } from "./elastic.ts";
import type { Kube } from "./kube.ts";
import { resumeOperations } from "./resume-operations.ts";
import { isPodReady, isTerminating } from "./plan.ts";
import type { Logger } from "./agent.ts";
import type { RetirementPass } from "./retirement-executor.ts";
import { stepsAfter } from "./retirement.ts";
import { buildEndpointsBody, endpointsHash, routersAcknowledged } from "./router-endpoint-list.ts";
import { podProblem } from "./status.ts";

export interface ResizeConfig {
  retry: RetrySchedule;
  /** How long one `/scale_elastic_ep` call may take before its outcome is ambiguous (vLLM waits up to 600 s for new ranks). */
  callTimeoutMs: number;
  /** `drain_timeout` sent with the call, seconds (the engine drains leaving ranks that long). */
  drainTimeoutSeconds: number;
  /** How long Observing waits for the engine to stop scaling before the operation fails. */
  observeLimitMs: number;
  /** How long Verifying keeps trying to prove the width. */
  verifyLimitMs: number;
  /** Timeout of each read and probe. */
  readTimeoutMs: number;
  tickMs: number;
}

export const DEFAULT_RESIZE_CONFIG: ResizeConfig = {
  retry: RESIZE_RETRY,
  callTimeoutMs: 660_000,
  drainTimeoutSeconds: 120,
  observeLimitMs: 1_320_000,
  verifyLimitMs: 120_000,
  readTimeoutMs: 5_000,
  tickMs: 1_000,
};

/** One engine call, as recorded in the operation's result before and after it is sent. */
interface ScaleCall {
  replica: number;
  size: number;
  sentAt: string;
  /** Absent while unanswered: after a restart that means ambiguous. */
  outcome?: "ok" | "refused" | "ambiguous";
  status?: number;
  answer?: string;
  /** Refused: when it may be sent again. */
  retryAt?: string;
}

/** The operation's running record (its `result`). */
interface ResizeRecord {
  /** The instance being resized. */
  replica?: number;
  /** Its width when the resize of it began. */
  fromWidth?: number;
  calls: ScaleCall[];
  /** Replica → proven width. */
  proven: Record<string, number>;
  /** When Verifying or Observing began (their limits). */
  since?: string;
}

export interface ResizeView {
  active?: { id: string; role: string; step: string; message: string; holding?: { reason: string; message: string } };
  failed?: { id: string; role: string; reason: string; message: string };
}

/** A pass of the deployment, as the retirement executor sees it too. */
export type ResizePass = RetirementPass;

export interface ResizeExecutor {
  resume(): Promise<void>;
  /** Before the push: adopts or records the resize the spec asks for; never throws. */
  prepare(pass: ResizePass): Promise<void>;
  /** After the push: one step. `acks` are the router pods' acknowledged endpoint hashes. */
  advance(pass: ResizePass, acks: ReadonlyMap<string, string>): Promise<void>;
  view(deploymentId: string): ResizeView;
  forget(deploymentId: string): void;
  stop(): void;
}

const recordOf = (op: Operation): ResizeRecord => {
  const result = (op.result ?? {}) as Partial<ResizeRecord>;
  return { calls: result.calls ?? [], proven: result.proven ?? {}, ...result } as ResizeRecord;
};
const targetOf = (op: Operation) => Number((op.params as { toWidth?: number } | undefined)?.toWidth);
const ipOf = (pod: V1Pod) => (pod.status!.podIP!.includes(":") ? `[${pod.status!.podIP}]` : pod.status!.podIP!);

export function createResizeExecutor({
  kube,
  api,
  logger,
  signal,
  wake,
  now = () => Date.now(),
  config: partial = {},
}: {
  kube: Kube;
  api: AgentApi;
  logger: Logger;
  signal: AbortSignal;
  wake: (deploymentId: string, delayMs?: number) => void;
  now?: () => number;
  config?: Partial<ResizeConfig>;
}): ResizeExecutor {
  const config = { ...DEFAULT_RESIZE_CONFIG, ...partial };
  const active = new Map<string, Operation>();
  const failed = new Map<string, NonNullable<ResizeView["failed"]>>();
  const holding = new Map<string, { reason: string; message: string }>();
  /** Engine calls in flight in this process, by operation id (a pass never waits for one). */
  const calling = new Set<string>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let resumed = false;
  let stopped = false;

  const later = (deploymentId: string, ms = config.tickMs) => {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      wake(deploymentId);
    }, ms);
    timers.add(timer);
  };

  async function patch(op: Operation, body: Parameters<AgentApi["patchOperation"]>[1]): Promise<Operation | undefined> {
    try {
      const next = await api.patchOperation(op.id, body, signal);
      if (next.phase === "Pending" || next.phase === "Running") active.set(next.deploymentId, next);
      return next;
    } catch (error) {
      if (error instanceof ApiError && (error.status === 404 || error.status === 409)) {
        active.delete(op.deploymentId);
        return undefined;
      }
      throw error;
    }
  }

  const saveRecord = (op: Operation, record: ResizeRecord, extra: Parameters<AgentApi["patchOperation"]>[1] = {}) =>
    patch(op, { result: record as unknown as Record<string, unknown>, ...extra });

  async function moveTo(op: Operation, step: string, message: string, record?: ResizeRecord): Promise<Operation | undefined> {
    const next = await patch(op, {
      phase: "Running",
      step,
      steps: stepsAfter(op, step, new Date(now())),
      message,
      ...(record ? { result: record as unknown as Record<string, unknown> } : {}),
    });
    logger.info("resize step", { deploymentId: op.deploymentId, operationId: op.id, step, message });
    if (next) later(op.deploymentId, 0);
    return next;
  }

  async function finish(op: Operation, outcome: { phase: "Succeeded" | "Failed" | "Aborted"; message: string; reason?: string; record: ResizeRecord }) {
    const { phase, message, reason, record } = outcome;
    await patch(op, {
      phase,
      steps: stepsAfter(op, undefined, new Date(now())),
      message,
      result: record as unknown as Record<string, unknown>,
      ...(reason ? { error: { reason, message } } : {}),
    });
    active.delete(op.deploymentId);
    holding.delete(op.deploymentId);
    if (phase === "Succeeded") failed.delete(op.deploymentId);
    else failed.set(op.deploymentId, { id: op.id, role: op.role, reason: reason ?? phase, message });
    logger[phase === "Succeeded" ? "info" : "warn"](`resize ${phase.toLowerCase()}`, { deploymentId: op.deploymentId, operationId: op.id, message });
    later(op.deploymentId, 0);
  }

  function leaderUrl(pass: ResizePass, leader: V1Pod): string {
    const { enginePort } = resolveOptions(pass.render.deployment.spec, pass.render.deployment.name, pass.render.options);
    return `http://${ipOf(leader)}:${enginePort}`;
  }

  /**
   * Runs `task` with a signal that aborts after `ms` or when the agent stops. A plain timer and
   * controller, held until the task settles: Node 20 may garbage-collect the signals that
   * AbortSignal.any/timeout return while a fetch still depends on them, and then nothing aborts
   * (seen here: a hung resize call never timed out under load).
   */
  async function withTimeout<T>(ms: number, task: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const abort = () => controller.abort(new Error(`timed out after ${ms} ms`));
    const timer = setTimeout(abort, ms);
    const onStop = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onStop, { once: true });
    try {
      return await task(controller.signal);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onStop);
    }
  }

  /** The ranks the engine shows; undefined while it cannot say (scaling, unreachable). */
  async function readRanks(url: string): Promise<number[] | undefined> {
    try {
      return await withTimeout(config.readTimeoutMs, async (signal) => {
        const res = await fetch(`${url}/metrics`, { signal });
        const text = await res.text();
        return res.ok ? ranksFromMetrics(text) : undefined;
      });
    } catch {
      return undefined;
    }
  }

  /** true/false from `/is_scaling_elastic_ep`; a 503 (every path answers it while scaling) is true; undefined when unreachable. */
  async function isScaling(url: string): Promise<boolean | undefined> {
    try {
      return await withTimeout(config.readTimeoutMs, async (signal) => {
        const res = await fetch(`${url}/is_scaling_elastic_ep`, { method: "POST", signal });
        if (res.status === 503) return true;
        if (!res.ok) return undefined;
        const body = (await res.json()) as { is_scaling_elastic_ep?: unknown };
        return typeof body.is_scaling_elastic_ep === "boolean" ? body.is_scaling_elastic_ep : undefined;
      });
    } catch {
      return undefined;
    }
  }

  /** A one-token completion pinned to `rank`: the HTTP status, or undefined when unanswered. */
  async function probeRank(url: string, model: string, rank: number): Promise<number | undefined> {
    try {
      return await withTimeout(config.readTimeoutMs, async (signal) => {
        const res = await fetch(`${url}/v1/completions`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-data-parallel-rank": String(rank) },
          body: JSON.stringify({ model, prompt: "berth rank check", max_tokens: 1, temperature: 0 }),
          signal,
        });
        await res.arrayBuffer();
        return res.status;
      });
    } catch {
      return undefined;
    }
  }

  /** Proof of `width`: undefined when proven; otherwise why not (and whether it is worth waiting). */
  async function prove(url: string, model: string, width: number): Promise<{ ok: true } | { ok: false; why: string; seen?: number[] }> {
    const ranks = await readRanks(url);
    if (!ranks) return { ok: false, why: "the engine's /metrics shows no ranks yet" };
    if (!isWidth(ranks, width)) return { ok: false, why: `the engine's /metrics shows ranks [${ranks.join(", ")}], not 0..${width - 1}`, seen: ranks };
    const statuses = await Promise.all(Array.from({ length: width }, (_, rank) => probeRank(url, model, rank)));
    const missing = statuses.flatMap((status, rank) => (status === 200 ? [] : [`${rank} (${status ?? "no answer"})`]));
    if (missing.length > 0) return { ok: false, why: `completions pinned to rank ${missing.join(", ")} were not answered 200`, seen: ranks };
    const beyond = await probeRank(url, model, width);
    if (beyond !== 400) return { ok: false, why: `a completion pinned to rank ${width} answered ${beyond ?? "nothing"}, not 400 (out of range)`, seen: ranks };
    return { ok: true };
  }

  /** Sends the call in the background; its outcome is recorded and the deployment woken. */
  function send(op: Operation, url: string, call: ScaleCall) {
    calling.add(op.id);
    void (async () => {
      let outcome: Pick<ScaleCall, "outcome" | "status" | "answer">;
      try {
        outcome = await withTimeout(config.callTimeoutMs, async (signal) => {
          const res = await fetch(`${url}/scale_elastic_ep`, {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ new_data_parallel_size: call.size, drain_timeout: config.drainTimeoutSeconds }),
            signal,
          });
          const answer = (await res.text()).slice(0, 500);
          return { outcome: res.status === 200 ? ("ok" as const) : ("refused" as const), status: res.status, answer };
        });
      } catch (error) {
        outcome = { outcome: "ambiguous", answer: (error as Error).message.slice(0, 500) };
      }
      calling.delete(op.id);
      if (stopped) return; // the next run finds the call unanswered: ambiguous, as it should be
      const current = active.get(op.deploymentId);
      if (!current || current.id !== op.id) return;
      const record = recordOf(current);
      const index = record.calls.findIndex((c) => c.sentAt === call.sentAt && c.replica === call.replica);
      if (index < 0) return;
      const retryAt =
        outcome.outcome === "refused" ? new Date(now() + retryDelayMs(config.retry, record.calls.filter((c) => c.replica === call.replica).length)).toISOString() : undefined;
      record.calls[index] = { ...call, ...outcome, ...(retryAt ? { retryAt } : {}) };
      try {
        await saveRecord(current, record);
      } catch (error) {
        logger.warn("resize call outcome not recorded; it will be decided by observation", { operationId: op.id, error: (error as Error).message });
      }
      logger.info("resize call answered", { deploymentId: op.deploymentId, operationId: op.id, ...outcome });
      later(op.deploymentId, 0);
    })();
  }

  async function annotateWidth(leader: V1Pod, width: number): Promise<void> {
    // A JSON patch (client-node's default for typed patches) that sets one annotation; `~1` is `/`.
    const path = `/metadata/annotations/${ANNOTATIONS.elasticWidth.replace("~", "~0").replace("/", "~1")}`;
    await kube.core.patchNamespacedPod({
      name: leader.metadata!.name!,
      namespace: leader.metadata!.namespace!,
      body: [
        { op: "test", path: "/metadata/uid", value: leader.metadata!.uid },
        { op: "add", path, value: String(width) },
      ],
    });
  }

  /** Rank pods at or above `width` that the engine is proven not to hold: deleted (UID preconditions). */
  async function deleteRanksFrom(instance: ElasticInstance, width: number): Promise<string[]> {
    const leaving = [...instance.ranks.entries()].filter(([rank, pod]) => rank >= width && rank > 0 && !isTerminating(pod));
    for (const [, pod] of leaving) {
      await applyAction(kube, { kind: "deletePod", namespace: pod.metadata!.namespace!, name: pod.metadata!.name!, uid: pod.metadata!.uid!, reason: "surplus" });
    }
    return leaving.map(([, pod]) => pod.metadata!.name!);
  }

  /** Pods still counted against a node's GPUs in a fresh list, among `names`. */
  async function gpuHolders(pass: ResizePass, op: Operation, replica: number, fromRank: number): Promise<number> {
    const namespace = pass.observed.pods[0]?.metadata?.namespace ?? `berth-${pass.render.deployment.projectName}`;
    const list = await kube.core.listNamespacedPod({
      namespace,
      labelSelector: `${LABELS.deploymentId}=${pass.deploymentId},${LABELS.role}=${op.role},${LABELS.replica}=${replica}`,
    });
    return list.items.filter((p) => Number(p.metadata?.labels?.[LABELS.member]) >= fromRank && p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed").length;
  }

  /**
   * A resize that ends without reaching its width keeps serving at whichever width the engine
   * proves; rank pods beyond it are out of the collective and go. Unproven: nothing is deleted.
   */
  async function settleAfterFailure(pass: ResizePass, instance: ElasticInstance | undefined): Promise<string> {
    if (!instance?.leader?.status?.podIP) return "the instance has no live leader to read";
    const ranks = await readRanks(leaderUrl(pass, instance.leader));
    if (!ranks || ranks.length === 0 || !isWidth(ranks, ranks.length)) return "the engine's width could not be read, so no rank pod was removed";
    const width = ranks.length;
    if (instance.width !== width) await annotateWidth(instance.leader, width);
    const removed = await deleteRanksFrom(instance, width);
    return `the instance serves ${width} ranks${removed.length > 0 ? `; removed rank pods ${removed.join(", ")} (out of the collective)` : ""}`;
  }

  async function step(pass: ResizePass, acks: ReadonlyMap<string, string>): Promise<void> {
    let op = active.get(pass.deploymentId);
    if (!op) return;
    const { spec } = pass.render.deployment;
    const role = spec.roles.find((r) => r.name === op!.role);
    const record = recordOf(op);
    const to = targetOf(op);
    if (pass.deleting) return finish(op, { phase: "Failed", reason: "DeploymentDeleted", message: "the deployment is being deleted with every pod", record });
    if (!role?.elastic || !Number.isInteger(to)) {
      return finish(op, { phase: "Failed", reason: "NotElastic", message: `role "${op.role}" is not an elastic role with a width to reach`, record });
    }
    if (calling.has(op.id)) return later(pass.deploymentId); // the engine call is still out: wait for it
    const instances = elasticInstances(role, pass.observed.pods).filter((i) => i.replica < role.replicas);
    const sent = record.calls.length > 0;
    // The spec moved to another width before any engine call: this one is void (no rank joined).
    if (role.elastic.width !== to && !sent) {
      const current = instances.find((i) => i.replica === record.replica);
      const kept = current?.width ?? role.elastic.width;
      const removed = current ? await deleteRanksFrom(current, Math.max(kept, role.elastic.width)) : [];
      const message = `the spec now asks for width ${role.elastic.width}; this resize to ${to} stopped before any engine call${removed.length ? ` (removed ${removed.join(", ")})` : ""}`;
      return finish(op, { phase: "Aborted", reason: "WidthChanged", message, record });
    }
    if (op.phase === "Pending") {
      const running = await patch(op, { phase: "Running" });
      if (!running) return;
      op = running;
    }
    // The instance in hand, or the next one whose engine is not at the target width.
    const instance = record.replica !== undefined ? instances.find((i) => i.replica === record.replica) : undefined;
    if (!instance) return beginNext(op, record, instances, to);
    const leader = instance.leader;
    if (!leader?.status?.podIP) {
      await hold(op, { reason: "LeaderNotRunning", message: `${op.role} r${instance.replica}: waiting for the leader pod` });
      return later(pass.deploymentId, config.tickMs * 2);
    }
    const url = leaderUrl(pass, leader);
    const from = record.fromWidth ?? instance.width!;
    const where = `${op.role} r${instance.replica}`;
    holding.delete(pass.deploymentId);

    switch (op.step) {
      case "AdmittingPods":
      case "Joining": {
        const wanted = Array.from({ length: to - from }, (_, i) => from + i);
        for (const rank of wanted) {
          if (!instance.ranks.has(rank)) await applyAction(kube, { kind: "createPod", object: renderMemberPod(pass.render, op.role, instance.replica, rank) });
        }
        const pods = wanted.map((rank) => instance.ranks.get(rank)).filter((p): p is V1Pod => p !== undefined);
        const problem = pods.map((p) => podProblem(p)).find((p) => p !== undefined);
        if (problem) {
          await hold(op, problem);
          return later(pass.deploymentId, config.tickMs * 2);
        }
        const scheduled = pods.filter((p) => p.spec?.nodeName).length;
        if (op.step === "AdmittingPods") {
          if (pods.length < wanted.length || scheduled < wanted.length) return later(pass.deploymentId);
          await moveTo(op, "Joining", `${where}: ${wanted.length} new rank pods placed; waiting for them to join`);
          return;
        }
        const joined = pods.filter(isPodReady).length;
        if (joined < wanted.length) return later(pass.deploymentId);
        await moveTo(op, "Scaling", `${where}: ranks ${from}..${to - 1} joined; asking the engine for ${to} ranks`);
        return;
      }
      case "Scaling": {
        const calls = record.calls.filter((c) => c.replica === instance.replica);
        const last = calls.at(-1);
        if (last && (last.outcome === undefined || last.outcome === "ambiguous")) {
          await moveTo(op, "Observing", `${where}: the call for ${to} ranks got no answer; deciding by what the engine shows`, { ...record, since: new Date(now()).toISOString() });
          return;
        }
        if (last?.outcome === "ok") {
          await moveTo(op, "Verifying", `${where}: the engine answered 200; proving ${to} ranks`, { ...record, since: new Date(now()).toISOString() });
          return;
        }
        if (last?.outcome === "refused") {
          if (calls.length >= config.retry.tries) {
            const settled = await settleAfterFailure(pass, instance);
            const message = `${where}: the engine refused ${calls.length} calls for ${to} ranks (last: ${last.status} ${last.answer ?? ""}); ${settled}`;
            return finish(op, { phase: "Failed", reason: "ScaleRefused", message, record });
          }
          const wait = Date.parse(last.retryAt ?? "") - now();
          if (wait > 0) {
            await hold(op, { reason: "ScaleRefused", message: `${where}: the engine answered ${last.status}; try ${calls.length + 1} of ${config.retry.tries} at ${last.retryAt}` });
            return later(pass.deploymentId, Math.min(wait, 60_000));
          }
        }
        if ((await isScaling(url)) !== false) {
          // Another resize is under way, or the leader cannot say: a call now would be refused or lost.
          await hold(op, { reason: "EngineBusy", message: `${where}: the engine is scaling or unreachable; waiting before the call` });
          return later(pass.deploymentId, config.tickMs * 2);
        }
        const call: ScaleCall = { replica: instance.replica, size: to, sentAt: new Date(now()).toISOString() };
        // Recorded before it is sent: a restart from here on treats it as possibly received.
        const saved = await saveRecord(op, { ...record, calls: [...record.calls, call] }, { message: `${where}: asking the engine for ${to} ranks (call ${calls.length + 1})` });
        if (!saved) return;
        send(saved, url, call);
        return;
      }
      case "Observing": {
        const scaling = await isScaling(url);
        const since = Date.parse(record.since ?? "") || now();
        if (scaling !== false) {
          if (now() - since > config.observeLimitMs) {
            const message = `${where}: the engine still ${scaling ? "scales" : "does not answer"} ${Math.round((now() - since) / 1000)} s after an unanswered call; nothing was deleted`;
            return finish(op, { phase: "Failed", reason: "EngineUnresponsive", message, record });
          }
          return later(pass.deploymentId);
        }
        const ranks = await readRanks(url);
        if (!ranks) return later(pass.deploymentId);
        if (isWidth(ranks, to)) {
          await moveTo(op, "Verifying", `${where}: the engine shows ${to} ranks after the unanswered call; proving them`, { ...record, since: new Date(now()).toISOString() });
          return;
        }
        const settled = await settleAfterFailure(pass, instance);
        const message = `${where}: the unanswered call for ${to} ranks did not take effect (the engine shows ranks [${ranks.join(", ")}]); it is not sent again; ${settled}`;
        return finish(op, { phase: "Failed", reason: "ScaleNotApplied", message, record });
      }
      case "Verifying": {
        const proof = await prove(url, spec.model.name, to);
        if (!proof.ok) {
          const since = Date.parse(record.since ?? "") || now();
          if (now() - since > config.verifyLimitMs) {
            const settled = await settleAfterFailure(pass, instance);
            return finish(op, { phase: "Failed", reason: "WidthNotProven", message: `${where}: ${proof.why}; ${settled}`, record });
          }
          await hold(op, { reason: "Verifying", message: `${where}: ${proof.why}` });
          return later(pass.deploymentId);
        }
        await annotateWidth(leader, to);
        const proven = { ...record.proven, [instance.replica]: to };
        const next = to > from ? "UpdatingRouter" : "Deleting";
        await moveTo(op, next, `${where}: ${to} ranks proven (metrics and a pinned completion per rank)`, { ...record, proven });
        return;
      }
      case "Deleting": {
        const removed = await deleteRanksFrom(instance, to);
        await moveTo(op, "Settling", `${where}: deleting rank pods ${removed.join(", ") || "(already gone)"}`);
        return;
      }
      case "Settling": {
        const holders = await gpuHolders(pass, op, instance.replica, to);
        if (holders > 0) return later(pass.deploymentId);
        await moveTo(op, "UpdatingRouter", `${where}: the leaving rank pods are gone and their GPUs free`);
        return;
      }
      case "UpdatingRouter": {
        if (spec.router?.kind === "builtin") {
          const hash = endpointsHash(buildEndpointsBody(pass.render, pass.observed.pods));
          const { acked, ready } = routersAcknowledged(pass.observed.routerPods, acks, hash);
          if (acked < ready) {
            await hold(op, { reason: "UpdatingRouter", message: `${where}: ${acked}/${ready} router pods hold the new width` });
            return later(pass.deploymentId);
          }
        }
        const done: ResizeRecord = { ...record, replica: undefined, fromWidth: undefined, since: undefined };
        return beginNext(op, done, instances.filter((i) => i.replica !== instance.replica), to);
      }
      default:
        return beginNext(op, { ...record, replica: undefined }, instances, to);
    }
  }

  /**
   * What holds the operation: shown by the Resizing condition, and written into the operation's
   * message (only when it changes) so `GET /v1/operations/{id}` says why it waits.
   */
  async function hold(op: Operation, why: { reason: string; message: string }): Promise<void> {
    holding.set(op.deploymentId, why);
    const message = `${why.reason}: ${why.message}`;
    if (op.message !== message) await patch(op, { message });
  }

  /** Starts on the next instance whose engine is not at `to`, or ends the operation when none is left. */
  async function beginNext(op: Operation, record: ResizeRecord, instances: readonly ElasticInstance[], to: number): Promise<void> {
    const next = instances.find((i) => i.leader && i.width !== to);
    if (!next) {
      const message = `every instance of ${op.role} runs ${to} ranks`;
      return finish(op, { phase: "Succeeded", message, record: { ...record, replica: undefined } });
    }
    const from = next.width!;
    const message = `${op.role} r${next.replica}: ${to > from ? "growing" : "shrinking"} from ${from} to ${to} ranks`;
    await moveTo(op, to > from ? "AdmittingPods" : "Scaling", message, { ...record, replica: next.replica, fromWidth: from, since: undefined });
  }

  /** The resize the spec asks for, if no operation carries it: adopted when recorded, else recorded. */
  async function ensureOperation(pass: ResizePass, role: Role): Promise<void> {
    const width = role.elastic!.width;
    const instances = elasticInstances(role, pass.observed.pods).filter((i) => i.replica < role.replicas && i.leader);
    const off = instances.find((i) => i.width !== width);
    if (!off) return;
    // Listed on every pass while a width is off (rare, and passes are seconds apart at most): a
    // retry the API records after a failure is adopted here.
    const recorded = await api.listOperations({ deploymentId: pass.deploymentId, kind: "resize" }, signal);
    const open = recorded.find((op) => op.role === role.name && (op.phase === "Pending" || op.phase === "Running"));
    if (open) {
      active.set(pass.deploymentId, open);
      return;
    }
    // The newest ended one for this width is not redone on its own (a new resize request is).
    const ended = recorded.filter((op) => op.role === role.name).sort((a, b) => (a.startedAt < b.startedAt ? 1 : -1))[0];
    if (ended && targetOf(ended) === width) {
      if (ended.phase !== "Succeeded" && ended.error) failed.set(pass.deploymentId, { id: ended.id, role: ended.role, reason: ended.error.reason, message: ended.error.message });
      return;
    }
    const key = `resize/${pass.deploymentId}/${role.name}/g${pass.render.deployment.generation}/${width}`;
    const op = await api.createOperation(
      {
        kind: "resize",
        deploymentId: pass.deploymentId,
        role: role.name,
        params: { fromWidth: off.width, toWidth: width },
        phase: "Pending",
        step: "Requested",
        message: `the spec asks ${role.name} for ${width} ranks; r${off.replica} runs ${off.width}`,
      },
      key,
      signal,
    );
    if (op.phase === "Pending" || op.phase === "Running") active.set(pass.deploymentId, op);
    logger.info("resize recorded", { deploymentId: pass.deploymentId, operationId: op.id, toWidth: width });
  }

  return {
    async resume() {
      // New work only once the recorded work is known (else a second operation could start).
      resumed = await resumeOperations(api, "resize", { signal, stopped: () => stopped, logger, active, wake });
    },

    async prepare(pass) {
      const role = pass.render.deployment.spec.roles.find((r) => r.elastic);
      if (!role || !resumed || pass.deleting || stopped || active.has(pass.deploymentId)) return;
      try {
        await ensureOperation(pass, role);
      } catch (error) {
        if (signal.aborted) return;
        logger.warn("resize could not be recorded; retrying", { deploymentId: pass.deploymentId, error: (error as Error).message });
        later(pass.deploymentId, config.tickMs * 5);
      }
    },

    async advance(pass, acks) {
      try {
        await step(pass, acks);
      } catch (error) {
        if (signal.aborted) return;
        logger.warn("resize step failed; retrying", { deploymentId: pass.deploymentId, error: (error as Error).message });
        later(pass.deploymentId, config.tickMs * 2);
      }
    },

    view(deploymentId) {
      const op = active.get(deploymentId);
      const hold = holding.get(deploymentId);
      const last = failed.get(deploymentId);
      return {
        ...(op ? { active: { id: op.id, role: op.role, step: op.step, message: op.message, ...(hold ? { holding: hold } : {}) } } : {}),
        ...(!op && last ? { failed: last } : {}),
      };
    },

    forget(deploymentId) {
      active.delete(deploymentId);
      failed.delete(deploymentId);
      holding.delete(deploymentId);
    },

    stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

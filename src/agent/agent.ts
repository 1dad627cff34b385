// The agent's composition: the desired-state long-poll, informers on every object it manages
// (each change enqueues the deployment named on the object), a per-deployment work queue
// (serialised per deployment, parallel across them, capped exponential backoff per key), a
// slow safety re-check of unsettled deployments, a periodic resync and the heartbeat. Each pass
// is observe (from the informers' cache) → render → plan → apply → report. No pass runs before
// the kinds it reads have listed once, nor before the cache shows its previous pass's writes
// (expectations, bounded). Losing the API only stops news: what the agent last knew keeps being
// reconciled as is.
import { sleepUnlessAborted } from "./abortable.ts";
import type { IsolationOptions, RenderInput } from "../../k8s/render/index.ts";
import { namespaceName, resolveOptions } from "../../k8s/render/index.ts";
import type { Clock } from "../domain/clock.ts";
import type { DesiredState } from "../domain/cluster.ts";
import type { DeploymentStatus } from "../domain/deployment-spec.ts";
import type { Deployment } from "../domain/deployment.ts";
import type { Inventory } from "../domain/cluster.ts";
import { CLUSTER_DISCONNECTED } from "../domain/unobserved-status.ts";
import { type AgentApi, ApiError } from "./api-client.ts";
import { applyActions } from "./apply.ts";
import { createAutoscaler, type ScalingReport } from "./autoscaler.ts";
import { affectedKeys, kindsFor, type KnownDeployments, observeFromCache } from "./cluster-cache.ts";
import { expectationsOf, expectationWait, type PendingExpectations } from "./expectations.ts";
import { createInformers } from "./informers.ts";
import { addGpuUse, type GpuUse, inventoryFromUse } from "./inventory.ts";
import { continueFrom, forEachPage, LIST_PAGE_SIZE } from "./paged-list.ts";
import type { Kube } from "./kube.ts";
import { type Observed, observedCount } from "./observe.ts";
import { nextPauses, type PlacementPauses, readyGroups } from "./instance-group.ts";
import { type Action, isRetirement, missingPodSecurityLabels, planDeployment, retirementCandidates } from "./plan.ts";
import { createResizeExecutor, type ResizeConfig } from "./resize-executor.ts";
import { createRetirementExecutor } from "./retirement-executor.ts";
import { buildEndpointsBody, readyRouterPods } from "./router-endpoint-list.ts";
import { pushEndpoints, tokenFromSecret } from "./router-endpoints.ts";
import { needsRouterViews } from "./rank-coverage.ts";
import { readRouterViews } from "./router-views.ts";
import { computeStatus, endpointOf, type StatusInput } from "./status.ts";
import { askEndpoint, type EndpointCheck, type EndpointReply, nextEndpointCheck } from "./endpoint-check.ts";
import { type AgentMode, namespaceRefusal } from "./namespace-scope.ts";

export interface AgentConfig {
  agentVersion: string;
  routerImage: string;
  /** vLLM EPD's shared encoder-cache claim: storage class (unset: the cluster's default; it must offer ReadWriteMany) and size. */
  ecCache?: { storageClassName?: string; size?: string };
  /** NetworkPolicy sources and destinations (docs/design.md §13.5): gateway namespace, agent namespace, model-download block. */
  isolation?: IsolationOptions;
  heartbeatMs: number;
  resyncMs: number;
  /**
   * Safety re-check of a deployment that is not settled: informer events re-enqueue it as soon
   * as anything it owns changes, so this only bounds how long a missed event could stall it.
   */
  settleMs: number;
  /** How long a pass waits for the cache to show the previous pass's writes before planning anyway. */
  expectationTimeoutMs: number;
  /** Base of the informers' watch timeoutSeconds (each watch takes a random value in [base, 2 × base)). */
  watchTimeoutSeconds: number;
  waitSeconds: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** Elastic resizes: retry schedule and timeouts (tests shorten them). */
  resize?: Partial<ResizeConfig>;
  /**
   * How many times faster than the wall clock the engines' time runs: 1 for real engines. A
   * time-compressed simulation (bench:scaling runs simulated engines 15× fast and reports their
   * latencies in model time) sets its factor, so that metric reads are timestamped in engine time
   * and rates come out per engine second: a rate times a latency is then a concurrency.
   */
  metricsTimeScale?: number;
  /**
   * Namespaced mode: the only namespaces the agent watches and writes in (they must exist; it
   * never creates one). Undefined: cluster mode (cluster-wide informers, namespaces on demand).
   */
  namespaces?: readonly string[];
  /** Namespaced mode: how often each listed namespace is read with `get`. */
  namespacePollMs?: number;
  /**
   * How a deployment's endpoint is asked before Ready (endpoint-check.ts); default an HTTP GET.
   * Clusters whose pods run no processes (scale benchmarks) have nothing that could answer and
   * say so here.
   */
  askEndpoint?: (endpoint: string) => Promise<EndpointReply>;
}

export const DEFAULT_AGENT_CONFIG: AgentConfig = {
  agentVersion: "0.1.0",
  routerImage: "ghcr.io/berth/berth:0.1.0",
  heartbeatMs: 10_000,
  resyncMs: 30_000,
  settleMs: 5_000,
  expectationTimeoutMs: 10_000,
  watchTimeoutSeconds: 300,
  waitSeconds: 30,
  backoffBaseMs: 500,
  backoffCapMs: 60_000,
};

export interface Logger {
  info(msg: string, data?: object): void;
  warn(msg: string, data?: object): void;
}

const consoleLogger: Logger = {
  info: (msg, data) => process.stderr.write(JSON.stringify({ level: "info", msg, ...data }) + "\n"),
  warn: (msg, data) => process.stderr.write(JSON.stringify({ level: "warn", msg, ...data }) + "\n"),
};

type Item = DesiredState["items"][number];

/** A failed endpoint push: reported as such in status (never Ready) and retried with backoff. */
class PushError extends Error {}

interface KeyState {
  running: boolean;
  dirty: boolean;
  failures: number;
  timer?: ReturnType<typeof setTimeout>;
  lastSent?: string;
  lastStatus?: DeploymentStatus | null;
  /** Builtin router: router pod ack key → hash of the endpoint list it acknowledged. */
  routerAcks: Map<string, string>;
  /** What the cache must show of this deployment's last writes before it is planned again. */
  expecting?: PendingExpectations;
  /** The autoscaler's latest evaluation, written by the next pass (one status writer). */
  scaling?: ScalingReport;
  /** Autoscaler evaluations waiting for a pass to write them: resolved with the stored deployment. */
  scalingWaiters: Set<{ report: ScalingReport | undefined; done: (written: Deployment | "unchanged" | undefined) => void }>;
  /** Multi-host groups freed for lack of GPUs: when each may be created again (instance-group.ts). */
  placementPauses?: PlacementPauses;
  /** The last question to the deployment's endpoint and its answer. */
  endpointCheck?: EndpointCheck;
}

export interface Agent {
  start(): void;
  stop(): Promise<void>;
}

export function createAgent({
  kube,
  api,
  clock,
  config: partial = {},
  logger = consoleLogger,
}: {
  kube: Kube;
  api: AgentApi;
  clock: Clock;
  config?: Partial<AgentConfig>;
  logger?: Logger;
}): Agent {
  const config = { ...DEFAULT_AGENT_CONFIG, ...partial };
  const desired = new Map<string, Item>();
  const keys = new Map<string, KeyState>();
  const abort = new AbortController();
  const loops: Promise<void>[] = [];
  const timers: ReturnType<typeof setInterval>[] = [];
  const inFlight = new Set<Promise<void>>();
  let stopped = false;

  const mode: AgentMode = config.namespaces === undefined ? { mode: "cluster" } : { mode: "namespaced", namespaces: config.namespaces };
  const informers = createInformers({
    kube,
    ...(config.namespaces !== undefined && { namespaces: config.namespaces }),
    ...(config.namespacePollMs !== undefined && { namespacePollMs: config.namespacePollMs }),
    watchTimeoutSeconds: config.watchTimeoutSeconds,
    backoffBaseMs: config.backoffBaseMs,
    backoffCapMs: config.backoffCapMs,
    logger,
    onChange: (kind, object) => {
      for (const key of affectedKeys(kind, object, known)) enqueue(key);
    },
    // Passes held back until their kinds listed (see run) go now.
    onSynced: () => desired.forEach((_, key) => enqueue(key)),
  });
  const { cache } = informers;
  // Surplus instances retire through persisted operations (docs/design.md §7.6), one per deployment at a time.
  const retirementExecutor = createRetirementExecutor({ kube, api, logger, signal: abort.signal, wake: (key) => enqueue(key) });
  // Elastic width changes run as persisted resize operations (docs/design.md §8.2), one per deployment at a time.
  const resizeExecutor = createResizeExecutor({ kube, api, logger, signal: abort.signal, wake: (key) => enqueue(key), config: config.resize });
  const lookup = cache.get.bind(cache);
  const known: KnownDeployments = {
    has: (id) => desired.has(id),
    *[Symbol.iterator]() {
      for (const [key, item] of desired) yield [key, namespaceName(item.projectName)];
    },
  };

  const sleep = (ms: number) => sleepUnlessAborted(ms, abort.signal);

  let inventory: Inventory | undefined;
  /** When the inventory's pod list was asked for: pods bound since are not counted in it. */
  let inventoryAt: number | undefined;
  const autoscaler = createAutoscaler({
    api,
    item: (key) => desired.get(key),
    observe: (key) => {
      const item = desired.get(key);
      const routerKinds = item?.deployment.spec.router !== undefined;
      if (!item || !informers.isSynced(kindsFor(routerKinds))) return undefined;
      return observeFromCache(cache, namespaceName(item.projectName), key, routerKinds);
    },
    inventory: () => inventory,
    // The pass writes status; the autoscaler waits for it (bounded) before it PATCHes replicas.
    report: (key, report, timeoutMs) =>
      new Promise((resolve) => {
        const state = stateOf(key);
        state.scaling = report;
        if (timeoutMs > 0) {
          const waiter = {
            report,
            done: (written: Deployment | "unchanged" | undefined) => {
              clearTimeout(timer);
              state.scalingWaiters.delete(waiter);
              resolve(written);
            },
          };
          const timer = setTimeout(() => waiter.done(undefined), timeoutMs);
          state.scalingWaiters.add(waiter);
        } else resolve(undefined);
        enqueue(key);
      }),
    routerImage: config.routerImage,
    logger,
    ...(config.metricsTimeScale !== undefined && { metricsTimeScale: config.metricsTimeScale }),
  });

  const stateOf = (key: string) => {
    let state = keys.get(key);
    if (!state) keys.set(key, (state = { running: false, dirty: false, failures: 0, routerAcks: new Map(), scalingWaiters: new Set() }));
    return state;
  };

  function enqueue(key: string, delayMs = 0): void {
    if (stopped) return;
    const state = stateOf(key);
    if (state.running) {
      state.dirty = true;
      return;
    }
    if (state.timer) {
      if (delayMs > 0) return; // an earlier wake-up is already scheduled
      clearTimeout(state.timer);
    }
    state.timer = setTimeout(() => {
      const pass = run(key);
      inFlight.add(pass);
      void pass.finally(() => inFlight.delete(pass));
    }, delayMs);
  }

  /** 0 when the key may be planned now; otherwise how long to wait (undefined: until a kind syncs). */
  function holdOf(key: string, state: KeyState): number | undefined {
    const item = desired.get(key);
    if (!item) return 0;
    // Before its kinds listed once, an empty cache would read as "nothing exists".
    if (!informers.isSynced(kindsFor(item.deleting || item.deployment.spec.router !== undefined))) return undefined;
    const { waitMs, unmet } = expectationWait(state.expecting, lookup, Date.now());
    if (waitMs > 0) return waitMs;
    if (unmet.length > 0) logger.warn("writes not observed in time; planning anyway", { deploymentId: key, unmet: unmet.length, first: unmet[0] });
    state.expecting = undefined;
    return 0;
  }

  async function run(key: string): Promise<void> {
    const state = stateOf(key);
    state.timer = undefined;
    // Held back: an event (the cache showing the writes, a kind syncing) or the deadline wakes it.
    const hold = holdOf(key, state);
    if (hold !== 0) {
      if (hold !== undefined) enqueue(key, hold);
      return;
    }
    state.running = true;
    state.dirty = false;
    let next: number | undefined;
    try {
      const settled = await reconcile(key, state);
      state.failures = 0;
      if (!settled) next = config.settleMs;
    } catch (error) {
      state.failures++;
      next = Math.min(config.backoffCapMs, config.backoffBaseMs * 2 ** (state.failures - 1));
      logger.warn("reconcile failed", { deploymentId: key, error: (error as Error).message, retryInMs: next });
    } finally {
      state.running = false;
    }
    if (!desired.has(key)) {
      keys.delete(key);
      return;
    }
    if (state.dirty) enqueue(key);
    else if (next !== undefined) enqueue(key, next);
  }

  /** One pass; true when nothing is left to do until the desired state changes. */
  async function reconcile(key: string, state: KeyState): Promise<boolean> {
    const item = desired.get(key);
    if (!item) return true;
    const { deployment, deleting, projectName } = item;
    autoscaler.sync(key);
    const scaling = state.scaling;
    const render: RenderInput = {
      deployment: { id: deployment.id, name: deployment.name, projectName, spec: deployment.spec, generation: deployment.generation },
      options: { routerImage: config.routerImage, ...(config.ecCache && { ecCache: config.ecCache }), ...(config.isolation && { isolation: config.isolation }) },
    };
    const namespace = namespaceName(projectName);
    const routerKinds = deleting || deployment.spec.router !== undefined;
    const observed = observeFromCache(cache, namespace, deployment.id, routerKinds);
    // Namespaced mode: a namespace outside the allow-list, missing or unreadable is reported, never written to.
    const refusal = deleting
      ? undefined
      : namespaceRefusal(mode, {
          namespace,
          exists: observed.namespaceExists,
          missingLabels: missingPodSecurityLabels(observed.namespaceLabels),
          ...withProblem(informers.namespaceProblem(namespace)),
        });
    const now = clock.now().getTime();
    const pauses = state.placementPauses;
    const actions = refusal !== undefined ? [] : planDeployment({ render, deleting, observed, ...(inventory && { inventory }), ...(inventoryAt !== undefined && { inventoryAt }), ...(pauses && { placementPauses: pauses, now }) });
    const released = actions.flatMap((a) => (a.kind === "deletePod" && a.release ? [a.release] : []));
    if (released.length > 0 || pauses?.size) state.placementPauses = nextPauses(pauses ?? new Map(), released, readyGroups(render, observed.pods), now);
    for (const a of actions) {
      if (a.kind === "deletePod" && a.reason === "group") logger.info("instance group deleted", { deploymentId: deployment.id, pod: a.name, why: a.why });
    }
    // Every write that lands is expected in the cache before the next plan of this deployment.
    const expect = (action: Action) => {
      state.expecting = {
        items: [...(state.expecting?.items ?? []), ...expectationsOf(action)],
        deadline: Date.now() + config.expectationTimeoutMs,
      };
    };
    // Instances that retire (surplus, stale) are withdrawn from the builtin router first: their
    // deletes run only after every Ready router pod acknowledged them as draining.
    const retirements = actions.filter(isRetirement);
    let applyError: string | undefined = refusal;
    let pushError: string | undefined;
    const pass = { deploymentId: deployment.id, render, observed, deleting };
    /** What this pass pushed as draining; undefined when it pushed nothing (nothing is confirmed then). */
    let drainingPods: ReadonlySet<string> | undefined;
    if (refusal === undefined) {
      try {
        await applyActions(kube, actions.filter((a) => !isRetirement(a)), expect);
        const retiring = await retirementExecutor.prepare(pass, retirementCandidates(render, observed, inventory));
        await resizeExecutor.prepare(pass);
        if (!deleting) drainingPods = await pushRouterEndpoints(render, observed, retirements, state, retiring);
      } catch (error) {
        if (error instanceof PushError) pushError = error.message;
        else applyError = (error as Error).message;
      }
    }
    if (!applyError && !pushError) {
      try {
        await applyActions(kube, retirements, expect);
      } catch (error) {
        applyError = (error as Error).message;
      }
    }
    await retirementExecutor.advance(pass, state.routerAcks, drainingPods);
    await resizeExecutor.advance(pass, state.routerAcks);
    if (deleting && actions.length === 0 && observedCount(observed) === 0) {
      await api.confirmDeletion(deployment.id, abort.signal);
      desired.delete(key);
      retirementExecutor.forget(key);
      resizeExecutor.forget(key);
      logger.info("deployment removed", { deploymentId: key });
      return true;
    }
    // Report what is observed, never what was intended: the cache may not show this pass's writes
    // yet; their watch events enqueue the next pass, which reports them.
    const after: Observed = actions.length > 0 ? observeFromCache(cache, namespace, deployment.id, routerKinds) : observed;
    // External DP: which ranks the router pods confirm serving, read after this pass's push.
    const routerViews = !deleting && needsRouterViews(render) ? await readCoverageViews(render, after) : undefined;
    const statusInput: StatusInput = {
      render,
      deleting,
      observed: after,
      applyError,
      previous: state.lastStatus ?? deployment.status ?? null,
      now: clock.now(),
      routerAcks: state.routerAcks,
      pushError,
      retirement: retirementExecutor.view(deployment.id),
      resize: resizeExecutor.view(deployment.id),
      ...(inventory && { inventory }),
      ...(inventoryAt !== undefined && { inventoryAt }),
      ...(state.placementPauses?.size && { placementPauses: state.placementPauses }),
      ...(drainingPods && { drainingPods }),
      ...(scaling && { scaling }),
      ...(routerViews && { routerViews }),
    };
    // Ready needs the endpoint to answer (endpoint-check.ts): asked only when it is all that is missing.
    const endpoint = deleting ? undefined : endpointOf(render, after);
    if (endpoint && computeStatus({ ...statusInput, endpointCheck: { endpoint, answered: true, misses: 0, detail: "" } }).phase === "Ready") {
      const check = nextEndpointCheck(state.endpointCheck, endpoint, await (config.askEndpoint ?? askEndpoint)(endpoint));
      if (!check.answered && state.endpointCheck?.answered !== false) logger.info("endpoint did not answer", { deploymentId: deployment.id, endpoint, detail: check.detail });
      state.endpointCheck = check;
    }
    const status = computeStatus({ ...statusInput, ...(state.endpointCheck && { endpointCheck: state.endpointCheck }) });
    const body = JSON.stringify(status);
    // The API marks a silent cluster's deployments Ready Unknown: once heard again, the agent
    // re-sends what it observes even when that has not changed since its last write.
    const markedByApi = deployment.status?.conditions?.some((c) => c.reason === CLUSTER_DISCONNECTED) ?? false;
    let written: Deployment | "unchanged" = "unchanged";
    if (body !== state.lastSent || markedByApi) {
      try {
        written = (await api.putStatus(deployment.id, status, abort.signal)) ?? "unchanged";
        state.lastSent = body;
        state.lastStatus = status;
        if (desired.get(key) === item) desired.set(key, { ...item, deployment: { ...deployment, status } });
      } catch (error) {
        // 404: the record is already gone (its tombstone is on the way); nothing to report to.
        if (!(error instanceof ApiError && error.status === 404)) throw error;
      }
    }
    for (const waiter of state.scalingWaiters) if (waiter.report === scaling) waiter.done(written);
    if (applyError || pushError) throw new Error(applyError ?? pushError);
    return actions.length === 0 && status.phase === "Ready";
  }

  /** The builtin router's endpoint list, pushed to each Ready router pod whose copy is not current. */
  /** @returns the pod names pushed as draining: the retiring instance's (alsoDraining) and this pass's retiring deletes. */
  async function pushRouterEndpoints(
    render: RenderInput,
    observed: Observed,
    retirements: Action[],
    state: KeyState,
    alsoDraining: ReadonlySet<string> = new Set(),
  ): Promise<ReadonlySet<string>> {
    const draining = new Set([...alsoDraining, ...retirements.flatMap((a) => (a.kind === "deletePod" ? [a.name] : []))]);
    const { spec, name } = render.deployment;
    if (spec.router?.kind !== "builtin") return draining;
    const options = resolveOptions(spec, name, render.options);
    if (readyRouterPods(observed.routerPods).length === 0) return draining;
    const { name: secretName, key } = options.routerAdminTokenSecret;
    const token = tokenFromSecret(observed.secrets, secretName, key);
    if (!token) throw new PushError(`the router's admin token Secret ${secretName} (key ${key}) is not observed`);
    const body = buildEndpointsBody(render, observed.pods, draining);
    try {
      const pushed = await pushEndpoints({ routerPods: observed.routerPods, port: options.routerPort, token, body, acks: state.routerAcks });
      if (pushed > 0) logger.info("router endpoints pushed", { deploymentId: render.deployment.id, routerPods: pushed, endpoints: body.endpoints.length, draining: draining.size });
    } catch (error) {
      throw new PushError((error as Error).message);
    }
    return draining;
  }

  function readCoverageViews(render: RenderInput, observed: Observed) {
    const { routerPort, routerAdminTokenSecret } = resolveOptions(render.deployment.spec, render.deployment.name, render.options);
    return readRouterViews({ routerPods: observed.routerPods, secrets: observed.secrets, port: routerPort, tokenSecret: routerAdminTokenSecret });
  }

  async function pollDesired(): Promise<void> {
    let since = 0;
    let first = true;
    /** Set by a 410: the next answer is the full list, and what it lacks is no longer desired. */
    let relisting = false;
    while (!stopped) {
      try {
        // Only the first call answers at once; every later one long-polls, at resourceVersion 0 too
        // (an empty database), so an idle agent sends one request per waitSeconds.
        const state = await api.desired(since, first ? 0 : config.waitSeconds, abort.signal);
        first = false;
        if (relisting) {
          relisting = false;
          // Deletions after our `since` were purged (docs/design.md §14.5): the full list is the
          // API's answer, so anything known and missing from it was deleted meanwhile.
          const listed = new Set(state.items.map((item) => item.deployment.id));
          for (const [key, known] of desired) {
            if (listed.has(key) || known.deleting) continue;
            desired.set(key, { ...known, deleting: true });
            enqueue(key);
          }
        }
        for (const item of state.items) {
          const known = desired.get(item.deployment.id);
          if (known && known.deployment.resourceVersion > item.deployment.resourceVersion) continue;
          desired.set(item.deployment.id, item);
          enqueue(item.deployment.id);
        }
        for (const tombstone of state.deleted) {
          // The record is gone. Normally this agent confirmed it and forgot it already; if it
          // still knows the deployment, remove whatever objects remain (confirming is then a 404).
          const known = desired.get(tombstone.id);
          if (!known) continue;
          desired.set(tombstone.id, { ...known, deleting: true });
          enqueue(tombstone.id);
        }
        since = state.resourceVersion;
      } catch (error) {
        if (stopped) return;
        if (error instanceof ApiError && error.status === 410) {
          logger.warn("desired state: resume point purged; listing every deployment again", { since });
          since = 0;
          first = true;
          relisting = true;
          continue;
        }
        logger.warn("desired state unavailable; keeping workloads as they are", { error: (error as Error).message });
        await sleep(config.backoffBaseMs * 4);
      }
    }
  }

  /**
   * Every pod in the cluster (not only the managed ones the informers hold: other workloads use
   * GPUs too), read in pages and kept only as per-node GPU sums: the whole list is never held.
   */
  async function gpuUse(): Promise<GpuUse> {
    const used: GpuUse = new Map();
    if (mode.mode === "cluster") {
      await forEachPage(
        (next) => kube.core.listPodForAllNamespaces({ limit: LIST_PAGE_SIZE, ...continueFrom(next) }),
        (pods) => addGpuUse(used, pods.items),
      );
      return used;
    }
    const lists = await Promise.allSettled(
      mode.namespaces.map((namespace) =>
        forEachPage(
          (next) => kube.core.listNamespacedPod({ namespace, limit: LIST_PAGE_SIZE, ...continueFrom(next) }),
          (pods) => addGpuUse(used, pods.items),
        ),
      ),
    );
    lists.forEach((list, i) => {
      if (list.status === "rejected") logger.warn("pods not listed for the inventory", { namespace: mode.namespaces[i], error: (list.reason as Error).message });
    });
    return used;
  }

  /** One heartbeat at a time: a slow one (a loaded API server) is not joined by the next tick's. */
  let heartbeating = false;
  async function heartbeat(): Promise<void> {
    if (heartbeating) return;
    heartbeating = true;
    try {
      const at = clock.now().getTime();
      const [nodes, used] = await Promise.all([kube.core.listNode(), gpuUse()]);
      inventory = { ...inventoryFromUse(nodes.items, used), ...(mode.mode === "namespaced" && { podScope: { namespaces: [...mode.namespaces] } }) };
      inventoryAt = at;
      await api.heartbeat({ agentVersion: config.agentVersion, inventory }, abort.signal);
    } catch (error) {
      if (!stopped) logger.warn("heartbeat failed", { error: (error as Error).message });
    } finally {
      heartbeating = false;
    }
  }

  return {
    start() {
      logger.info("agent mode", {
        ...mode,
        ...(mode.mode === "namespaced" && { freeGpus: "counted from pods in the listed namespaces only" }),
      });
      informers.start();
      loops.push(heartbeat(), pollDesired(), retirementExecutor.resume(), resizeExecutor.resume());
      timers.push(setInterval(() => void heartbeat(), config.heartbeatMs));
      timers.push(setInterval(() => desired.forEach((_, key) => enqueue(key)), config.resyncMs));
    },
    async stop() {
      stopped = true;
      abort.abort();
      timers.forEach(clearInterval);
      retirementExecutor.stop();
      resizeExecutor.stop();
      for (const state of keys.values()) if (state.timer) clearTimeout(state.timer);
      for (const state of keys.values()) for (const waiter of state.scalingWaiters) waiter.done(undefined);
      await Promise.allSettled([...loops, ...inFlight, informers.stop(), autoscaler.stop()]);
    },
  };
}

const withProblem = (readProblem: string | undefined) => (readProblem === undefined ? {} : { readProblem });

// What the tests that stop, kill or replace agents mid-rollout share (agent-resilience,
// agent-ha-e2e): `berth agent` child processes, a deployment's pods sampled every 100 ms, the
// promises of a one-at-a-time rollout checked across the samples, waiting for convergence.
import { type ChildProcess, spawn } from "node:child_process";
import type * as k8s from "@kubernetes/client-node";
import { expect } from "vitest";
import { LABELS } from "../../k8s/render/index.ts";
import type { Kube } from "../../src/agent/kube.ts";
import { BERTH_BIN } from "../support/berth-process.ts";
import { type AdminCall, eventually } from "./e2e-support.ts";

/** The image every rollout in these tests moves from and to. */
export const OLD_IMAGE = "vllm/vllm-openai:v0.11.0";
export const NEW_IMAGE = "vllm/vllm-openai:v0.11.1";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One pod as a sample sees it. */
export interface PodView {
  name: string;
  uid: string;
  replica: number;
  hash: string;
  image: string;
  terminating: boolean;
  ready: boolean;
}

export const viewOf = (pod: k8s.V1Pod): PodView => ({
  name: pod.metadata!.name!,
  uid: pod.metadata!.uid!,
  replica: Number(pod.metadata?.labels?.[LABELS.replica] ?? -1),
  hash: pod.metadata?.labels?.[LABELS.specHash] ?? "",
  image: pod.spec?.containers?.[0]?.image ?? "",
  terminating: pod.metadata?.deletionTimestamp != null,
  ready: pod.metadata?.deletionTimestamp == null && (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"),
});

/** Lists a deployment's pods every 100 ms until stopped; `onSample` may react (kill an agent). */
export class PodSampler {
  readonly samples: Array<{ at: number; pods: PodView[] }> = [];
  readonly errors: string[] = [];
  private stopped = false;
  private loop: Promise<void>;

  constructor(kube: Kube, namespace: string, deploymentId: string, onSample?: (pods: PodView[]) => void) {
    this.loop = (async () => {
      while (!this.stopped) {
        try {
          const list = await kube.core.listNamespacedPod({ namespace, labelSelector: `${LABELS.deploymentId}=${deploymentId}` });
          const pods = list.items.map(viewOf);
          this.samples.push({ at: Date.now(), pods });
          onSample?.(pods);
        } catch (error) {
          this.errors.push(String(error));
        }
        await sleep(100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

/** The one-at-a-time strategy whose promises checkRollout states (the surge strategy: rollout-e2e.test.ts). */
export const ONE_AT_A_TIME = { rollout: { maxSurge: 0, maxUnavailable: 1 } };

/**
 * What plan.ts promises during a one-at-a-time rollout (surge 0, unavailable 1) of a role with `replicas` instances of one pod each:
 * pods exist only for indices 0..replicas-1 and only one per index (a new pod is created only
 * once its predecessor is gone), so never more than `replicas` pods, terminating or not; at most
 * one instance is unavailable (missing, terminating or not Ready) — a stale one is deleted only
 * while every other is Ready; stale instances go highest index first; a pod on the new spec hash
 * is never deleted, so exactly `replicas` new pods are ever created.
 */
export function checkRollout(samples: Array<{ at: number; pods: PodView[] }>, replicas: number, oldUids: Set<string>, newHash: string) {
  const problems: string[] = [];
  let worstUnavailable = 0;
  const newUids = new Set<string>();
  const replacedOrder: number[] = [];
  for (const { at, pods } of samples) {
    const when = new Date(at).toISOString();
    const perIndex = new Map<number, PodView[]>();
    for (const pod of pods) perIndex.set(pod.replica, [...(perIndex.get(pod.replica) ?? []), pod]);
    for (const [replica, group] of perIndex) {
      if (replica < 0 || replica >= replicas) problems.push(`${when}: pod ${group.map((p) => p.name)} outside 0..${replicas - 1}`);
      if (group.length > 1) problems.push(`${when}: ${group.length} pods share replica ${replica}: ${group.map((p) => `${p.name}/${p.uid}`)}`);
    }
    const live = pods.filter((p) => !p.terminating);
    if (pods.length > replicas) problems.push(`${when}: ${pods.length} pods (${live.length} not terminating) for ${replicas} replicas`);
    const unavailable = Array.from({ length: replicas }, (_, r) => r).filter((r) => !(perIndex.get(r) ?? []).some((p) => p.ready));
    worstUnavailable = Math.max(worstUnavailable, unavailable.length);
    if (unavailable.length > 1) problems.push(`${when}: ${unavailable.length} instances unavailable at once: r${unavailable.join(", r")}`);
    for (const pod of pods) {
      if (pod.hash === newHash) newUids.add(pod.uid);
      // An old pod leaves as terminating (or between two samples): the order of replacement.
      if (oldUids.has(pod.uid) && pod.terminating && !replacedOrder.includes(pod.replica)) replacedOrder.push(pod.replica);
    }
    for (const uid of oldUids) {
      if (!pods.some((p) => p.uid === uid)) {
        const replica = samples[0]!.pods.find((p) => p.uid === uid)?.replica;
        if (replica !== undefined && !replacedOrder.includes(replica)) replacedOrder.push(replica);
      }
    }
  }
  const final = samples.at(-1)!.pods;
  const finalUids = new Set(final.map((p) => p.uid));
  for (const uid of newUids) if (!finalUids.has(uid)) problems.push(`a pod on the new spec hash (${uid}) was deleted`);
  return { problems, worstUnavailable, newPodsCreated: newUids.size, replacedOrder };
}

export interface AgentProcess {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

/** `berth agent …args` as its own process, its stderr kept; `env` adds to this process's. */
/** `berth agent` as a child process; `wrap` runs it through another command that execs it (e.g. `ip netns exec <ns>`). */
export function spawnAgentProcess(args: string[], env: Record<string, string> = {}, wrap: readonly string[] = []): AgentProcess {
  const [command, ...rest] = [...wrap, process.execPath, BERTH_BIN, "agent", ...args];
  const child = spawn(command!, rest, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
  let err = "";
  child.stderr!.on("data", (chunk) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  return { child, exited, stderr: () => err };
}

/** SIGKILLs every process still running and waits for all of them to exit. */
export async function killAgentProcesses(processes: readonly AgentProcess[]): Promise<void> {
  for (const { child } of processes) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await Promise.allSettled(processes.map((p) => p.exited));
}

/** Ready at its current generation with every instance of its first role ready and updated (and on `image` if given). */
export const waitConverged = (call: AdminCall, id: string, replicas: number, { image, what = () => "", timeoutMs }: { image?: string; what?: () => string; timeoutMs?: number } = {}) =>
  eventually(
    () => `${id} Ready with ${replicas}/${replicas} ready and updated${image ? ` on ${image}` : ""} ${what()}`,
    async () => {
      const res = await call("GET", `/v1/deployments/${id}`);
      const status = res.body?.status;
      const role = status?.roles?.[0];
      return status?.phase === "Ready" &&
        status.observedGeneration === res.body.generation &&
        (image === undefined || res.body.spec.engine.image === image) &&
        role?.desired === replicas &&
        role.ready === replicas &&
        role.updated === replicas &&
        role.draining === 0
        ? res.body
        : undefined;
    },
    timeoutMs,
  );

/**
 * A merge patch of the deployment's spec (built from the current one), guarded by its ETag;
 * expects 200. The agent writes status meanwhile, which moves the ETag: a 412 reads again and
 * retries, as any If-Match client does (at most 5 rounds).
 */
export async function patchSpec(call: AdminCall, id: string, patch: (spec: { engine: object; roles: object[] }) => object) {
  let patched: Awaited<ReturnType<AdminCall>> | undefined;
  for (let round = 0; round < 5; round++) {
    const current = await call("GET", `/v1/deployments/${id}`);
    patched = await call("PATCH", `/v1/deployments/${id}`, { spec: patch(current.body.spec) }, { "Content-Type": "application/merge-patch+json", "If-Match": current.etag! });
    if (patched.status !== 412) break;
  }
  expect(patched!.status, JSON.stringify(patched!.body)).toBe(200);
  return patched!.body;
}

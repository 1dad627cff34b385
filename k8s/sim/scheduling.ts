// The scheduling loop: binds each pending pod to a node chosen by scheduler.ts, or marks it
// PodScheduled=False/Unschedulable with a FailedScheduling event in the scheduler's words.
// Unschedulable pods are retried when capacity may have changed: a pod removed or finished,
// a node added or changed.
import type { EventRecorder } from "./events.ts";
import { ApiError, timestamp, type KubeObject } from "./objects.ts";
import type { Registry } from "./registry.ts";
import { resourceOf } from "./resources.ts";
import { schedulePod, type PlacedPod, type PodSpecForScheduling, type SchedulingNode } from "./scheduler.ts";
import type { Store } from "./store.ts";
import { claimsProblem, PVCS } from "./volumes.ts";
import { WorkQueue } from "./work-queue.ts";

type Dict = Record<string, any>;

const PODS = resourceOf("pods");
const NODES = resourceOf("nodes");
const finished = (pod: KubeObject) => ["Succeeded", "Failed"].includes((pod.status as Dict | undefined)?.phase);

export class SchedulingLoop {
  readonly #queue: WorkQueue;
  readonly #unschedulable = new Set<string>();
  #unsubscribe?: () => void;

  constructor(
    private readonly store: Store,
    private readonly registry: Registry,
    private readonly recorder: EventRecorder,
  ) {
    this.#queue = new WorkQueue((key) => this.#schedule(key), "scheduler");
  }

  start(): void {
    this.#unsubscribe = this.store.subscribe((change) => {
      if (change.resource === NODES || change.resource === PVCS) return this.#retryUnschedulable();
      if (change.resource !== PODS) return;
      const pod = change.object;
      const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
      if (change.type === "DELETED" || (finished(pod) && !finished(change.previous ?? pod))) {
        this.#unschedulable.delete(key);
        return this.#retryUnschedulable();
      }
      if (!(pod.spec as Dict).nodeName && !pod.metadata.deletionTimestamp && change.type === "ADDED") this.#queue.add(key);
    });
    for (const pod of this.store.list(PODS)) if (!(pod.spec as Dict).nodeName) this.#queue.add(`${pod.metadata.namespace}/${pod.metadata.name}`);
  }

  #retryUnschedulable(): void {
    for (const key of this.#unschedulable) this.#queue.add(key);
  }

  async #schedule(key: string): Promise<void> {
    const [namespace, name] = key.split("/") as [string, string];
    const pod = this.store.get(PODS, namespace, name);
    const spec = pod?.spec as Dict | undefined;
    if (!pod || !spec || spec.nodeName || pod.metadata.deletionTimestamp || (spec.schedulerName ?? "default-scheduler") !== "default-scheduler") {
      this.#unschedulable.delete(key);
      return;
    }
    const nodes: SchedulingNode[] = this.store.list(NODES).map((node) => ({
      name: node.metadata.name!,
      labels: node.metadata.labels ?? {},
      allocatable: ((node.status as Dict | undefined)?.allocatable ?? {}) as SchedulingNode["allocatable"],
      taints: (node.spec as Dict | undefined)?.taints,
      unschedulable: (node.spec as Dict | undefined)?.unschedulable === true,
    }));
    const placed: PlacedPod[] = this.store
      .list(PODS)
      .filter((p) => (p.spec as Dict).nodeName && !finished(p))
      .map((p) => ({ nodeName: (p.spec as Dict).nodeName, spec: p.spec as PodSpecForScheduling }));
    // VolumeBinding's PreFilter runs before any node is looked at; its message replaces the per-node counts.
    const claims = claimsProblem(spec, namespace, (ns, claim) => this.store.get(PVCS, ns, claim));
    const placement = claims
      ? { node: undefined, message: `0/${nodes.length} nodes are available: ${claims}. preemption: 0/${nodes.length} nodes are available: ${nodes.length} Preemption is not helpful for scheduling.` }
      : schedulePod(spec as PodSpecForScheduling, nodes, placed);
    if (placement.node !== undefined) {
      this.#unschedulable.delete(key);
      try {
        await this.registry.bind(namespace, name, placement.node);
      } catch (error) {
        if (error instanceof ApiError && (error.code === 404 || error.code === 409)) return;
        throw error;
      }
      this.recorder.record(PODS, pod, "Normal", "Scheduled", `Successfully assigned ${namespace}/${name} to ${placement.node}`);
      return;
    }
    this.#unschedulable.add(key);
    const previous = ((pod.status as Dict | undefined)?.conditions ?? []) as Dict[];
    const before = previous.find((c) => c.type === "PodScheduled");
    const condition = {
      type: "PodScheduled",
      status: "False",
      reason: "Unschedulable",
      message: placement.message,
      lastProbeTime: null,
      lastTransitionTime: before?.status === "False" ? before.lastTransitionTime : timestamp(),
    };
    await this.registry.writeStatus(PODS, namespace, name, { ...(pod.status as Dict), phase: "Pending", conditions: [condition] }, "default-scheduler");
    this.recorder.record(PODS, pod, "Warning", "FailedScheduling", placement.message);
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#queue.close();
  }
}

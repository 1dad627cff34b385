// A minimal apps/v1 Deployment controller (for the router Deployment): `replicas` pods from
// the template, each labelled with the template's `pod-template-hash`, replaced on a template
// change by the RollingUpdate arithmetic of kube-controller-manager (maxSurge new pods above
// `replicas`, never fewer than `replicas - maxUnavailable` ready; the router's 1/0 replaces one
// pod at a time) or all at once for Recreate. Unlike a real cluster there are no ReplicaSets:
// pods are owned by the Deployment itself. Status carries replicas, updated, ready, available
// and the Available / Progressing conditions `kubectl rollout status` reads.
import { canonicalJson, fnv1a64 } from "../render/spec-hash.ts";
import type { EventRecorder } from "./events.ts";
import { ApiError, safeEncode, timestamp, type KubeObject } from "./objects.ts";
import type { Registry } from "./registry.ts";
import { resourceOf } from "./resources.ts";
import type { Store } from "./store.ts";
import { queueOwnersAndTheirPods } from "./owner-queue.ts";
import { WorkQueue } from "./work-queue.ts";

type Dict = Record<string, any>;

const DEPLOYMENTS = resourceOf("deployments", "apps");
const PODS = resourceOf("pods");
export const TEMPLATE_HASH_LABEL = "pod-template-hash";
const MANAGER = "kube-controller-manager";

export const templateHash = (template: unknown) => safeEncode(fnv1a64(canonicalJson(template)), 10);

/** An int-or-percent of `replicas` (maxSurge rounds up, maxUnavailable down). */
export function resolveIntOrPercent(value: number | string | undefined, replicas: number, roundUp: boolean, fallback: string): number {
  const raw = value ?? fallback;
  if (typeof raw === "number") return raw;
  const percent = /^(\d+)%$/.exec(raw);
  if (!percent) return Number(raw) || 0;
  const exact = (Number(percent[1]) * replicas) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

const isReady = (pod: KubeObject) => ((pod.status as Dict | undefined)?.conditions ?? []).some((c: Dict) => c.type === "Ready" && c.status === "True");
const age = (pod: KubeObject) => Date.parse(pod.metadata.creationTimestamp ?? "") || 0;

export class DeploymentController {
  readonly #queue: WorkQueue;
  #unsubscribe?: () => void;

  constructor(
    private readonly store: Store,
    private readonly registry: Registry,
    private readonly recorder: EventRecorder,
  ) {
    this.#queue = new WorkQueue((key) => this.#reconcile(key), "deployment-controller");
  }

  start(): void {
    this.#unsubscribe = queueOwnersAndTheirPods(this.store, this.#queue, DEPLOYMENTS);
  }

  async #reconcile(key: string): Promise<void> {
    const [namespace, name] = key.split("/") as [string, string];
    const deployment = this.store.get(DEPLOYMENTS, namespace, name);
    if (!deployment || deployment.metadata.deletionTimestamp) return;
    const spec = deployment.spec as Dict;
    const hash = templateHash(spec.template);
    const owned = this.store
      .list(PODS, namespace)
      .filter((pod) => pod.metadata.ownerReferences?.some((ref) => ref.controller && ref.uid === deployment.metadata.uid));
    const live = owned.filter((pod) => !pod.metadata.deletionTimestamp && !["Succeeded", "Failed"].includes((pod.status as Dict | undefined)?.phase));
    const current = live.filter((pod) => pod.metadata.labels?.[TEMPLATE_HASH_LABEL] === hash);
    const old = live.filter((pod) => pod.metadata.labels?.[TEMPLATE_HASH_LABEL] !== hash);
    const replicas: number = spec.replicas ?? 1;
    const recreate = spec.strategy?.type === "Recreate";
    const surge = recreate ? 0 : resolveIntOrPercent(spec.strategy?.rollingUpdate?.maxSurge, replicas, true, "25%");
    let unavailable = recreate ? replicas : resolveIntOrPercent(spec.strategy?.rollingUpdate?.maxUnavailable, replicas, false, "25%");
    if (surge === 0 && unavailable === 0) unavailable = 1;
    const rsName = `${name}-${hash}`;

    const deleted = new Set<string>();
    const remove = async (pods: KubeObject[]) => {
      for (const pod of pods) {
        deleted.add(pod.metadata.uid!);
        try {
          await this.registry.delete(PODS, namespace, pod.metadata.name!, { preconditions: { uid: pod.metadata.uid } });
        } catch (error) {
          if (!(error instanceof ApiError && (error.code === 404 || error.code === 409))) throw error;
        }
      }
    };

    if (recreate && old.length > 0) {
      await remove(old);
      this.recorder.record(DEPLOYMENTS, deployment, "Normal", "ScalingReplicaSet", `Scaled down old pods of deployment ${name} to 0`);
    } else if (!recreate || owned.every((pod) => pod.metadata.labels?.[TEMPLATE_HASH_LABEL] === hash)) {
      // Scale the new template up within the surge budget.
      const room = Math.min(replicas - current.length, replicas + surge - live.length);
      for (let i = 0; i < room; i++) await this.#createPod(deployment, hash);
      if (room > 0) this.recorder.record(DEPLOYMENTS, deployment, "Normal", "ScalingReplicaSet", `Scaled up replica set ${rsName} from ${current.length} to ${current.length + room}`);
      // Too many of the new template: the unready and youngest go first.
      if (current.length > replicas) {
        const extra = [...current].sort((a, b) => Number(isReady(a)) - Number(isReady(b)) || age(b) - age(a)).slice(0, current.length - replicas);
        await remove(extra);
        this.recorder.record(DEPLOYMENTS, deployment, "Normal", "ScalingReplicaSet", `Scaled down replica set ${rsName} from ${current.length} to ${replicas}`);
      }
      // Old pods go while enough pods stay ready (kube-controller-manager's reconcileOldReplicaSets).
      if (old.length > 0) {
        const minAvailable = replicas - unavailable;
        const newUnavailable = current.filter((pod) => !isReady(pod)).length;
        let budget = live.length - minAvailable - newUnavailable;
        if (budget > 0) {
          const unready = old.filter((pod) => !isReady(pod)).slice(0, budget);
          await remove(unready);
          budget -= unready.length;
          const available = live.filter((pod) => isReady(pod) && !deleted.has(pod.metadata.uid!)).length;
          const more = Math.min(budget, available - minAvailable);
          if (more > 0) await remove(old.filter((pod) => isReady(pod)).sort((a, b) => age(a) - age(b)).slice(0, more));
          if (deleted.size > 0) this.recorder.record(DEPLOYMENTS, deployment, "Normal", "ScalingReplicaSet", `Scaled down old pods of deployment ${name} by ${deleted.size}`);
        }
      }
    }
    await this.#writeStatus(deployment, live.filter((pod) => !deleted.has(pod.metadata.uid!)), hash, replicas, replicas - unavailable, rsName);
  }

  async #createPod(deployment: KubeObject, hash: string): Promise<void> {
    const template = (deployment.spec as Dict).template ?? {};
    const name = deployment.metadata.name!;
    await this.registry.create(
      PODS,
      deployment.metadata.namespace,
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          generateName: `${name}-${hash}-`,
          labels: { ...template.metadata?.labels, [TEMPLATE_HASH_LABEL]: hash },
          ...(template.metadata?.annotations && { annotations: template.metadata.annotations }),
          ownerReferences: [{ apiVersion: "apps/v1", kind: "Deployment", name, uid: deployment.metadata.uid!, controller: true, blockOwnerDeletion: true }],
        },
        spec: template.spec,
      },
      { fieldManager: MANAGER },
    );
  }

  async #writeStatus(deployment: KubeObject, live: KubeObject[], hash: string, replicas: number, minAvailable: number, rsName: string): Promise<void> {
    const updated = live.filter((pod) => pod.metadata.labels?.[TEMPLATE_HASH_LABEL] === hash);
    const ready = live.filter(isReady).length;
    const complete = updated.length === replicas && live.length === replicas && updated.every(isReady);
    const previous = ((deployment.status as Dict | undefined)?.conditions ?? []) as Dict[];
    const now = timestamp();
    const condition = (type: string, status: "True" | "False", reason: string, message: string) => {
      const before = previous.find((c) => c.type === type);
      const same = before?.status === status;
      return {
        type,
        status,
        lastUpdateTime: same && before?.reason === reason && before?.message === message ? before.lastUpdateTime : now,
        lastTransitionTime: same ? before?.lastTransitionTime : now,
        reason,
        message,
      };
    };
    const status = {
      observedGeneration: deployment.metadata.generation,
      replicas: live.length,
      updatedReplicas: updated.length,
      readyReplicas: ready,
      availableReplicas: ready,
      ...(replicas - ready > 0 && { unavailableReplicas: replicas - ready }),
      conditions: [
        ready >= minAvailable
          ? condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
          : condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
        complete
          ? condition("Progressing", "True", "NewReplicaSetAvailable", `ReplicaSet "${rsName}" has successfully progressed.`)
          : condition("Progressing", "True", "ReplicaSetUpdated", `ReplicaSet "${rsName}" is progressing.`),
      ],
    };
    await this.registry.writeStatus(DEPLOYMENTS, deployment.metadata.namespace, deployment.metadata.name!, status, MANAGER);
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#queue.close();
  }
}

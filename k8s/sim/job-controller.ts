// A minimal batch/v1 Job controller (for the API's migrations Job): non-indexed Jobs with
// `completions` and `parallelism` (default 1), a pod per missing completion from the template,
// `backoffLimit` failed pods (default 6) before the Job fails, `suspend`, and `activeDeadlineSeconds`
// checked whenever the Job is reconciled. Status carries startTime, active, ready, succeeded,
// failed, completionTime and the conditions `kubectl wait --for=condition=complete` reads
// (SuccessCriteriaMet then Complete; FailureTarget then Failed, as kube-controller-manager 1.31+).
// Unlike a real cluster a failed pod is replaced at once (no 10 s doubling backoff), and a
// finished Job's running pods are deleted without waiting for their grace period to end.
import type { EventRecorder } from "./events.ts";
import { ApiError, timestamp, type KubeObject } from "./objects.ts";
import type { Registry } from "./registry.ts";
import { resourceOf } from "./resources.ts";
import type { Store } from "./store.ts";
import { queueOwnersAndTheirPods } from "./owner-queue.ts";
import { WorkQueue } from "./work-queue.ts";

type Dict = Record<string, any>;

const JOBS = resourceOf("jobs", "batch");
const PODS = resourceOf("pods");
const MANAGER = "kube-controller-manager";

export interface JobCounts {
  active: number;
  ready: number;
  succeeded: number;
  failed: number;
}

export type JobStep =
  | { kind: "create"; pods: number }
  | { kind: "complete" }
  | { kind: "fail"; reason: "BackoffLimitExceeded" | "DeadlineExceeded"; message: string }
  | { kind: "wait" };

/** The next step of a Job from its spec and its pods' counts (pure). */
export function planJob(spec: Dict, counts: JobCounts, startedAt: number | undefined, now: number): JobStep {
  const completions: number = spec.completions ?? 1;
  const parallelism: number = spec.parallelism ?? 1;
  const backoffLimit: number = spec.backoffLimit ?? 6;
  if (counts.succeeded >= completions) return { kind: "complete" };
  // A suspended Job starts no pods (its deadline does not run meanwhile either).
  if (spec.suspend === true) return { kind: "wait" };
  if (counts.failed > backoffLimit) return { kind: "fail", reason: "BackoffLimitExceeded", message: "Job has reached the specified backoff limit" };
  const deadline = spec.activeDeadlineSeconds;
  if (deadline !== undefined && startedAt !== undefined && now - startedAt >= deadline * 1000) {
    return { kind: "fail", reason: "DeadlineExceeded", message: "Job was active longer than specified deadline" };
  }
  const wanted = Math.min(parallelism, completions - counts.succeeded) - counts.active;
  return wanted > 0 ? { kind: "create", pods: wanted } : { kind: "wait" };
}

const phaseOf = (pod: KubeObject) => (pod.status as Dict | undefined)?.phase as string | undefined;
const isReady = (pod: KubeObject) => ((pod.status as Dict | undefined)?.conditions ?? []).some((c: Dict) => c.type === "Ready" && c.status === "True");
const isFinished = (job: KubeObject) =>
  ((job.status as Dict | undefined)?.conditions ?? []).some((c: Dict) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");

export class JobController {
  readonly #queue: WorkQueue;
  #unsubscribe?: () => void;

  constructor(
    private readonly store: Store,
    private readonly registry: Registry,
    private readonly recorder: EventRecorder,
  ) {
    this.#queue = new WorkQueue((key) => this.#reconcile(key), "job-controller");
  }

  start(): void {
    this.#unsubscribe = queueOwnersAndTheirPods(this.store, this.#queue, JOBS);
  }

  async #reconcile(key: string): Promise<void> {
    const [namespace, name] = key.split("/") as [string, string];
    const job = this.store.get(JOBS, namespace, name);
    if (!job || job.metadata.deletionTimestamp || isFinished(job)) return;
    const pods = this.store.list(PODS, namespace).filter((pod) => pod.metadata.ownerReferences?.some((ref) => ref.controller && ref.uid === job.metadata.uid));
    const active = pods.filter((pod) => !pod.metadata.deletionTimestamp && !["Succeeded", "Failed"].includes(phaseOf(pod) ?? ""));
    const counts: JobCounts = {
      active: active.length,
      ready: active.filter(isReady).length,
      succeeded: pods.filter((pod) => phaseOf(pod) === "Succeeded").length,
      failed: pods.filter((pod) => phaseOf(pod) === "Failed").length,
    };
    const status = (job.status ?? {}) as Dict;
    const startTime: string = status.startTime ?? timestamp();
    const step = planJob(job.spec as Dict, counts, Date.parse(startTime), Date.now());
    const now = timestamp();
    const condition = (type: string, reason: string, message: string) => ({ type, status: "True", lastProbeTime: now, lastTransitionTime: now, reason, message });
    let conditions: Dict[] | undefined;
    let completionTime: string | undefined;
    if (step.kind === "create") {
      for (let i = 0; i < step.pods; i++) await this.#createPod(job);
      counts.active += step.pods;
      this.recorder.record(JOBS, job, "Normal", "SuccessfulCreate", `Created pod for job ${name}`);
    } else if (step.kind === "complete") {
      conditions = [condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"), condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods")];
      completionTime = now;
      this.recorder.record(JOBS, job, "Normal", "Completed", "Job completed");
    } else if (step.kind === "fail") {
      for (const pod of active) await this.#deletePod(pod);
      counts.active = 0;
      conditions = [condition("FailureTarget", step.reason, step.message), condition("Failed", step.reason, step.message)];
      this.recorder.record(JOBS, job, "Warning", step.reason, step.message);
    }
    await this.registry.writeStatus(
      JOBS,
      namespace,
      name,
      {
        startTime,
        ...(counts.active > 0 && { active: counts.active }),
        ready: counts.ready,
        ...(counts.succeeded > 0 && { succeeded: counts.succeeded }),
        ...(counts.failed > 0 && { failed: counts.failed }),
        ...(completionTime && { completionTime }),
        ...(conditions && { conditions }),
      },
      MANAGER,
    );
  }

  async #createPod(job: KubeObject): Promise<void> {
    const template = (job.spec as Dict).template ?? {};
    const name = job.metadata.name!;
    const uid = job.metadata.uid!;
    await this.registry.create(
      PODS,
      job.metadata.namespace,
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          generateName: `${name}-`,
          labels: {
            ...template.metadata?.labels,
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
          },
          ...(template.metadata?.annotations && { annotations: template.metadata.annotations }),
          ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name, uid, controller: true, blockOwnerDeletion: true }],
        },
        spec: template.spec,
      },
      { fieldManager: MANAGER },
    );
  }

  async #deletePod(pod: KubeObject): Promise<void> {
    try {
      await this.registry.delete(PODS, pod.metadata.namespace, pod.metadata.name!, { preconditions: { uid: pod.metadata.uid } });
    } catch (error) {
      if (!(error instanceof ApiError && (error.code === 404 || error.code === 409))) throw error;
    }
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#queue.close();
  }
}

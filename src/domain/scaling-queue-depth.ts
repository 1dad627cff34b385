// queue_depth: replicas from the requests in the engines (docs/design.md §7.2), with the HPA tolerance band.

/** Float slack so that a ratio of exactly 1 ± tolerance (88 / 80 = 1.1000000000000001) counts as inside. */
const EPSILON = 1e-9;

export interface QueueDepthRecommendation {
  replicas: number;
  reason: "QueueDepth" | "WithinTolerance";
  message: string;
}

/**
 * desired = ⌈Σ(running + waiting) ÷ targetPerReplica⌉.
 *
 * Tolerance band, as Kubernetes' HPA applies it: the usage ratio is the unrounded
 * Σ ÷ (targetPerReplica × current), i.e. the mean load per current replica over the target; when
 * |ratio − 1| ≤ tolerance nothing changes. Rounding is left out of the band on purpose: at one
 * replica, 8.5 requests over a target of 8 is 6% over, not "2 replicas = 100% over".
 * At zero replicas there is no ratio and the formula applies as is.
 */
export function recommendQueueDepth(input: { running: number; waiting: number; current: number; targetPerReplica: number; tolerance: number }): QueueDepthRecommendation {
  const load = input.running + input.waiting;
  const replicas = Math.ceil(load / input.targetPerReplica);
  const perReplica = input.current > 0 ? load / input.current : load;
  const detail = `${load} requests (running ${input.running} + waiting ${input.waiting}) ÷ ${input.targetPerReplica} per replica = ${replicas}`;
  if (input.current > 0) {
    const ratio = load / (input.targetPerReplica * input.current);
    if (Math.abs(ratio - 1) <= input.tolerance + EPSILON) {
      return {
        replicas: input.current,
        reason: "WithinTolerance",
        message: `${detail}; ${round(perReplica)} per replica is within ${input.tolerance * 100}% of the target, keeping ${input.current}`,
      };
    }
  }
  return { replicas, reason: "QueueDepth", message: detail };
}

function round(x: number): number {
  return Number(x.toFixed(2));
}

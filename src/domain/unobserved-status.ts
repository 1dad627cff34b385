// A deployment's status once its cluster's agent has gone silent: what was last observed
// may no longer hold, so `Ready` turns Unknown (Kubernetes does the same to the pods of an
// unreachable node) and the message says since when. Phase, counts and endpoint stay as the
// last observation; the agent's next report replaces all of it.
import type { Condition, DeploymentStatus } from "./deployment-spec.ts";

export const CLUSTER_DISCONNECTED = "ClusterDisconnected";

/** The status with Ready Unknown; undefined when there is nothing to mark (no status, or already marked). */
export function markStatusUnobserved(
  status: DeploymentStatus | null | undefined,
  { clusterName, lastHeartbeatAt, now }: { clusterName: string; lastHeartbeatAt: Date; now: Date },
): DeploymentStatus | undefined {
  if (!status || status.phase === "Pending") return undefined;
  const conditions = status.conditions ?? [];
  const ready = conditions.find((c) => c.type === "Ready");
  if (ready?.status === "Unknown" && ready.reason === CLUSTER_DISCONNECTED) return undefined;
  const message = `cluster ${clusterName} has not reported since ${lastHeartbeatAt.toISOString()}; the rest of this status is its last observation`;
  const unknown: Condition = {
    type: "Ready",
    status: "Unknown",
    reason: CLUSTER_DISCONNECTED,
    message,
    ...(ready?.observedGeneration === undefined ? {} : { observedGeneration: ready.observedGeneration }),
    lastTransitionTime: now.toISOString(),
  };
  return {
    ...status,
    conditions: [...conditions.filter((c) => c.type !== "Ready"), unknown],
    message,
  };
}

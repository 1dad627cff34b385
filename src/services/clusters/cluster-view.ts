// How a stored cluster is shown; its phase is derived from the last heartbeat at read
// time, so no background job is needed to mark a silent cluster Disconnected.
import type { ClusterRow } from "../../../db/queries/clusters.ts";
import type { Cluster, Inventory } from "../../domain/cluster.ts";

export const DISCONNECTED_AFTER_MS = 30_000;

export function toCluster(row: ClusterRow, now: Date): Cluster {
  const last = row.lastHeartbeatAt;
  const phase: "Pending" | "Connected" | "Disconnected" = !last ? "Pending" : now.getTime() - last.getTime() > DISCONNECTED_AFTER_MS ? "Disconnected" : "Connected";
  return {
    id: row.id,
    name: row.name,
    status: { phase, lastHeartbeatAt: last?.toISOString() ?? null, agentVersion: row.agentVersion },
    inventory: (row.inventory as Inventory | null) ?? null,
    resourceVersion: row.resourceVersion,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

// Announces clusters that went silent: a cluster.disconnected event once its agent has
// missed 30 s of heartbeats, and each of its deployments' Ready condition turns Unknown
// (no one observes them any more). Any API instance may sweep; the cluster row lock and the
// last announced state keep the notice to one per silence.
import { listSilentClusters, lockCluster } from "../../../db/queries/clusters.ts";
import { lockClusterDeployments, updateDeployment } from "../../../db/queries/deployments.ts";
import { lastClusterConnectionEvent } from "../../../db/queries/events.ts";
import type { DeploymentStatus } from "../../domain/deployment-spec.ts";
import { markStatusUnobserved } from "../../domain/unobserved-status.ts";
import type { SystemContext } from "../context.ts";
import { DISCONNECTED_AFTER_MS } from "../clusters/cluster-view.ts";
import { recordEvent } from "../events/record-event.ts";

export async function sweepClusters({ ctx }: { ctx: SystemContext }): Promise<number> {
  const now = ctx.clock.now();
  const cutoff = new Date(now.getTime() - DISCONNECTED_AFTER_MS);
  let announced = 0;
  for (const silent of await listSilentClusters(ctx.db, cutoff)) {
    announced += await ctx.db.transaction(async (tx) => {
      const cluster = await lockCluster(tx, silent.id);
      if (!cluster?.lastHeartbeatAt || cluster.lastHeartbeatAt >= cutoff) return 0;
      if ((await lastClusterConnectionEvent(tx, cluster.id))?.type !== "cluster.connected") return 0;
      // Rows before the change log (as status writes take them), so the two never deadlock.
      const deployments = await lockClusterDeployments(tx, cluster.id);
      await recordEvent(tx, now, {
        type: "cluster.disconnected",
        projectId: null,
        data: { clusterId: cluster.id, name: cluster.name, lastHeartbeatAt: cluster.lastHeartbeatAt.toISOString() },
      });
      for (const row of deployments) {
        const status = markStatusUnobserved(row.status as DeploymentStatus | null, {
          clusterName: cluster.name,
          lastHeartbeatAt: cluster.lastHeartbeatAt,
          now,
        });
        if (status) await updateDeployment(tx, row.id, { status }, now);
      }
      return 1;
    });
  }
  return announced;
}

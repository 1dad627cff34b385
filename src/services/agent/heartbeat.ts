// POST /v1/agent/heartbeat: the agent says it is alive and what its cluster holds.
// A cluster coming back after silence (or for the first time) is announced once with
// a cluster.connected event; going silent is announced by sweepClusters.
import { lockCluster, recordHeartbeat } from "../../../db/queries/clusters.ts";
import { lastClusterConnectionEvent } from "../../../db/queries/events.ts";
import type { Cluster, Heartbeat } from "../../domain/cluster.ts";
import { NotFound } from "../../domain/errors.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { DISCONNECTED_AFTER_MS, toCluster } from "../clusters/cluster-view.ts";
import { recordEvent } from "../events/record-event.ts";

export async function receiveHeartbeat({ ctx, input }: { ctx: ServiceContext; input: Heartbeat }): Promise<Cluster> {
  const agent = requireAgent(ctx.principal);
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    const before = await lockCluster(tx, agent.clusterId);
    if (!before) throw new NotFound("This agent's cluster no longer exists.");
    const after = await recordHeartbeat(tx, agent.clusterId, { at: now, agentVersion: input.agentVersion, inventory: input.inventory });
    const wasSilent = !before.lastHeartbeatAt || now.getTime() - before.lastHeartbeatAt.getTime() > DISCONNECTED_AFTER_MS;
    if (wasSilent && (await lastClusterConnectionEvent(tx, agent.clusterId))?.type !== "cluster.connected") {
      await recordEvent(tx, now, {
        type: "cluster.connected",
        projectId: null,
        data: { clusterId: agent.clusterId, name: before.name, agentVersion: input.agentVersion },
      });
    }
    return after!;
  });
  return toCluster(row, now);
}

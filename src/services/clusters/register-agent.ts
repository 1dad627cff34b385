// Exchanges a cluster's one-time join token for a long-lived agent credential (ba_…).
// The token is consumed by the same statement that matches it, so it works once.
import { consumeJoinToken, insertAgentCredential } from "../../../db/queries/clusters.ts";
import { assignUnassignedDeployments } from "../../../db/queries/deployments.ts";
import { Unauthorized } from "../../domain/errors.ts";
import { newId, newToken, sha256Hex } from "../../domain/ids.ts";
import type { SystemContext } from "../context.ts";

export async function registerAgent({ ctx, input }: { ctx: SystemContext; input: { joinToken: string } }) {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (tx) => {
    const cluster = await consumeJoinToken(tx, await sha256Hex(input.joinToken), now);
    if (!cluster) throw new Unauthorized("The join token is unknown, already used or expired; create a new cluster join token.");
    // The first cluster to register takes the deployments that were waiting for one.
    await assignUnassignedDeployments(tx, cluster.id, now);
    const token = newToken("ba");
    await insertAgentCredential(tx, { id: newId("agentCredential"), clusterId: cluster.id, tokenHash: await sha256Hex(token), createdAt: now });
    return { clusterId: cluster.id, token };
  });
}

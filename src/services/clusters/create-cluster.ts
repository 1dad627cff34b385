// Registers a cluster and returns a one-time join token (1 h) for its agent.
import { insertCluster } from "../../../db/queries/clusters.ts";
import { Conflict } from "../../domain/errors.ts";
import { newId, newToken, sha256Hex } from "../../domain/ids.ts";
import { requireInstallationAdmin } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { JOIN_TOKEN_TTL_MS } from "./agent-credentials.ts";
import { toCluster } from "./cluster-view.ts";

export async function createCluster({ ctx, input }: { ctx: ServiceContext; input: { name: string } }) {
  requireInstallationAdmin(ctx.principal);
  const now = ctx.clock.now();
  const joinToken = newToken("bj");
  const row = await insertCluster(ctx.db, {
    id: newId("cluster"),
    name: input.name,
    joinTokenHash: await sha256Hex(joinToken),
    joinTokenExpiresAt: new Date(now.getTime() + JOIN_TOKEN_TTL_MS),
    lastHeartbeatAt: null,
    agentVersion: null,
    inventory: null,
    createdAt: now,
    updatedAt: now,
  });
  if (!row) throw new Conflict(`A cluster named "${input.name}" already exists; choose another name.`);
  return { cluster: toCluster(row, now), joinToken };
}

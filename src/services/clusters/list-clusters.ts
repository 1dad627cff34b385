import { listClusters as selectClusters } from "../../../db/queries/clusters.ts";
import type { Cluster } from "../../domain/cluster.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import { clusterScopeOf, requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toCluster } from "./cluster-view.ts";

export async function listClusters({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { limit: number; cursor?: string };
}): Promise<{ items: Cluster[]; nextCursor: string | null }> {
  const scope = clusterScopeOf(requireUser(ctx.principal));
  const rows = await selectClusters(ctx.db, {
    cursor: decodeCursor(input.cursor),
    limit: input.limit + 1,
    ...(!scope.all && { usedByProjectId: scope.usedByProjectId }),
  });
  const now = ctx.clock.now();
  return pageOf(rows, input.limit, (row) => toCluster(row, now));
}

import { findClusterById, findClusterUsedByProject } from "../../../db/queries/clusters.ts";
import { NotFound } from "../../domain/errors.ts";
import { clusterScopeOf, requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toCluster } from "./cluster-view.ts";

export async function getCluster({ ctx, input }: { ctx: ServiceContext; input: { id: string } }) {
  const scope = clusterScopeOf(requireUser(ctx.principal));
  // A cluster the caller may not see answers as one that does not exist (404, not 403).
  const row = scope.all ? await findClusterById(ctx.db, input.id) : await findClusterUsedByProject(ctx.db, input.id, scope.usedByProjectId);
  if (!row) throw new NotFound(`No cluster with id "${input.id}" that this key may see.`);
  return toCluster(row, ctx.clock.now());
}

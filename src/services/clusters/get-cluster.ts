import { findClusterById } from "../../../db/queries/clusters.ts";
import { NotFound } from "../../domain/errors.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toCluster } from "./cluster-view.ts";

export async function getCluster({ ctx, input }: { ctx: ServiceContext; input: { id: string } }) {
  requireUser(ctx.principal);
  const row = await findClusterById(ctx.db, input.id);
  if (!row) throw new NotFound(`No cluster with id "${input.id}".`);
  return toCluster(row, ctx.clock.now());
}

import { countProjectDeployments, deleteProject as removeProject, lockProject } from "../../../db/queries/projects.ts";
import { Conflict } from "../../domain/errors.ts";
import { requireInstallationAdmin } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleProject } from "./find-visible-project.ts";

/** A project with deployments is kept: deleting it would orphan running workloads. */
export async function deleteProject({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<void> {
  requireInstallationAdmin(ctx.principal);
  await findVisibleProject(ctx, input.id);
  await ctx.db.transaction(async (tx) => {
    // Deployment creates lock the project row too, so none can slip in between count and delete.
    await lockProject(tx, input.id);
    const remaining = await countProjectDeployments(tx, input.id);
    if (remaining > 0) {
      throw new Conflict(`Project "${input.id}" still has ${remaining} deployment(s); delete them first.`);
    }
    await removeProject(tx, input.id);
  });
}

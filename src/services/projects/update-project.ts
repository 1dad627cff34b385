import type { z } from "zod";
import { updateProject as writeProject } from "../../../db/queries/projects.ts";
import { requireInstallationAdmin } from "../../domain/principal.ts";
import type { Project, ProjectPatch } from "../../domain/resources.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleProject } from "./find-visible-project.ts";
import { toProject } from "./project-view.ts";

/** Only the quota changes after creation; the name is the namespace and stays. */
export async function updateProject({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { id: string; patch: z.infer<typeof ProjectPatch> };
}): Promise<Project> {
  requireInstallationAdmin(ctx.principal);
  const current = await findVisibleProject(ctx, input.id);
  if (input.patch.maxGpus === undefined) return toProject(current);
  const row = await writeProject(ctx.db, input.id, { maxGpus: input.patch.maxGpus }, ctx.clock.now());
  return toProject(row ?? current);
}

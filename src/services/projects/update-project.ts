import type { z } from "zod";
import { updateProject as writeProject } from "../../../db/queries/projects.ts";
import { requireInstallationAdmin } from "../../domain/principal.ts";
import type { Project, ProjectPatch } from "../../domain/resources.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleProject } from "./find-visible-project.ts";
import { toProject } from "./project-view.ts";

/** Only the quota and allowCustomCommands change after creation; the name is the namespace and stays. */
export async function updateProject({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { id: string; patch: z.infer<typeof ProjectPatch> };
}): Promise<Project> {
  requireInstallationAdmin(ctx.principal);
  const current = await findVisibleProject(ctx, input.id);
  const { maxGpus, allowCustomCommands } = input.patch;
  if (maxGpus === undefined && allowCustomCommands === undefined) return toProject(current);
  const changes = { ...(maxGpus !== undefined && { maxGpus }), ...(allowCustomCommands !== undefined && { allowCustomCommands }) };
  const row = await writeProject(ctx.db, input.id, changes, ctx.clock.now());
  return toProject(row ?? current);
}

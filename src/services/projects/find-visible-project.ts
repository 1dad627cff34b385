// Loads a project the caller may see; a project-bound key sees only its own, and
// anything else is reported as not found so ids of other tenants leak nothing.
import { findProjectById, type ProjectRow } from "../../../db/queries/projects.ts";
import { NotFound } from "../../domain/errors.ts";
import { canSeeProject, requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";

export async function findVisibleProject(ctx: ServiceContext, id: string): Promise<ProjectRow> {
  const user = requireUser(ctx.principal);
  const row = canSeeProject(user, id) ? await findProjectById(ctx.db, id) : undefined;
  if (!row) throw new NotFound(`No project with id "${id}".`);
  return row;
}

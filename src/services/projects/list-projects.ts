import { listProjects as selectProjects } from "../../../db/queries/projects.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import { requireUser } from "../../domain/principal.ts";
import type { Project } from "../../domain/resources.ts";
import type { ServiceContext } from "../context.ts";
import { toProject } from "./project-view.ts";

export async function listProjects({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { limit: number; cursor?: string };
}): Promise<{ items: Project[]; nextCursor: string | null }> {
  const user = requireUser(ctx.principal);
  const rows = await selectProjects(ctx.db, {
    cursor: decodeCursor(input.cursor),
    limit: input.limit + 1,
    onlyId: user.projectId ?? undefined,
  });
  return pageOf(rows, input.limit, toProject);
}

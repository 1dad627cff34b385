import type { z } from "zod";
import { insertProject } from "../../../db/queries/projects.ts";
import { Conflict, InvalidSpec } from "../../domain/errors.ts";
import { newId } from "../../domain/ids.ts";
import { requireInstallationAdmin } from "../../domain/principal.ts";
import { reservedProjectName } from "../../domain/project-names.ts";
import type { Project, ProjectCreate } from "../../domain/resources.ts";
import type { ServiceContext } from "../context.ts";
import { toProject } from "./project-view.ts";

export async function createProject({ ctx, input }: { ctx: ServiceContext; input: z.infer<typeof ProjectCreate> }): Promise<Project> {
  requireInstallationAdmin(ctx.principal);
  const reserved = reservedProjectName(input.name);
  if (reserved) {
    throw new InvalidSpec(`The project name "${input.name}" is reserved.`, [
      { pointer: "/name", message: `"${input.name}" is reserved: ${reserved.reason}; choose another name, such as "${reserved.suggestion}"` },
    ]);
  }
  const now = ctx.clock.now();
  const row = await insertProject(ctx.db, {
    id: newId("project"),
    name: input.name,
    maxGpus: input.maxGpus ?? null,
    allowCustomCommands: input.allowCustomCommands ?? false,
    createdAt: now,
    updatedAt: now,
  });
  if (!row) throw new Conflict(`A project named "${input.name}" already exists; choose another name.`);
  return toProject(row);
}

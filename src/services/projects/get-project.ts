import type { Project } from "../../domain/resources.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleProject } from "./find-visible-project.ts";
import { toProject } from "./project-view.ts";

export async function getProject({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<Project> {
  return toProject(await findVisibleProject(ctx, input.id));
}

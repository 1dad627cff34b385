// Which project a create writes into: a project-bound key implies its own (naming another is
// 403), an installation-wide key must name one (400), and it must exist (422). Shared by every
// resource created inside a project, so the rule and its wording stay one.
import { findProjectById } from "../../../db/queries/projects.ts";
import { Forbidden, InvalidRequest, InvalidSpec } from "../../domain/errors.ts";
import type { UserPrincipal } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";

/** `what` names the resource in messages: "deployment", "request". */
export async function resolveTargetProject(
  ctx: ServiceContext,
  user: UserPrincipal,
  requested: string | undefined,
  what: string,
): Promise<string> {
  if (user.projectId !== null && requested !== undefined && requested !== user.projectId) {
    throw new Forbidden(`This key is bound to project "${user.projectId}"; omit projectId or use a key of that project.`);
  }
  const projectId = user.projectId ?? requested;
  if (!projectId) {
    throw new InvalidRequest(`An installation-wide key must say which project the ${what} belongs to.`, [
      { pointer: "/projectId", message: "required with an installation-wide key; list projects with GET /v1/projects" },
    ]);
  }
  if (!(await findProjectById(ctx.db, projectId))) {
    throw new InvalidSpec(`The ${what} names a project that does not exist.`, [
      { pointer: "/projectId", message: `no project with id "${projectId}"; list projects with GET /v1/projects` },
    ]);
  }
  return projectId;
}

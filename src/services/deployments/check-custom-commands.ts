// Enforces docs/decisions/0064: a role's `command` (the take-over tier) needs an installation
// admin key or a project with allowCustomCommands. Runs inside the write's transaction, after
// admission (422) and before quota, so a refused write changes nothing.
import type { Db } from "../../../db/client.ts";
import { findProjectById } from "../../../db/queries/projects.ts";
import { customCommandViolations } from "../../domain/custom-commands.ts";
import type { DeploymentSpec } from "../../domain/deployment-spec.ts";
import { ForbiddenFields } from "../../domain/errors.ts";
import type { Principal } from "../../domain/principal.ts";

export async function checkCustomCommands(
  tx: Db,
  principal: Principal,
  projectId: string,
  spec: DeploymentSpec,
  previous?: DeploymentSpec,
): Promise<void> {
  // An agent credential may change replicas only (write-deployment.ts checks that), never a command.
  if (principal.kind !== "user") return;
  if (!spec.roles.some((role) => (role.command ?? []).length > 0)) return;
  const project = await findProjectById(tx, projectId);
  const writer = { installationAdmin: principal.role === "admin" && principal.projectId === null, projectAllows: project?.allowCustomCommands === true };
  const errors = customCommandViolations(writer, spec, previous);
  if (errors.length === 0) return;
  throw new ForbiddenFields(
    `The take-over tier (a role's command) is allowed only for installation admins or projects with allowCustomCommands; ` +
      `project "${project?.name ?? projectId}" does not allow it. Remove command, or ask an installation admin to set allowCustomCommands.`,
    errors,
  );
}

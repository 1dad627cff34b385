// Who may use the take-over tier (a role's `command`, docs/design.md §3.1): an installation-wide
// admin key, or anyone who may write in a project an admin marked `allowCustomCommands`.
// Pure: the service passes the caller, the project's flag and both specs.
// A command the stored spec already runs, unchanged on the same role, is kept: turning the flag off
// stops new take-over code, it does not freeze the deployments an admin once admitted (scaling,
// image or env changes, and removing the command stay open to their editors).
import type { DeploymentSpec } from "./deployment-spec.ts";
import type { FieldError } from "./errors.ts";

export interface CommandWriter {
  /** An installation-wide admin key (role admin, bound to no project). */
  installationAdmin: boolean;
  /** The project's `allowCustomCommands`. */
  projectAllows: boolean;
}

type Roles = Pick<DeploymentSpec, "roles">;

const sameCommand = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((arg, i) => arg === b[i]);

/** The roles whose command this write sets or changes and the writer may not; empty when the write may go. */
export function customCommandViolations(writer: CommandWriter, next: Roles, previous?: Roles): FieldError[] {
  if (writer.installationAdmin || writer.projectAllows) return [];
  const errors: FieldError[] = [];
  next.roles.forEach((role, i) => {
    const command = role.command ?? [];
    if (command.length === 0) return;
    const before = previous?.roles.find((r) => r.name === role.name)?.command ?? [];
    if (before.length > 0 && sameCommand(before, command)) return;
    errors.push({
      pointer: `/spec/roles/${i}/command`,
      message:
        "the take-over tier (command) is allowed only for installation admins or in projects with allowCustomCommands; " +
        "remove command and let berth render the engine, or ask an installation admin to set allowCustomCommands on the project (PATCH /v1/projects/{id})",
    });
  });
  return errors;
}

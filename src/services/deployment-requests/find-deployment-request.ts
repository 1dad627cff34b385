// Addressing a request: by id. A project-bound key sees its project's requests only; anything
// else is "not found". Reading takes a viewer key, creating, applying and deleting an editor key.
import { findDeploymentRequest, type DeploymentRequestRow } from "../../../db/queries/deployment-requests.ts";
import { NotFound } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import { requireUser, type KeyRole } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";

export async function findVisibleDeploymentRequest(ctx: ServiceContext, id: string, role: KeyRole = "viewer"): Promise<DeploymentRequestRow> {
  const user = requireUser(ctx.principal, role);
  const row = isId("request", id) ? await findDeploymentRequest(ctx.db, id) : undefined;
  if (!row || (user.projectId !== null && row.projectId !== user.projectId)) throw new NotFound(`No deployment request "${id}".`);
  return row;
}

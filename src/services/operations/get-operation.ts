// GET /v1/operations/{id}: a project-bound key sees its project's operations only; others are "not found".
import { findOperation } from "../../../db/queries/operations.ts";
import { NotFound } from "../../domain/errors.ts";
import { isId } from "../../domain/ids.ts";
import type { Operation } from "../../domain/operations.ts";
import { canSeeProject, requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toOperation } from "./operation-view.ts";

export async function getOperation({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<Operation> {
  const user = requireUser(ctx.principal);
  const row = isId("operation", input.id) ? await findOperation(ctx.db, input.id) : undefined;
  if (!row || !canSeeProject(user, row.projectId)) throw new NotFound(`No operation "${input.id}".`);
  return toOperation(row);
}

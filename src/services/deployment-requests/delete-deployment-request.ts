// Deleting a request removes the plan only: the deployment it created stays, an ordinary
// deployment (its label still names the request it came from).
import { deleteDeploymentRequest as deleteRow } from "../../../db/queries/deployment-requests.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleDeploymentRequest } from "./find-deployment-request.ts";

export async function deleteDeploymentRequest({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<void> {
  const row = await findVisibleDeploymentRequest(ctx, input.id, "editor");
  await deleteRow(ctx.db, row.id);
}

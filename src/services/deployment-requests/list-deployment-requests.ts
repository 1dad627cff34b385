// Lists the requests a key can see, oldest first: a project-bound key its project's, an
// installation key every project's (or one's with ?projectId=).
import { listDeploymentRequests as listRows } from "../../../db/queries/deployment-requests.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import type { DeploymentRequestResource } from "../../domain/deployment-request.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toDeploymentRequest } from "./deployment-request-view.ts";

export async function listDeploymentRequests({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { limit: number; cursor?: string; projectId?: string };
}): Promise<{ items: DeploymentRequestResource[]; nextCursor: string | null }> {
  const user = requireUser(ctx.principal);
  if (user.projectId !== null && input.projectId !== undefined && input.projectId !== user.projectId) {
    return { items: [], nextCursor: null };
  }
  const rows = await listRows(ctx.db, { cursor: decodeCursor(input.cursor), limit: input.limit + 1, projectId: user.projectId ?? input.projectId });
  return pageOf(rows, input.limit, toDeploymentRequest);
}

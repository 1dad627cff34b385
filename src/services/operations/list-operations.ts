// GET /v1/operations: oldest first, keyset-paged, filtered by deployment, kind and phase.
// A project-bound key lists its project's operations; an installation key all, or ?projectId=.
import { listOperations as selectOperations } from "../../../db/queries/operations.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import type { Operation } from "../../domain/operations.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toOperation } from "./operation-view.ts";

export interface ListOperationsInput {
  limit: number;
  cursor?: string;
  deploymentId?: string;
  kind?: string;
  phase?: string[];
  projectId?: string;
}

export async function listOperations({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: ListOperationsInput;
}): Promise<{ items: Operation[]; nextCursor: string | null }> {
  const user = requireUser(ctx.principal);
  if (user.projectId !== null && input.projectId !== undefined && input.projectId !== user.projectId) {
    return { items: [], nextCursor: null };
  }
  const rows = await selectOperations(ctx.db, {
    projectId: user.projectId ?? input.projectId,
    deploymentId: input.deploymentId,
    kind: input.kind,
    phases: input.phase,
    cursor: decodeCursor(input.cursor),
    limit: input.limit + 1,
  });
  return pageOf(rows, input.limit, toOperation);
}

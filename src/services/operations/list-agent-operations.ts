// GET /v1/agent/operations: the operations of the agent's cluster's deployments — with
// ?phase=Pending&phase=Running, what a restarted agent resumes. Oldest first, paged.
import { listOperations } from "../../../db/queries/operations.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import type { Operation } from "../../domain/operations.ts";
import { requireAgent } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { toOperation } from "./operation-view.ts";

export async function listAgentOperations({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { limit: number; cursor?: string; deploymentId?: string; kind?: string; phase?: string[] };
}): Promise<{ items: Operation[]; nextCursor: string | null }> {
  const agent = requireAgent(ctx.principal);
  const rows = await listOperations(ctx.db, {
    clusterId: agent.clusterId,
    deploymentId: input.deploymentId,
    kind: input.kind,
    phases: input.phase,
    cursor: decodeCursor(input.cursor),
    limit: input.limit + 1,
  });
  return pageOf(rows, input.limit, toOperation);
}

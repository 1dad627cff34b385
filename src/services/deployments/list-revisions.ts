// GET /v1/deployments/{id}/revisions: the retained specs of the deployment's generations,
// newest first, paged by an opaque cursor over the generation (stable: new revisions only
// ever appear before the first page; pruned ones drop off the end).
import { listRevisions, type RevisionRow } from "../../../db/queries/revisions.ts";
import type { DeploymentSpec } from "../../domain/deployment-spec.ts";
import type { Actor } from "../../domain/events.ts";
import type { Revision } from "../../domain/revisions.ts";
import { decodeSeqCursor, encodeSeqCursor } from "../../domain/seq-cursor.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleDeployment, type DeploymentAddress } from "./find-deployment.ts";

const CURSOR_TAG = "generation";

export async function listDeploymentRevisions({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { address: DeploymentAddress; limit: number; cursor?: string };
}): Promise<{ items: Revision[]; nextCursor: string | null }> {
  const beforeGeneration = decodeSeqCursor(input.cursor, CURSOR_TAG);
  const deployment = await findVisibleDeployment(ctx, input.address);
  const rows = await listRevisions(ctx.db, { deploymentId: deployment.id, beforeGeneration, limit: input.limit + 1 });
  const page = rows.slice(0, input.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(toRevision),
    nextCursor: rows.length > input.limit && last ? encodeSeqCursor(last.generation, CURSOR_TAG) : null,
  };
}

export function toRevision(row: RevisionRow): Revision {
  return {
    generation: row.generation,
    spec: row.spec as DeploymentSpec,
    actor: row.actor as Actor,
    createdAt: row.createdAt.toISOString(),
    ...(row.rollbackOf !== null && { rollbackOf: row.rollbackOf }),
  };
}

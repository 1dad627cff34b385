// GET /v1/deployments/{id}/scaling-events: the deployment's deployment.scaled events — changes
// the autoscaler made (mode active) and recommendations it only reported (mode shadow) —
// newest first, paged by an opaque cursor over the event sequence (stable: new events only
// ever appear before the first page).
import { listDeploymentEventsNewestFirst } from "../../../db/queries/events.ts";
import type { Event } from "../../domain/events.ts";
import { decodeSeqCursor, encodeSeqCursor } from "../../domain/seq-cursor.ts";
import type { ServiceContext } from "../context.ts";
import { toEvent } from "../events/list-events.ts";
import { findVisibleDeployment, type DeploymentAddress } from "./find-deployment.ts";

export async function listScalingEvents({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { address: DeploymentAddress; limit: number; cursor?: string };
}): Promise<{ items: Event[]; nextCursor: string | null }> {
  const beforeSeq = decodeSeqCursor(input.cursor);
  const deployment = await findVisibleDeployment(ctx, input.address);
  const rows = await listDeploymentEventsNewestFirst(ctx.db, {
    deploymentId: deployment.id,
    types: ["deployment.scaled"],
    beforeSeq,
    limit: input.limit + 1,
  });
  const page = rows.slice(0, input.limit);
  const last = page[page.length - 1];
  return { items: page.map(toEvent), nextCursor: rows.length > input.limit && last ? encodeSeqCursor(last.seq) : null };
}

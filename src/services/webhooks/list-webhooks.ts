// Lists the endpoints a key can see: a project-bound key its project's, an installation
// key every endpoint (or one project's with ?projectId=).
import { listWebhookEndpoints } from "../../../db/queries/webhooks.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import { requireUser } from "../../domain/principal.ts";
import type { Webhook } from "../../domain/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { toWebhook } from "./webhook-view.ts";

export async function listWebhooks({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { limit: number; cursor?: string; projectId?: string };
}): Promise<{ items: Webhook[]; nextCursor: string | null }> {
  const user = requireUser(ctx.principal);
  const wanted = user.projectId ?? input.projectId;
  if (user.projectId !== null && input.projectId !== undefined && input.projectId !== user.projectId) {
    return { items: [], nextCursor: null };
  }
  const rows = await listWebhookEndpoints(ctx.db, {
    cursor: decodeCursor(input.cursor),
    limit: input.limit + 1,
    projectId: wanted,
  });
  const now = ctx.clock.now();
  return pageOf(rows, input.limit, (row) => toWebhook(row, now));
}

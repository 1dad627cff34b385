// The delivery log of one endpoint, newest first, each delivery with all its attempts.
import { listAttempts, listDeliveries } from "../../../db/queries/webhook-deliveries.ts";
import { decodeCursor, pageOf } from "../../domain/cursor.ts";
import type { DeliveryStatus, WebhookDelivery } from "../../domain/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleWebhook } from "./find-webhook.ts";
import { toDelivery } from "./webhook-view.ts";

export async function listWebhookDeliveries({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { id: string; limit: number; cursor?: string; status?: DeliveryStatus };
}): Promise<{ items: WebhookDelivery[]; nextCursor: string | null }> {
  const endpoint = await findVisibleWebhook(ctx, input.id);
  const rows = await listDeliveries(ctx.db, {
    endpointId: endpoint.id,
    cursor: decodeCursor(input.cursor),
    limit: input.limit + 1,
    status: input.status,
  });
  const page = rows.slice(0, input.limit);
  const attempts = await listAttempts(
    ctx.db,
    page.map((row) => row.id),
  );
  return pageOf(rows, input.limit, (row) => toDelivery(row, attempts.filter((attempt) => attempt.deliveryId === row.id)));
}

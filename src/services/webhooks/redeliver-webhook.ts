// Redelivery: the delivery starts over — pending, due now, at the start of the retry
// schedule — and keeps its log and its webhook-id (receivers deduplicate on it).
import { eventIsKept } from "../../../db/queries/retention.ts";
import { findDelivery, listAttempts, restartDelivery } from "../../../db/queries/webhook-deliveries.ts";
import { Conflict, NotFound } from "../../domain/errors.ts";
import type { WebhookDelivery } from "../../domain/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleWebhook } from "./find-webhook.ts";
import { toDelivery } from "./webhook-view.ts";

export async function redeliverWebhook({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { id: string; deliveryId: string };
}): Promise<WebhookDelivery> {
  const endpoint = await findVisibleWebhook(ctx, input.id, "admin");
  const delivery = await findDelivery(ctx.db, endpoint.id, input.deliveryId);
  if (!delivery) throw new NotFound(`No delivery "${input.deliveryId}" of webhook endpoint "${endpoint.id}".`);
  if (!endpoint.enabled) {
    throw new Conflict(`Webhook endpoint "${endpoint.id}" is disabled; enable it (PATCH {"enabled": true}) before redelivering.`);
  }
  if (!(await eventIsKept(ctx.db, delivery.eventId))) {
    // Retention purged the event (docs/design.md §14.5); a pending delivery without it could never be sent.
    throw new Conflict(
      `Delivery "${delivery.id}" cannot be sent again: its event "${delivery.eventId}" is older than the event log keeps ` +
        `(BERTH_RETENTION_EVENTS_HOURS). Read the resource's current state instead.`,
    );
  }
  const row = await restartDelivery(ctx.db, delivery.id, ctx.clock.now());
  if (!row) throw new NotFound(`No delivery "${input.deliveryId}" of webhook endpoint "${endpoint.id}".`);
  return toDelivery(row, await listAttempts(ctx.db, [row.id]));
}

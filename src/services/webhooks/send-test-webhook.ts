// The test verb: records a webhook.test event and, in the same transaction, a delivery of
// it to this endpoint only (the fan-out never sends webhook.test). The dispatcher sends it
// like any other delivery; the answer is the pending delivery to follow in the log.
import { insertDeliveries, findDelivery } from "../../../db/queries/webhook-deliveries.ts";
import { Conflict } from "../../domain/errors.ts";
import { newId } from "../../domain/ids.ts";
import type { WebhookDelivery } from "../../domain/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { recordEvent } from "../events/record-event.ts";
import { findVisibleWebhook } from "./find-webhook.ts";
import { toDelivery } from "./webhook-view.ts";

export async function sendTestWebhook({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<WebhookDelivery> {
  const endpoint = await findVisibleWebhook(ctx, input.id, "admin");
  if (!endpoint.enabled) {
    throw new Conflict(`Webhook endpoint "${endpoint.id}" is disabled; enable it (PATCH {"enabled": true}) before testing it.`);
  }
  const now = ctx.clock.now();
  const eventId = newId("event");
  const deliveryId = newId("delivery");
  await ctx.db.transaction(async (tx) => {
    await insertDeliveries(tx, [
      {
        id: deliveryId,
        endpointId: endpoint.id,
        eventId,
        eventType: "webhook.test",
        status: "pending",
        nextAttemptAt: now,
        runAttempts: 0,
        createdAt: now,
      },
    ]);
    await recordEvent(tx, now, {
      id: eventId,
      type: "webhook.test",
      projectId: endpoint.projectId,
      data: {
        webhook: { id: endpoint.id, url: endpoint.url, ...(endpoint.projectId ? { projectId: endpoint.projectId } : {}) },
        message: "A test event sent by POST /v1/webhooks/{id}/test.",
      },
    });
  });
  return toDelivery((await findDelivery(ctx.db, endpoint.id, deliveryId))!, []);
}

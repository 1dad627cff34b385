// Deleting an endpoint removes its deliveries and their log with it.
import { deleteWebhookEndpoint } from "../../../db/queries/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleWebhook } from "./find-webhook.ts";

export async function deleteWebhook({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<void> {
  const row = await findVisibleWebhook(ctx, input.id, "admin");
  await deleteWebhookEndpoint(ctx.db, row.id);
}

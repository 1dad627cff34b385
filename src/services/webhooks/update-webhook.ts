// PATCH an endpoint (merge patch): URL (checked again), event filter, description, enabled.
// Re-enabling forgets why it was disabled and its failure record; disabling by hand says
// "user". The check of If-Match and the write happen on the locked row.
import { lockWebhookEndpoint, updateWebhookEndpoint, type WebhookEndpointChanges } from "../../../db/queries/webhooks.ts";
import { NotFound } from "../../domain/errors.ts";
import type { Webhook, WebhookPatch } from "../../domain/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { checkWebhookIfMatch, findVisibleWebhook } from "./find-webhook.ts";
import { admitWebhookUrl } from "./webhook-target.ts";
import { toWebhook } from "./webhook-view.ts";

export async function updateWebhook({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: { id: string; patch: WebhookPatch; ifMatch?: string };
}): Promise<Webhook> {
  const found = await findVisibleWebhook(ctx, input.id, "admin");
  const { patch } = input;
  const url = patch.url === undefined ? undefined : await admitWebhookUrl(ctx, patch.url);
  const now = ctx.clock.now();
  const row = await ctx.db.transaction(async (tx) => {
    const current = await lockWebhookEndpoint(tx, found.id);
    if (!current) throw new NotFound(`No webhook endpoint "${input.id}".`);
    checkWebhookIfMatch(current, input.ifMatch);
    const changes: WebhookEndpointChanges = {};
    if (url !== undefined && url !== current.url) changes.url = url;
    if (patch.eventTypes !== undefined) changes.eventTypes = [...new Set(patch.eventTypes)];
    if (patch.description !== undefined) changes.description = patch.description;
    if (patch.enabled === true && !current.enabled) Object.assign(changes, { enabled: true, disabledReason: null, failingSince: null });
    if (patch.enabled === false && current.enabled) Object.assign(changes, { enabled: false, disabledReason: "user" });
    if (Object.keys(changes).length === 0) return current;
    return updateWebhookEndpoint(tx, current.id, changes, now);
  });
  if (!row) throw new NotFound(`No webhook endpoint "${input.id}".`);
  return toWebhook(row, now);
}

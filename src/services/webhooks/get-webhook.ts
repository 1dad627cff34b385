import type { Webhook } from "../../domain/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { findVisibleWebhook } from "./find-webhook.ts";
import { toWebhook } from "./webhook-view.ts";

export async function getWebhook({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<Webhook> {
  return toWebhook(await findVisibleWebhook(ctx, input.id), ctx.clock.now());
}

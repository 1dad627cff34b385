// Rotates the signing secret: the new one is returned once; the one it replaces keeps
// signing every delivery beside it for 24 h, so a receiver can switch at any moment in
// that window without failing a verification. A second rotation inside the window drops
// the oldest secret.
import { lockWebhookEndpoint, updateWebhookEndpoint } from "../../../db/queries/webhooks.ts";
import { NotFound } from "../../domain/errors.ts";
import { newWebhookSecret, type WebhookWithSecret } from "../../domain/webhooks.ts";
import type { ServiceContext } from "../context.ts";
import { openEndpointSecrets, sealEndpointSecret } from "./endpoint-secrets.ts";
import { findVisibleWebhook } from "./find-webhook.ts";
import { toWebhook } from "./webhook-view.ts";

export async function rotateWebhookSecret({ ctx, input }: { ctx: ServiceContext; input: { id: string } }): Promise<WebhookWithSecret> {
  const found = await findVisibleWebhook(ctx, input.id, "admin");
  const now = ctx.clock.now();
  const secret = newWebhookSecret();
  const secretSealed = await sealEndpointSecret(ctx, found.id, "secret", secret);
  const row = await ctx.db.transaction(async (tx) => {
    const current = await lockWebhookEndpoint(tx, found.id);
    if (!current) return undefined;
    // The replaced secret moves to the previous column, so it is sealed again for that column.
    const replaced = (await openEndpointSecrets(ctx, current)).secret;
    return updateWebhookEndpoint(
      tx,
      current.id,
      {
        secret: null,
        previousSecret: null,
        secretSealed,
        previousSecretSealed: await sealEndpointSecret(ctx, current.id, "previous_secret", replaced),
        previousSecretExpiresAt: new Date(now.getTime() + ctx.config.webhooks.previousSecretTtlMs),
      },
      now,
    );
  });
  if (!row) throw new NotFound(`No webhook endpoint "${input.id}".`);
  return { ...toWebhook(row, now), secret };
}

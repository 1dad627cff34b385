// Parameters shared by the webhook routes.
import { z } from "zod";

export const WebhookParams = z.object({
  id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "whk_…" }),
});

export const DeliveryParams = WebhookParams.extend({
  deliveryId: z.string().max(64).meta({ param: { name: "deliveryId", in: "path" }, description: "dlv_…" }),
});

export const ETagHeader = { ETag: { description: 'The resource version, quoted: "<resourceVersion>"', schema: { type: "string" as const, maxLength: 32, pattern: '^"[0-9]+"$' } } };

export const base = { tags: ["Webhooks"] };

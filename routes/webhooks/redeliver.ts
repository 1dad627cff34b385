import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { WebhookDelivery } from "../../src/domain/webhooks.ts";
import { redeliverWebhook } from "../../src/services/webhooks/redeliver-webhook.ts";
import { DeliveryParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "redeliverWebhook",
  method: "post",
  path: "/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver",
  summary: "Send a delivery again (admin)",
  description: "The delivery starts over at the beginning of the retry schedule, with the same webhook-id; its log is kept.",
  security: bearerSecurity,
  request: { params: DeliveryParams },
  responses: { 202: jsonContent(WebhookDelivery, "The delivery, pending again"), ...problems(...AUTH_PROBLEMS, 404, 409) },
});

export function registerRedeliverWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await redeliverWebhook({ ctx: serviceContext(c), input: c.req.valid("param") }), 202));
}

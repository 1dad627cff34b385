import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { WebhookDelivery } from "../../src/domain/webhooks.ts";
import { sendTestWebhook } from "../../src/services/webhooks/send-test-webhook.ts";
import { WebhookParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "testWebhook",
  method: "post",
  path: "/v1/webhooks/{id}/test",
  summary: "Send a webhook.test event to this endpoint (admin)",
  description: "Answers at once with the pending delivery; follow it in GET /v1/webhooks/{id}/deliveries.",
  security: bearerSecurity,
  request: { params: WebhookParams },
  responses: { 202: jsonContent(WebhookDelivery, "The delivery, pending"), ...problems(...AUTH_PROBLEMS, 404, 409) },
});

export function registerTestWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await sendTestWebhook({ ctx: serviceContext(c), input: c.req.valid("param") }), 202));
}

import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { Webhook } from "../../src/domain/webhooks.ts";
import { getWebhook } from "../../src/services/webhooks/get-webhook.ts";
import { etagOfWebhook } from "../../src/services/webhooks/webhook-view.ts";
import { ETagHeader, WebhookParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "getWebhook",
  method: "get",
  path: "/v1/webhooks/{id}",
  summary: "Get a webhook endpoint",
  description: "Returns one endpoint with its event types and health; the signing secret is never shown again.",
  security: bearerSecurity,
  request: { params: WebhookParams },
  responses: {
    200: { description: "The endpoint", headers: ETagHeader, content: { "application/json": { schema: Webhook } } },
    ...problems(...AUTH_PROBLEMS, 404),
  },
});

export function registerGetWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const webhook = await getWebhook({ ctx: serviceContext(c), input: c.req.valid("param") });
    return c.json(webhook, 200, { ETag: etagOfWebhook(webhook.resourceVersion) });
  });
}

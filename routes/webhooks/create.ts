import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonBody, problems } from "../../src/api/route-kit.ts";
import { WebhookCreate, WebhookWithSecret } from "../../src/domain/webhooks.ts";
import { createWebhook } from "../../src/services/webhooks/create-webhook.ts";
import { etagOfWebhook } from "../../src/services/webhooks/webhook-view.ts";
import { ETagHeader, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "createWebhook",
  method: "post",
  path: "/v1/webhooks",
  summary: "Create a webhook endpoint (admin); the signing secret is in this answer only",
  description:
    "Deliveries are signed per Standard Webhooks. Creating an endpoint sends nothing; it receives events " +
    "committed after it exists. Use POST /v1/webhooks/{id}/test to send a webhook.test event.",
  security: bearerSecurity,
  request: { body: jsonBody(WebhookCreate, "The endpoint") },
  responses: {
    201: {
      description: "Created",
      headers: { ...ETagHeader, Location: { description: "URL of the new endpoint", schema: { type: "string", format: "uri-reference", maxLength: 2048 } } },
      content: { "application/json": { schema: WebhookWithSecret } },
    },
    ...problems(...BODY_PROBLEMS),
  },
});

export function registerCreateWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const webhook = await createWebhook({ ctx: serviceContext(c), input: c.req.valid("json") });
    return c.json(webhook, 201, { Location: `/v1/webhooks/${webhook.id}`, ETag: etagOfWebhook(webhook.resourceVersion) });
  });
}

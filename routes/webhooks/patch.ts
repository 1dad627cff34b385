import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { BODY_PROBLEMS, bearerSecurity, mergePatchBody, problems } from "../../src/api/route-kit.ts";
import { Webhook, WebhookPatch } from "../../src/domain/webhooks.ts";
import { updateWebhook } from "../../src/services/webhooks/update-webhook.ts";
import { etagOfWebhook } from "../../src/services/webhooks/webhook-view.ts";
import { IfMatchHeaders } from "../deployments/shared.ts";
import { ETagHeader, WebhookParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "updateWebhook",
  method: "patch",
  path: "/v1/webhooks/{id}",
  summary: "Change a webhook endpoint (admin): URL, event types, description, enabled",
  description: "A JSON merge patch of the URL, event types, description and enabled flag; re-enabling an endpoint resumes its pending deliveries.",
  security: bearerSecurity,
  request: { params: WebhookParams, headers: IfMatchHeaders, body: mergePatchBody(WebhookPatch, "Merge patch") },
  responses: {
    200: { description: "The endpoint", headers: ETagHeader, content: { "application/json": { schema: Webhook } } },
    ...problems(...BODY_PROBLEMS, 404, 412),
  },
});

export function registerPatchWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const webhook = await updateWebhook({
      ctx: serviceContext(c),
      input: { id: c.req.valid("param").id, patch: c.req.valid("json"), ifMatch: c.req.valid("header")["if-match"] },
    });
    return c.json(webhook, 200, { ETag: etagOfWebhook(webhook.resourceVersion) });
  });
}

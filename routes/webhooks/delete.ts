import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { deleteWebhook } from "../../src/services/webhooks/delete-webhook.ts";
import { WebhookParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "deleteWebhook",
  method: "delete",
  path: "/v1/webhooks/{id}",
  summary: "Delete a webhook endpoint and its delivery log (admin)",
  description: "Deletes the endpoint and its delivery log.",
  security: bearerSecurity,
  request: { params: WebhookParams },
  responses: { 204: { description: "Deleted" }, ...problems(...AUTH_PROBLEMS, 404) },
});

export function registerDeleteWebhook(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    await deleteWebhook({ ctx: serviceContext(c), input: c.req.valid("param") });
    return c.body(null, 204);
  });
}

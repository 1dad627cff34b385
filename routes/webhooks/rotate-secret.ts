import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { WebhookWithSecret } from "../../src/domain/webhooks.ts";
import { rotateWebhookSecret } from "../../src/services/webhooks/rotate-webhook-secret.ts";
import { WebhookParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "rotateWebhookSecret",
  method: "post",
  path: "/v1/webhooks/{id}/rotate-secret",
  summary: "Replace the signing secret (admin); the new one is in this answer only",
  description:
    "For 24 h every delivery carries two signatures, `v1,<new> v1,<old>`, so receivers verify with either secret " +
    "while they switch (previousSecretExpiresAt says until when).",
  security: bearerSecurity,
  request: { params: WebhookParams },
  responses: { 200: jsonContent(WebhookWithSecret, "The endpoint with its new secret"), ...problems(...AUTH_PROBLEMS, 404) },
});

export function registerRotateWebhookSecret(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await rotateWebhookSecret({ ctx: serviceContext(c), input: c.req.valid("param") }), 200));
}

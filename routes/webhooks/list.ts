import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { Webhook } from "../../src/domain/webhooks.ts";
import { listWebhooks } from "../../src/services/webhooks/list-webhooks.ts";
import { base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "listWebhooks",
  method: "get",
  path: "/v1/webhooks",
  summary: "List webhook endpoints",
  description: "Oldest first. A project-bound key sees its project's endpoints; an installation key sees all.",
  security: bearerSecurity,
  request: {
    query: ListQuery.extend({
      projectId: z.string().max(64).optional().describe("With an installation-wide key, only this project's endpoints"),
    }),
  },
  responses: { 200: jsonContent(listOf(Webhook, "WebhookList"), "A page of endpoints"), ...problems(...AUTH_PROBLEMS) },
});

export function registerListWebhooks(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await listWebhooks({ ctx: serviceContext(c), input: c.req.valid("query") }), 200));
}

import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { DELIVERY_STATUSES, WebhookDelivery } from "../../src/domain/webhooks.ts";
import { listWebhookDeliveries } from "../../src/services/webhooks/list-webhook-deliveries.ts";
import { WebhookParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "listWebhookDeliveries",
  method: "get",
  path: "/v1/webhooks/{id}/deliveries",
  summary: "The delivery log of an endpoint",
  description: "Newest first; each delivery with every attempt (status code, latency, the first KiB of the answer, or the error).",
  security: bearerSecurity,
  request: {
    params: WebhookParams,
    query: ListQuery.extend({ status: z.enum(DELIVERY_STATUSES).optional().describe("Only deliveries in this state") }),
  },
  responses: {
    200: jsonContent(listOf(WebhookDelivery, "WebhookDeliveryList"), "A page of deliveries"),
    ...problems(...AUTH_PROBLEMS, 404),
  },
});

export function registerListWebhookDeliveries(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const page = await listWebhookDeliveries({ ctx: serviceContext(c), input: { ...c.req.valid("query"), ...c.req.valid("param") } });
    return c.json(page, 200);
  });
}

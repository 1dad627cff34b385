// POST /v1/internal/dispatch: one webhook dispatcher pass, for a serverless cron.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { DispatchResult } from "../../src/domain/webhooks.ts";
import { triggerDispatch } from "../../src/services/webhooks/trigger-dispatch.ts";

const DispatchAnswer = DispatchResult.extend({
  more: z.boolean().describe("A batch was full: more work is probably waiting, so call again"),
}).meta({ id: "DispatchAnswer" });

const route = createRoute({
  operationId: "dispatchWebhooks",
  method: "post",
  path: "/v1/internal/dispatch",
  tags: ["Internal"],
  summary: "Run one webhook dispatch pass (installation admin)",
  description:
    "Fans new events out to endpoints and sends the deliveries that are due. For installations without a long-running " +
    "`berth serve` (serverless): call it from a cron. Safe to run beside other dispatchers.",
  security: bearerSecurity,
  request: { query: z.object({ limit: z.coerce.number().int().min(1).max(500).meta({ format: "int32" }).optional().describe("Most deliveries to send") }) },
  responses: { 200: jsonContent(DispatchAnswer, "What the pass did"), ...problems(...AUTH_PROBLEMS) },
});

export function registerDispatchRoute(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await triggerDispatch({ ctx: serviceContext(c), input: c.req.valid("query") }), 200));
}

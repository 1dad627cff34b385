import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { Operation } from "../../src/domain/operations.ts";
import { listOf } from "../../src/domain/resources.ts";
import { listOperations } from "../../src/services/operations/list-operations.ts";
import { OperationFilterQuery, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "listOperations",
  method: "get",
  path: "/v1/operations",
  summary: "List operations",
  description: "Oldest first, paged by an opaque cursor. A project-bound key sees its project's operations; an installation key sees all.",
  security: bearerSecurity,
  request: {
    query: OperationFilterQuery.extend({
      projectId: z.string().max(64).optional().describe("With an installation-wide key, only this project's operations"),
    }),
  },
  responses: { 200: jsonContent(listOf(Operation, "OperationList"), "A page of operations"), ...problems(...AUTH_PROBLEMS) },
});

export function registerListOperations(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await listOperations({ ctx: serviceContext(c), input: c.req.valid("query") }), 200));
}

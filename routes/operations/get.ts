import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { Operation } from "../../src/domain/operations.ts";
import { getOperation } from "../../src/services/operations/get-operation.ts";
import { etagOfOperation } from "../../src/services/operations/operation-view.ts";
import { ETagHeader, OperationParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "getOperation",
  method: "get",
  path: "/v1/operations/{id}",
  summary: "Get an operation (resize, retire, restart) with its phase, step and progress",
  description: "Returns one operation with its phase, its step history and its progress; poll it, or follow operation.* events.",
  security: bearerSecurity,
  request: { params: OperationParams },
  responses: {
    200: { description: "The operation", headers: ETagHeader, content: { "application/json": { schema: Operation } } },
    ...problems(...AUTH_PROBLEMS, 404),
  },
});

export function registerGetOperation(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const operation = await getOperation({ ctx: serviceContext(c), input: c.req.valid("param") });
    return c.json(operation, 200, { ETag: etagOfOperation(operation.resourceVersion) });
  });
}

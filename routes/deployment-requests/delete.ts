import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { deleteDeploymentRequest } from "../../src/services/deployment-requests/delete-deployment-request.ts";
import { RequestParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "deleteDeploymentRequest",
  method: "delete",
  path: "/v1/deployment-requests/{id}",
  summary: "Delete a deployment request (its deployment stays)",
  description: "Deletes the request and its plan; a deployment applied from it stays.",
  security: bearerSecurity,
  request: { params: RequestParams },
  responses: { 204: { description: "Deleted" }, ...problems(...AUTH_PROBLEMS, 404) },
});

export function registerDeleteDeploymentRequest(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    await deleteDeploymentRequest({ ctx: serviceContext(c), input: c.req.valid("param") });
    return c.body(null, 204);
  });
}

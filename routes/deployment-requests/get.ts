import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { DeploymentRequestResource } from "../../src/domain/deployment-request.ts";
import { etagOfDeploymentRequest } from "../../src/services/deployment-requests/deployment-request-view.ts";
import { getDeploymentRequest } from "../../src/services/deployment-requests/get-deployment-request.ts";
import { ETagHeader, RequestParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "getDeploymentRequest",
  method: "get",
  path: "/v1/deployment-requests/{id}",
  summary: "Get a deployment request with its plan",
  description: "Returns the request with its plan: the ranked candidates, the rejected shapes and, once applied, the deployment it created.",
  security: bearerSecurity,
  request: { params: RequestParams },
  responses: {
    200: { description: "The request", headers: ETagHeader, content: { "application/json": { schema: DeploymentRequestResource } } },
    ...problems(...AUTH_PROBLEMS, 404),
  },
});

export function registerGetDeploymentRequest(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const request = await getDeploymentRequest({ ctx: serviceContext(c), input: c.req.valid("param") });
    return c.json(request, 200, { ETag: etagOfDeploymentRequest(request.resourceVersion) });
  });
}

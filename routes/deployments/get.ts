import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { Deployment } from "../../src/domain/deployment.ts";
import { etagOf } from "../../src/services/deployments/deployment-view.ts";
import { getDeployment } from "../../src/services/deployments/get-deployment.ts";
import { DeploymentPathParams, ETagHeader, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "getDeployment",
  method: "get",
  path: "/v1/deployments/{idOrName}",
  tags: ["Deployments"],
  summary: "Get a deployment by id or name",
  description: "Returns the deployment's spec, labels and observed status, with its ETag for a later If-Match.",
  security: bearerSecurity,
  request: { params: DeploymentPathParams, query: ProjectScopeQuery },
  responses: {
    200: { description: "The deployment", headers: ETagHeader, content: { "application/json": { schema: Deployment } } },
    ...problems(...AUTH_PROBLEMS, 404, 409),
  },
});

export function registerGetDeployment(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName } = c.req.valid("param");
    const { projectId } = c.req.valid("query");
    const deployment = await getDeployment({ ctx: serviceContext(c), input: { idOrName, projectId } });
    return c.json(deployment, 200, { ETag: etagOf(deployment.resourceVersion) });
  });
}

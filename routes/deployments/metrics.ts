import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { DeploymentMetrics } from "../../src/domain/metrics.ts";
import { getDeploymentMetrics } from "../../src/services/metrics/get-deployment-metrics.ts";
import { DeploymentPathParams, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "getDeploymentMetrics",
  method: "get",
  path: "/v1/deployments/{idOrName}/metrics",
  tags: ["Deployments"],
  summary: "The latest aggregated engine signals per role, as the agent last scraped them",
  description: "404 until the agent has written any. A signal nobody observed has no value and is listed under `missing` with the reason; it is never 0.",
  security: bearerSecurity,
  request: { params: DeploymentPathParams, query: ProjectScopeQuery },
  responses: { 200: jsonContent(DeploymentMetrics, "The latest metrics"), ...problems(...AUTH_PROBLEMS, 404, 409) },
});

export function registerGetDeploymentMetrics(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName } = c.req.valid("param");
    const { projectId } = c.req.valid("query");
    return c.json(await getDeploymentMetrics({ ctx: serviceContext(c), input: { idOrName, projectId } }), 200);
  });
}

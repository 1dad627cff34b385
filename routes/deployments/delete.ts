import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { Deployment } from "../../src/domain/deployment.ts";
import { deleteDeployment } from "../../src/services/deployments/delete-deployment.ts";
import { DeploymentPathParams, IfMatchHeaders, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "deleteDeployment",
  method: "delete",
  path: "/v1/deployments/{idOrName}",
  tags: ["Deployments"],
  summary: "Delete a deployment",
  description: "204 when no agent had taken it (removed now); 202 with the deployment in phase Deleting when an agent must remove its objects first.",
  security: bearerSecurity,
  request: { params: DeploymentPathParams, query: ProjectScopeQuery, headers: IfMatchHeaders },
  responses: {
    202: { description: "Deletion under way", content: { "application/json": { schema: Deployment } } },
    204: { description: "Deleted" },
    ...problems(...AUTH_PROBLEMS, 404, 409, 412),
  },
});

export function registerDeleteDeployment(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName } = c.req.valid("param");
    const { projectId } = c.req.valid("query");
    const outcome = await deleteDeployment({
      ctx: serviceContext(c),
      input: { address: { idOrName, projectId }, ifMatch: c.req.valid("header")["if-match"] },
    });
    if (outcome.removed) return c.body(null, 204);
    return c.json(outcome.deployment, 202);
  });
}

import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { withWarnings } from "../../src/api/warnings.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonBody, problems } from "../../src/api/route-kit.ts";
import { DeploymentWritten, DeploymentReplace } from "../../src/domain/deployment.ts";
import { etagOf } from "../../src/services/deployments/deployment-view.ts";
import { replaceDeployment } from "../../src/services/deployments/replace-deployment.ts";
import { DeploymentPathParams, ETagHeader, IfMatchHeaders, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "replaceDeployment",
  method: "put",
  path: "/v1/deployments/{idOrName}",
  tags: ["Deployments"],
  summary: "Replace a deployment's spec and labels",
  description: "Replaces the whole spec and labels (admission, quota and the custom-command rule apply as on create); If-Match makes it conditional.",
  security: bearerSecurity,
  request: {
    params: DeploymentPathParams,
    query: ProjectScopeQuery,
    headers: IfMatchHeaders,
    body: jsonBody(DeploymentReplace, "The whole new spec and labels"),
  },
  responses: {
    200: { description: "The updated deployment", headers: ETagHeader, content: { "application/json": { schema: DeploymentWritten } } },
    ...problems(...BODY_PROBLEMS, 404, 409, 412),
  },
});

export function registerReplaceDeployment(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName } = c.req.valid("param");
    const { projectId } = c.req.valid("query");
    const { deployment, warnings } = await replaceDeployment({
      ctx: serviceContext(c),
      input: { address: { idOrName, projectId }, ifMatch: c.req.valid("header")["if-match"], body: c.req.valid("json") },
    });
    return c.json(withWarnings(c, deployment, warnings), 200, { ETag: etagOf(deployment.resourceVersion) });
  });
}

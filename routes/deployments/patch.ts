import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { withWarnings } from "../../src/api/warnings.ts";
import { BODY_PROBLEMS, bearerSecurity, mergePatchBody, problems } from "../../src/api/route-kit.ts";
import { DeploymentWritten, DeploymentPatch } from "../../src/domain/deployment.ts";
import { etagOf } from "../../src/services/deployments/deployment-view.ts";
import { patchDeployment } from "../../src/services/deployments/patch-deployment.ts";
import { DeploymentPathParams, ETagHeader, IfMatchHeaders, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "patchDeployment",
  method: "patch",
  path: "/v1/deployments/{idOrName}",
  tags: ["Deployments"],
  summary: "Change a deployment with an RFC 7396 merge patch",
  description:
    "Merges `spec` into the stored (defaulted) spec and `labels` into the labels; arrays replace, null deletes. " +
    "The result is admitted like a new spec; identity fields cannot change.",
  security: bearerSecurity,
  request: {
    params: DeploymentPathParams,
    query: ProjectScopeQuery,
    headers: IfMatchHeaders,
    body: mergePatchBody(DeploymentPatch, "Merge patch"),
  },
  responses: {
    200: { description: "The updated deployment", headers: ETagHeader, content: { "application/json": { schema: DeploymentWritten } } },
    ...problems(...BODY_PROBLEMS, 404, 409, 412),
  },
});

export function registerPatchDeployment(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName } = c.req.valid("param");
    const { projectId } = c.req.valid("query");
    const { deployment, warnings } = await patchDeployment({
      ctx: serviceContext(c),
      input: { address: { idOrName, projectId }, ifMatch: c.req.valid("header")["if-match"], patch: c.req.valid("json") },
    });
    return c.json(withWarnings(c, deployment, warnings), 200, { ETag: etagOf(deployment.resourceVersion) });
  });
}

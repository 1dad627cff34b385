import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonBody, problems } from "../../src/api/route-kit.ts";
import { DeploymentWritten } from "../../src/domain/deployment.ts";
import { withWarnings } from "../../src/api/warnings.ts";
import { RollbackRequest } from "../../src/domain/revisions.ts";
import { etagOf } from "../../src/services/deployments/deployment-view.ts";
import { rollbackDeployment } from "../../src/services/deployments/rollback-deployment.ts";
import { DeploymentPathParams, ETagHeader, IfMatchHeaders, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "rollbackDeployment",
  method: "post",
  path: "/v1/deployments/{idOrName}/rollback",
  tags: ["Deployments"],
  summary: "Restore a retained generation's spec as a new generation",
  description:
    "Writes the revision's spec through the same path as PATCH (If-Match, admission, quota, capacity, deployment.updated) " +
    "and records the new revision with rollbackOf. Replicas stay as they are while scaling.mode is active (the autoscaler " +
    "owns them), and elastic widths always stay (change them with the resize verb). A spec equal to the current one answers 200 " +
    "with the deployment unchanged (no new generation). An unretained generation is a 404 naming the retained range; " +
    "a revision that differs in identity fields is a 422.",
  security: bearerSecurity,
  request: {
    params: DeploymentPathParams,
    query: ProjectScopeQuery,
    headers: IfMatchHeaders.extend({ "idempotency-key": z.string().max(255).optional().describe("Replay-safe POST key") }),
    body: jsonBody(RollbackRequest, "The generation to restore"),
  },
  responses: {
    200: { description: "The deployment after the rollback", headers: ETagHeader, content: { "application/json": { schema: DeploymentWritten } } },
    ...problems(...BODY_PROBLEMS, 404, 409, 412),
  },
});

export function registerRollbackDeployment(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName } = c.req.valid("param");
    const { projectId } = c.req.valid("query");
    const { deployment, warnings } = await rollbackDeployment({
      ctx: serviceContext(c),
      input: { address: { idOrName, projectId }, generation: c.req.valid("json").generation, ifMatch: c.req.valid("header")["if-match"] },
    });
    return c.json(withWarnings(c, deployment, warnings), 200, { ETag: etagOf(deployment.resourceVersion) });
  });
}

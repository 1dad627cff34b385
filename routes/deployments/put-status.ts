import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonBody, problems } from "../../src/api/route-kit.ts";
import { Deployment } from "../../src/domain/deployment.ts";
import { DeploymentStatus } from "../../src/domain/deployment-spec.ts";
import { etagOf } from "../../src/services/deployments/deployment-view.ts";
import { putDeploymentStatus } from "../../src/services/deployments/put-deployment-status.ts";
import { ETagHeader } from "./shared.ts";

const route = createRoute({
  operationId: "putDeploymentStatus",
  method: "put",
  path: "/v1/deployments/{id}/status",
  tags: ["Agent"],
  summary: "Write a deployment's status (agent credential only)",
  description: "Needs no If-Match; bumps resourceVersion, never generation. User keys get 403.",
  security: bearerSecurity,
  request: {
    params: z.object({ id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "Deployment id" }) }),
    body: jsonBody(DeploymentStatus, "The observed status"),
  },
  responses: {
    200: { description: "The deployment with its new status", headers: ETagHeader, content: { "application/json": { schema: Deployment } } },
    ...problems(...BODY_PROBLEMS, 404),
  },
});

export function registerPutDeploymentStatus(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const deployment = await putDeploymentStatus({
      ctx: serviceContext(c),
      input: { id: c.req.valid("param").id, status: c.req.valid("json") },
    });
    return c.json(deployment, 200, { ETag: etagOf(deployment.resourceVersion) });
  });
}

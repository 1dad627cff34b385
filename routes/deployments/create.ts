import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { withWarnings } from "../../src/api/warnings.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonBody, problems } from "../../src/api/route-kit.ts";
import { DeploymentWritten, DeploymentCreate } from "../../src/domain/deployment.ts";
import { createDeployment } from "../../src/services/deployments/create-deployment.ts";
import { etagOf } from "../../src/services/deployments/deployment-view.ts";
import { ETagHeader } from "./shared.ts";

const route = createRoute({
  operationId: "createDeployment",
  method: "post",
  path: "/v1/deployments",
  tags: ["Deployments"],
  summary: "Create a model deployment",
  description: "Admits the spec (filling in defaults) and stores it; the cluster's agent takes it from there.",
  security: bearerSecurity,
  request: {
    headers: z.object({ "idempotency-key": z.string().max(255).optional().describe("Replay-safe POST key") }),
    body: jsonBody(DeploymentCreate, "The deployment to create"),
  },
  responses: {
    201: {
      description: "Created",
      headers: { ...ETagHeader, Location: { description: "URL of the new deployment", schema: { type: "string", format: "uri-reference", maxLength: 2048 } } },
      content: { "application/json": { schema: DeploymentWritten } },
    },
    ...problems(...BODY_PROBLEMS, 409),
  },
});

export function registerCreateDeployment(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { deployment, warnings } = await createDeployment({ ctx: serviceContext(c), input: c.req.valid("json") });
    return c.json(withWarnings(c, deployment, warnings), 201, {
      Location: `/v1/deployments/${deployment.id}`,
      ETag: etagOf(deployment.resourceVersion),
    });
  });
}

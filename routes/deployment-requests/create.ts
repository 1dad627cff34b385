import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonBody, problems } from "../../src/api/route-kit.ts";
import { DeploymentRequestInput } from "../../src/domain/deployment-request.ts";
import { withWarnings } from "../../src/api/warnings.ts";
import { createDeploymentRequest } from "../../src/services/deployment-requests/create-deployment-request.ts";
import { etagOfDeploymentRequest } from "../../src/services/deployment-requests/deployment-request-view.ts";
import { DeploymentRequestApplied, ETagHeader, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "createDeploymentRequest",
  method: "post",
  path: "/v1/deployment-requests",
  summary: "Plan a deployment from a model, a workload and an SLA",
  description:
    "Sizes the model on every engine, GPU type and parallel shape, and answers with the ranked candidates (phase Ready) or the closest shape and its shortfall (phase Failed). With autoApply the first candidate's deployment is created at once (phase Deployed). A model outside the catalogue needs `model.architecture` (422 otherwise).",
  security: bearerSecurity,
  request: {
    headers: z.object({ "idempotency-key": z.string().max(255).optional().describe("Replay-safe POST key") }),
    body: jsonBody(DeploymentRequestInput, "The request"),
  },
  responses: {
    201: {
      description: "Created and planned",
      headers: { ...ETagHeader, Location: { description: "URL of the new request", schema: { type: "string", format: "uri-reference", maxLength: 2048 } } },
      content: { "application/json": { schema: DeploymentRequestApplied } },
    },
    ...problems(...BODY_PROBLEMS, 409),
  },
});

export function registerCreateDeploymentRequest(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { request, warnings } = await createDeploymentRequest({ ctx: serviceContext(c), input: c.req.valid("json") });
    return c.json(withWarnings(c, request, warnings), 201, { Location: `/v1/deployment-requests/${request.id}`, ETag: etagOfDeploymentRequest(request.resourceVersion) });
  });
}

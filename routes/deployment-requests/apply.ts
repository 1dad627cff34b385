import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { ApplyRequest } from "../../src/domain/deployment-request.ts";
import { withWarnings } from "../../src/api/warnings.ts";
import { applyDeploymentRequest } from "../../src/services/deployment-requests/apply-deployment-request.ts";
import { etagOfDeploymentRequest } from "../../src/services/deployment-requests/deployment-request-view.ts";
import { DeploymentRequestApplied, ETagHeader, RequestParams, base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "applyDeploymentRequest",
  method: "post",
  path: "/v1/deployment-requests/{id}/apply",
  summary: "Create the deployment of a candidate (idempotent)",
  description:
    "Creates the chosen candidate's spec (the first by default) as an ordinary, editable deployment labelled `berth.dev/deployment-request: <id>`; the request's status names it. Applying again answers the same request; another candidate then is a 409.",
  security: bearerSecurity,
  request: {
    params: RequestParams,
    body: { required: false, description: "Which candidate; empty means the first", content: { "application/json": { schema: ApplyRequest } } },
  },
  responses: {
    200: { ...jsonContent(DeploymentRequestApplied, "The request, Deployed, with its deploymentId"), headers: ETagHeader },
    ...problems(...BODY_PROBLEMS, 404, 409),
  },
});

export function registerApplyDeploymentRequest(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const body = c.req.valid("json") ?? {};
    const { request, warnings } = await applyDeploymentRequest({ ctx: serviceContext(c), input: { ...c.req.valid("param"), ...body } });
    return c.json(withWarnings(c, request, warnings), 200, { ETag: etagOfDeploymentRequest(request.resourceVersion) });
  });
}

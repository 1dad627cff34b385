import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { BODY_PROBLEMS, bearerSecurity, jsonBody, problems } from "../../src/api/route-kit.ts";
import { Operation, ResizeRequest } from "../../src/domain/operations.ts";
import { resizeDeploymentRole } from "../../src/services/deployments/resize-deployment-role.ts";
import { DeploymentPathParams, IfMatchHeaders, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "resizeDeploymentRole",
  method: "post",
  path: "/v1/deployments/{idOrName}/roles/{role}/resize",
  tags: ["Deployments"],
  summary: "Change an elastic role's data-parallel width (grow or shrink)",
  description:
    "Sets spec.roles[role].elastic.width through the same write path as PATCH (admission, quota and capacity at the new width, " +
    "generation, If-Match) and records a Pending resize Operation that the agent carries out; answers 202 with it. " +
    "A resize already Pending or Running is a 409 naming it (existingOperationId); the current width is a 409 (currentWidth); " +
    "a role without `elastic` is a 422.",
  security: bearerSecurity,
  request: {
    params: DeploymentPathParams.extend({
      role: z.string().max(63).meta({ param: { name: "role", in: "path" }, description: "Role name" }),
    }),
    query: ProjectScopeQuery,
    headers: IfMatchHeaders.extend({ "idempotency-key": z.string().max(255).optional().describe("Replay-safe POST key") }),
    body: jsonBody(ResizeRequest, "The new width"),
  },
  responses: {
    202: {
      description: "Accepted: the spec has the new width and the Operation tracks the change",
      headers: { Location: { description: "URL of the operation", schema: { type: "string", format: "uri-reference", maxLength: 2048 } } },
      content: { "application/json": { schema: Operation } },
    },
    ...problems(...BODY_PROBLEMS, 404, 409, 412),
  },
});

export function registerResizeDeploymentRole(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName, role } = c.req.valid("param");
    const { projectId } = c.req.valid("query");
    const operation = await resizeDeploymentRole({
      ctx: serviceContext(c),
      input: { address: { idOrName, projectId }, role, width: c.req.valid("json").width, ifMatch: c.req.valid("header")["if-match"] },
    });
    return c.json(operation, 202, { Location: `/v1/operations/${operation.id}` });
  });
}

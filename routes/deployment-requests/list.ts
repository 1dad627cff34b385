import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { DeploymentRequestResource } from "../../src/domain/deployment-request.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { listDeploymentRequests } from "../../src/services/deployment-requests/list-deployment-requests.ts";
import { base } from "./shared.ts";

const route = createRoute({
  ...base,
  operationId: "listDeploymentRequests",
  method: "get",
  path: "/v1/deployment-requests",
  summary: "List deployment requests",
  description: "Oldest first. A project-bound key sees its project's requests; an installation key sees all.",
  security: bearerSecurity,
  request: {
    query: ListQuery.extend({
      projectId: z.string().max(64).optional().describe("With an installation-wide key, only this project's requests"),
    }),
  },
  responses: { 200: jsonContent(listOf(DeploymentRequestResource, "DeploymentRequestList"), "A page of requests"), ...problems(...AUTH_PROBLEMS) },
});

export function registerListDeploymentRequests(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => c.json(await listDeploymentRequests({ ctx: serviceContext(c), input: c.req.valid("query") }), 200));
}

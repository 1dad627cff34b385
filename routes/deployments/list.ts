import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { Deployment } from "../../src/domain/deployment.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { listDeployments } from "../../src/services/deployments/list-deployments.ts";

const PHASES = ["Pending", "Starting", "Ready", "Degraded", "Deleting", "Failed"] as const;

const route = createRoute({
  operationId: "listDeployments",
  method: "get",
  path: "/v1/deployments",
  tags: ["Deployments"],
  summary: "List deployments",
  description: "Oldest first, paged by an opaque cursor that is stable under concurrent writes.",
  security: bearerSecurity,
  request: {
    query: ListQuery.extend({
      phase: z.enum(PHASES).optional().describe("Only deployments in this phase"),
      label: z
        .union([z.string().max(320), z.array(z.string().max(320)).max(32)])
        .optional()
        .describe("key=value; repeat to require several labels"),
      projectId: z.string().max(64).optional().describe("With an installation-wide key, only this project"),
    }),
  },
  responses: {
    200: jsonContent(listOf(Deployment, "DeploymentList"), "A page of deployments"),
    ...problems(...AUTH_PROBLEMS),
  },
});

export function registerListDeployments(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const query = c.req.valid("query");
    const label = query.label === undefined ? undefined : Array.isArray(query.label) ? query.label : [query.label];
    const page = await listDeployments({ ctx: serviceContext(c), input: { ...query, label } });
    return c.json(page, 200);
  });
}

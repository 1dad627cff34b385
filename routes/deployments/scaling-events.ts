import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { Event } from "../../src/domain/events.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { listScalingEvents } from "../../src/services/deployments/list-scaling-events.ts";
import { DeploymentPathParams, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "listScalingEvents",
  method: "get",
  path: "/v1/deployments/{idOrName}/scaling-events",
  tags: ["Deployments"],
  summary: "The deployment's scaling history, newest first",
  description:
    "Its deployment.scaled events: changes the autoscaler made (data.mode active, actor autoscaler) and recommendations it only " +
    "reported (data.mode shadow), each with role, from, to, reason and signals (DeploymentScaledData). Paged by an opaque cursor.",
  security: bearerSecurity,
  request: { params: DeploymentPathParams, query: ProjectScopeQuery.extend(ListQuery.shape) },
  responses: { 200: jsonContent(listOf(Event, "ScalingEventList"), "A page of deployment.scaled events"), ...problems(...AUTH_PROBLEMS, 404, 409) },
});

export function registerListScalingEvents(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName } = c.req.valid("param");
    const { projectId, limit, cursor } = c.req.valid("query");
    return c.json(await listScalingEvents({ ctx: serviceContext(c), input: { address: { idOrName, projectId }, limit, cursor } }), 200);
  });
}

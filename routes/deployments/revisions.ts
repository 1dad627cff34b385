import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { Revision, REVISIONS_RETAINED } from "../../src/domain/revisions.ts";
import { listDeploymentRevisions } from "../../src/services/deployments/list-revisions.ts";
import { DeploymentPathParams, ProjectScopeQuery } from "./shared.ts";

const route = createRoute({
  operationId: "listDeploymentRevisions",
  method: "get",
  path: "/v1/deployments/{idOrName}/revisions",
  tags: ["Deployments"],
  summary: "The deployment's revision history, newest first",
  description:
    `The spec of each retained generation (the newest ${REVISIONS_RETAINED}), who wrote it (actor) and when; rollbackOf marks a rollback. ` +
    "Paged by an opaque cursor. POST …/rollback { generation } restores one.",
  security: bearerSecurity,
  request: { params: DeploymentPathParams, query: ProjectScopeQuery.extend(ListQuery.shape) },
  responses: { 200: jsonContent(listOf(Revision, "RevisionList"), "A page of revisions"), ...problems(...AUTH_PROBLEMS, 404, 409) },
});

export function registerListDeploymentRevisions(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { idOrName } = c.req.valid("param");
    const { projectId, limit, cursor } = c.req.valid("query");
    return c.json(await listDeploymentRevisions({ ctx: serviceContext(c), input: { address: { idOrName, projectId }, limit, cursor } }), 200);
  });
}

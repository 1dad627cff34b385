// /v1/projects: tenants with an optional GPU quota. Each verb is a short adapter.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, BODY_PROBLEMS, bearerSecurity, jsonBody, jsonContent, mergePatchBody, problems } from "../../src/api/route-kit.ts";
import { ListQuery, Project, ProjectCreate, ProjectPatch, listOf } from "../../src/domain/resources.ts";
import { createProject } from "../../src/services/projects/create-project.ts";
import { deleteProject } from "../../src/services/projects/delete-project.ts";
import { getProject } from "../../src/services/projects/get-project.ts";
import { listProjects } from "../../src/services/projects/list-projects.ts";
import { updateProject } from "../../src/services/projects/update-project.ts";

const IdParams = z.object({ id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "prj_…" }) });
const base = { tags: ["Projects"], security: bearerSecurity };

export function registerProjectRoutes(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    createRoute({
      ...base,
      operationId: "createProject",
      method: "post",
      path: "/v1/projects",
      summary: "Create a project (installation admin)",
      description: "Creates a tenant; its namespace in every cluster is berth-<name>. Only an installation-wide admin key may create projects or set allowCustomCommands.",
      request: { body: jsonBody(ProjectCreate, "The project") },
      responses: {
        201: { description: "Created", content: { "application/json": { schema: Project } } },
        ...problems(...BODY_PROBLEMS, 409),
      },
    }),
    async (c) => {
      const project = await createProject({ ctx: serviceContext(c), input: c.req.valid("json") });
      return c.json(project, 201, { Location: `/v1/projects/${project.id}` });
    },
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "listProjects",
      method: "get",
      path: "/v1/projects",
      summary: "List the projects this key can see",
      description: "Pages through the projects this key can see: all of them for an installation-wide key, its own for a project-bound one.",
      request: { query: ListQuery },
      responses: { 200: jsonContent(listOf(Project, "ProjectList"), "A page of projects"), ...problems(...AUTH_PROBLEMS) },
    }),
    async (c) => c.json(await listProjects({ ctx: serviceContext(c), input: c.req.valid("query") }), 200),
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "getProject",
      method: "get",
      path: "/v1/projects/{id}",
      summary: "Get a project",
      description: "Returns one project by id; a project the key cannot see answers 404, as a missing one does.",
      request: { params: IdParams },
      responses: { 200: jsonContent(Project, "The project"), ...problems(...AUTH_PROBLEMS, 404) },
    }),
    async (c) => c.json(await getProject({ ctx: serviceContext(c), input: c.req.valid("param") }), 200),
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "updateProject",
      method: "patch",
      path: "/v1/projects/{id}",
      summary: "Change a project's GPU quota (installation admin)",
      description: "A JSON merge patch of maxGpus (null removes the quota) and allowCustomCommands. Only an installation-wide admin key may change a project.",
      request: { params: IdParams, body: mergePatchBody(ProjectPatch, "Merge patch") },
      responses: { 200: jsonContent(Project, "The project"), ...problems(...BODY_PROBLEMS, 404) },
    }),
    async (c) => {
      const project = await updateProject({ ctx: serviceContext(c), input: { id: c.req.valid("param").id, patch: c.req.valid("json") } });
      return c.json(project, 200);
    },
  );
  app.openapi(
    createRoute({
      ...base,
      operationId: "deleteProject",
      method: "delete",
      path: "/v1/projects/{id}",
      summary: "Delete a project with no deployments (installation admin)",
      description: "Deletes an empty project; one that still has deployments answers 409 naming how many.",
      request: { params: IdParams },
      responses: { 204: { description: "Deleted" }, ...problems(...AUTH_PROBLEMS, 404, 409) },
    }),
    async (c) => {
      await deleteProject({ ctx: serviceContext(c), input: c.req.valid("param") });
      return c.body(null, 204);
    },
  );
}

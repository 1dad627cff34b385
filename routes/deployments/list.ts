import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { Deployment } from "../../src/domain/deployment.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { listDeployments } from "../../src/services/deployments/list-deployments.ts";
import { pollDeploymentChanges, snapshotForWatch } from "../../src/services/deployments/watch-deployments.ts";
import { resumePoint, streamPolled, type StreamItem } from "../../src/api/sse.ts";
import type { Context } from "hono";

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
      watch: z
        .enum(["true", "false"])
        .optional()
        .describe("true: answer with a text/event-stream of ADDED/MODIFIED/DELETED notices instead of a page"),
      resourceVersion: z.coerce
        .number()
        .int()
        .min(0)
        .max(Number.MAX_SAFE_INTEGER)
        .meta({ format: "int64" })
        .optional()
        .describe("With watch: only changes after this version (else every current deployment first, as ADDED)"),
    }),
  },
  responses: {
    200: {
      description: "A page of deployments, or with watch=true an endless stream of notices whose SSE id is the resourceVersion",
      content: {
        "application/json": { schema: listOf(Deployment, "DeploymentList") },
        "text/event-stream": { schema: z.string() },
      },
    },
    ...problems(...AUTH_PROBLEMS),
  },
});

export function registerListDeployments(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const query = c.req.valid("query");
    if (query.watch === "true") return watch(c, query.projectId, query.resourceVersion) as never;
    const label = query.label === undefined ? undefined : Array.isArray(query.label) ? query.label : [query.label];
    const page = await listDeployments({ ctx: serviceContext(c), input: { ...query, label } });
    return c.json(page, 200);
  });
}

const WATCH_BATCH = 100;

/** Watch: a snapshot (unless resuming), then every change in resourceVersion order. */
async function watch(c: Context<AppEnv>, projectId: string | undefined, resourceVersion: number | undefined) {
  const ctx = serviceContext(c);
  const resumeAt = c.req.header("Last-Event-ID") !== undefined ? resumePoint(c, undefined) : resourceVersion;
  let pending: StreamItem[] = [];
  let after = resumeAt ?? 0;
  if (resumeAt === undefined) {
    const snapshot = await snapshotForWatch({ ctx, input: { projectId } });
    pending = snapshot.notices.map((notice) => ({ id: snapshot.resourceVersion, event: notice.type, data: notice }));
    after = snapshot.resourceVersion;
  }
  return streamPolled(c, {
    after,
    batchSize: WATCH_BATCH,
    poll: async (since) => {
      if (pending.length > 0) {
        const first = pending;
        pending = [];
        return first;
      }
      const notices = await pollDeploymentChanges({ ctx, input: { after: since, limit: WATCH_BATCH, projectId } });
      return notices.map((notice) => ({ id: notice.resourceVersion, event: notice.type, data: notice }));
    },
  });
}

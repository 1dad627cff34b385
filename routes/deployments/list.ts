import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, problems } from "../../src/api/route-kit.ts";
import { Deployment } from "../../src/domain/deployment.ts";
import { ListQuery, listOf } from "../../src/domain/resources.ts";
import { listDeployments } from "../../src/services/deployments/list-deployments.ts";
import {
  assertWatchCursorKept,
  pollDeploymentChanges,
  snapshotPage,
  startWatchSnapshot,
  WATCH_CHANNEL,
  type SnapshotPosition,
} from "../../src/services/deployments/watch-deployments.ts";
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
        .describe(
          "With watch: only changes after this version (else every current deployment first, as ADDED); " +
            "one older than what retention keeps of deletions is answered 410",
        ),
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
    ...problems(...AUTH_PROBLEMS, 410),
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

/** Watch: a snapshot in pages (unless resuming), then every change in resourceVersion order. */
async function watch(c: Context<AppEnv>, projectId: string | undefined, resourceVersion: number | undefined) {
  const ctx = serviceContext(c);
  const resumeAt = c.req.header("Last-Event-ID") !== undefined ? resumePoint(c, undefined) : resourceVersion;
  // Before the stream starts, so a stale resume point is a 410, not a stream that stops.
  if (resumeAt !== undefined) await assertWatchCursorKept({ ctx, resourceVersion: resumeAt });
  let snapshot: SnapshotPosition | undefined = resumeAt === undefined ? await startWatchSnapshot({ ctx }) : undefined;
  const after = resumeAt ?? snapshot!.resourceVersion;
  const changes = async (since: number): Promise<StreamItem[]> =>
    (await pollDeploymentChanges({ ctx, input: { after: since, limit: WATCH_BATCH, projectId } })).map((notice) => ({
      id: notice.resourceVersion,
      event: notice.type,
      data: notice,
    }));
  return streamPolled(c, {
    after,
    batchSize: WATCH_BATCH,
    channel: WATCH_CHANNEL,
    poll: async (since) => {
      if (!snapshot) return changes(since);
      // Each snapshot notice's id is the snapshot's version: resuming with it follows the changes after it.
      const page = await snapshotPage({ ctx, input: { position: snapshot, limit: WATCH_BATCH, projectId } });
      snapshot = page.next;
      if (page.notices.length === 0) return changes(since);
      return page.notices.map((notice) => ({ id: notice.resourceVersion, event: notice.type, data: notice }));
    },
  });
}

// /v1/events: the append-only event log, read after a sequence number.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { EVENT_TYPES, Event } from "../../src/domain/events.ts";
import { listOf } from "../../src/domain/resources.ts";
import { assertEventCursorKept, listEvents } from "../../src/services/events/list-events.ts";
import { resumePoint, streamPolled } from "../../src/api/sse.ts";
import { EVENTS_CHANNEL } from "../../src/services/events/list-events.ts";

const STREAM_BATCH = 100;

const EventsQuery = z.object({
  after: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).meta({ format: "int64" }).default(0).describe("Only events with a larger seq"),
  limit: z.coerce.number().int().min(1).max(500).meta({ format: "int32" }).default(100).describe("Page size, 1–500"),
  type: z
    .union([z.enum(EVENT_TYPES), z.array(z.enum(EVENT_TYPES)).max(EVENT_TYPES.length)])
    .optional()
    .describe("Only these types; repeat the parameter for several"),
  deploymentId: z.string().max(64).optional().describe("Only events about this deployment"),
});

export function registerEventRoutes(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    createRoute({
      operationId: "listEvents",
      method: "get",
      path: "/v1/events",
      tags: ["Events"],
      summary: "Read the event log after a sequence number",
      description:
        "Oldest first. An event appears only once every transaction that began before it has ended, " +
        "so reading after the last seq you saw never skips one. nextCursor is the last seq when the page is full. " +
        "An `after` older than what retention keeps is answered 410 with `purgedThrough`: read again without it.",
      security: bearerSecurity,
      request: { query: EventsQuery },
      responses: { 200: jsonContent(listOf(Event, "EventList"), "A page of events"), ...problems(...AUTH_PROBLEMS, 410) },
    }),
    async (c) => {
      const query = c.req.valid("query");
      const types = query.type === undefined ? undefined : Array.isArray(query.type) ? query.type : [query.type];
      const items = await listEvents({ ctx: serviceContext(c), input: { ...query, types } });
      const last = items[items.length - 1];
      return c.json({ items, nextCursor: items.length === query.limit && last ? String(last.seq) : null }, 200);
    },
  );
  app.openapi(
    createRoute({
      operationId: "streamEvents",
      method: "get",
      path: "/v1/events/stream",
      tags: ["Events"],
      summary: "Follow the event log as server-sent events",
      description:
        "Each event is an SSE message whose `id` is its seq, `event` its type and `data` the Event. " +
        "Reconnect with `Last-Event-ID` (or `?after=`) to resume with no gap. A comment line is sent when idle. " +
        "A resume point older than what retention keeps is answered 410 with `purgedThrough`: reconnect without it.",
      security: bearerSecurity,
      request: { query: EventsQuery.omit({ limit: true }) },
      responses: {
        200: { description: "An endless text/event-stream", content: { "text/event-stream": { schema: z.string() } } },
        ...problems(...AUTH_PROBLEMS, 410),
      },
    }),
    async (c) => {
      const query = c.req.valid("query");
      const types = query.type === undefined ? undefined : Array.isArray(query.type) ? query.type : [query.type];
      const ctx = serviceContext(c);
      const after = resumePoint(c, query.after);
      // Before the stream starts, so a stale resume point is a 410, not a stream that stops.
      await assertEventCursorKept(ctx, after);
      return streamPolled(c, {
        after,
        batchSize: STREAM_BATCH,
        channel: EVENTS_CHANNEL,
        poll: async (after) =>
          (await listEvents({ ctx, input: { after, limit: STREAM_BATCH, types, deploymentId: query.deploymentId } })).map((event) => ({
            id: event.seq,
            event: event.type,
            data: event,
          })),
      }) as never;
    },
  );
}

// Reads the event log after a sequence number. A project-bound key sees only its
// project's events; an installation key sees every event, installation-wide ones too.
import { listCommittedEvents, type EventRow } from "../../../db/queries/events.ts";

/** Announces each committed event; the event stream wakes on it. */
export { EVENTS_CHANNEL } from "../../../db/queries/events.ts";
import type { Event, EventType } from "../../domain/events.ts";
import { requireUser } from "../../domain/principal.ts";
import type { ServiceContext } from "../context.ts";
import { assertCursorKept } from "../retention/kept-cursor.ts";

export interface ListEventsInput {
  after: number;
  limit: number;
  types?: EventType[];
  deploymentId?: string;
}

export function toEvent(row: EventRow): Event {
  return {
    seq: row.seq,
    id: row.id,
    type: row.type as EventType,
    occurredAt: row.occurredAt.toISOString(),
    projectId: row.projectId,
    ...(row.deploymentId ? { deploymentId: row.deploymentId } : {}),
    data: row.data as Record<string, unknown>,
  };
}

export async function listEvents({ ctx, input }: { ctx: ServiceContext; input: ListEventsInput }): Promise<Event[]> {
  const user = requireUser(ctx.principal);
  const rows = await listCommittedEvents(ctx.db, {
    after: input.after,
    limit: input.limit,
    types: input.types,
    deploymentId: input.deploymentId,
    projectId: user.projectId ?? undefined,
  });
  // After the read: a purge that raced it has raised the horizon by now (kept-cursor.ts).
  await assertEventCursorKept(ctx, input.after);
  return rows.map(toEvent);
}

/** 410 when events after `after` may have been purged (docs/design.md §14.5). */
export async function assertEventCursorKept(ctx: ServiceContext, after: number): Promise<void> {
  await assertCursorKept(
    ctx.db,
    "events",
    after,
    (purgedThrough) =>
      `Events after seq ${after} are no longer all kept: retention purged the log through seq ${purgedThrough}. ` +
      `Read again without a resume point (no after, no Last-Event-ID) to start from the oldest event kept, ` +
      `and rebuild what you derived from the events you missed from the resources themselves.`,
  );
}

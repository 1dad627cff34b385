// SQL for the event log. Reads return only events whose transaction is older than every
// transaction still running, so a reader that resumes after seq N never misses an event
// with a smaller seq that committed late (see db/schema.ts `events`).
import { and, asc, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { events } from "../schema.ts";

export type EventRow = typeof events.$inferSelect;

export async function insertEvent(db: Db, row: Omit<EventRow, "seq" | "txId">): Promise<EventRow> {
  const [created] = await db.insert(events).values(row).returning();
  return created!;
}

export interface EventFilter {
  after: number;
  limit: number;
  types?: string[];
  deploymentId?: string;
  /** Only this project's events (a project-bound caller); installation events are not included. */
  projectId?: string;
}

export async function listCommittedEvents(db: Db, filter: EventFilter): Promise<EventRow[]> {
  const filters: (SQL | undefined)[] = [
    gt(events.seq, filter.after),
    sql`${events.txId} < pg_snapshot_xmin(pg_current_snapshot())`,
  ];
  if (filter.types && filter.types.length > 0) filters.push(inArray(events.type, filter.types));
  if (filter.deploymentId) filters.push(eq(events.deploymentId, filter.deploymentId));
  if (filter.projectId) filters.push(eq(events.projectId, filter.projectId));
  return db
    .select()
    .from(events)
    .where(and(...filters))
    .orderBy(asc(events.seq))
    .limit(filter.limit);
}

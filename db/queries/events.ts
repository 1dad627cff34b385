// SQL for the event log. Event writers serialise on one transaction-scoped advisory lock
// taken right before their insert and released at commit, so seqs commit in order: any
// committed prefix of the log is final, and a reader resuming after seq N misses nothing.
// Callers keep the event insert as the last statement of their transaction, so the lock
// is held for one insert and the commit.
import { and, asc, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { events } from "../schema.ts";

export type EventRow = typeof events.$inferSelect;

/** Arbitrary, fixed: the advisory lock key of the event log. */
const EVENT_LOG_LOCK = 727173;

export async function insertEvent(db: Db, row: Omit<EventRow, "seq">): Promise<EventRow> {
  await db.execute(sql`select pg_advisory_xact_lock(${EVENT_LOG_LOCK})`);
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
  const filters: (SQL | undefined)[] = [gt(events.seq, filter.after)];
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

// SQL for the event log. Inserts take the change-log lock (change-log.ts), so seqs commit
// in order: any committed prefix of the log is final, and a reader resuming after seq N
// misses nothing. Callers keep the event insert among the last writes of their transaction.
import { and, asc, desc, eq, gt, inArray, lt, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { events } from "../schema.ts";
import { lockChangeLog } from "./change-log.ts";

export type EventRow = typeof events.$inferSelect;

/** The NOTIFY channel on which each committed event is announced (the webhook dispatcher listens). */
export const EVENTS_CHANNEL = "berth_events";

export async function insertEvent(db: Db, row: Omit<EventRow, "seq">): Promise<EventRow> {
  await lockChangeLog(db, EVENTS_CHANNEL);
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

/** The newest cluster.connected/disconnected event of a cluster: its last announced state. */
export async function lastClusterConnectionEvent(db: Db, clusterId: string): Promise<EventRow | undefined> {
  const [row] = await db
    .select()
    .from(events)
    .where(
      and(
        inArray(events.type, ["cluster.connected", "cluster.disconnected"]),
        sql`${events.data}->>'clusterId' = ${clusterId}`,
      ),
    )
    .orderBy(desc(events.seq))
    .limit(1);
  return row;
}

/** A deployment's events of some types, newest first, before `beforeSeq` (a newest-first keyset). */
export async function listDeploymentEventsNewestFirst(
  db: Db,
  filter: { deploymentId: string; types: string[]; beforeSeq?: number; limit: number },
): Promise<EventRow[]> {
  const filters: (SQL | undefined)[] = [eq(events.deploymentId, filter.deploymentId), inArray(events.type, filter.types)];
  if (filter.beforeSeq !== undefined) filters.push(lt(events.seq, filter.beforeSeq));
  return db
    .select()
    .from(events)
    .where(and(...filters))
    .orderBy(desc(events.seq))
    .limit(filter.limit);
}

// One transaction-scoped advisory lock orders every change that readers follow by
// number: event inserts (by seq) and deployment writes (by resourceVersion). A writer
// takes it just before taking its number and holds it to commit, so numbers commit in
// order and a reader resuming after N never misses a smaller number committed late.
// Call only inside a transaction, as the last writes before commit.
import { sql } from "drizzle-orm";
import type { Db } from "../client.ts";

/** The NOTIFY channel on which each committed deployment write is announced (watches, long-polls). */
export const CHANGES_CHANNEL = "berth_changes";

/** Arbitrary, fixed: the advisory lock key of the change log. */
const CHANGE_LOG_LOCK = 727173;

/**
 * Takes the lock and queues a NOTIFY on `notify` in the same round trip (PostgreSQL sends
 * it at commit, and not at all on rollback), so listeners learn of the change at once.
 */
export async function lockChangeLog(db: Db, notify: string = CHANGES_CHANNEL): Promise<void> {
  await db.execute(sql`select pg_advisory_xact_lock(${CHANGE_LOG_LOCK}), pg_notify(${notify}, '')`);
}

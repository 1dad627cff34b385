// Announcing revocations: every API instance LISTENs on one channel and, on a notice,
// forgets the credential from its principal cache and ends the streams and long-polls
// opened with it. Sent inside the revoking transaction: PostgreSQL delivers a NOTIFY at
// commit, and not at all if the transaction rolls back.
import { sql } from "drizzle-orm";
import type { Db } from "../client.ts";

/** Payload: the id of one revoked API key (key_…) or agent credential (agc_…). */
export const REVOCATIONS_CHANNEL = "berth_revocations";

export async function announceRevocations(db: Db, principalIds: readonly string[]): Promise<void> {
  for (const id of principalIds) await db.execute(sql`select pg_notify(${REVOCATIONS_CHANNEL}, ${id})`);
}

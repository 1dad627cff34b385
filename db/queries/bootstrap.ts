// SQL for the first start of an empty installation.
import { sql } from "drizzle-orm";
import type { Db } from "../client.ts";

/** Serialises bootstrap across API instances starting at once (released at commit). */
export async function lockBootstrap(db: Db): Promise<void> {
  await db.execute(sql`select pg_advisory_xact_lock(727172)`);
}

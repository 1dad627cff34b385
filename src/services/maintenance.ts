// Housekeeping any instance may run at any time (several at once is harmless):
// forget Idempotency-Keys past their TTL so the table stays small.
import { purgeExpiredIdempotencyKeys } from "../../db/queries/idempotency.ts";
import type { SystemContext } from "./context.ts";

/** How often the serve entries run housekeeping. */
export const MAINTENANCE_INTERVAL_MS = 10 * 60 * 1000;

export async function runMaintenance({ ctx }: { ctx: SystemContext }): Promise<void> {
  await purgeExpiredIdempotencyKeys(ctx.db, ctx.clock.now());
}

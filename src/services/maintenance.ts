// Housekeeping any instance may run at any time (several at once is harmless):
// announce clusters that went silent, purge what retention no longer keeps (expired
// Idempotency-Keys among it), and forget rate-limit buckets idle for a whole window
// (full again, so the same as no row).
import { deleteIdleRateLimitBuckets } from "../../db/queries/rate-limits.ts";
import { sweepClusters } from "./agent/sweep-clusters.ts";
import type { SystemContext } from "./context.ts";
import { purgeRetention } from "./retention/purge-retention.ts";

/** How often the serve entries run housekeeping: well inside the 30 s heartbeat budget. */
export const MAINTENANCE_INTERVAL_MS = 10_000;

export async function runMaintenance({ ctx }: { ctx: SystemContext }): Promise<void> {
  await sweepClusters({ ctx });
  await purgeRetention({ ctx });
  await deleteIdleRateLimitBuckets(ctx.db, ctx.clock.now().getTime() - ctx.config.rateLimits.windowSeconds * 1000);
}

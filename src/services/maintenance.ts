// Housekeeping any instance may run at any time (several at once is harmless):
// announce clusters that went silent, and purge what retention no longer keeps (expired
// Idempotency-Keys among it).
import { sweepClusters } from "./agent/sweep-clusters.ts";
import type { SystemContext } from "./context.ts";
import { purgeRetention } from "./retention/purge-retention.ts";

/** How often the serve entries run housekeeping: well inside the 30 s heartbeat budget. */
export const MAINTENANCE_INTERVAL_MS = 10_000;

export async function runMaintenance({ ctx }: { ctx: SystemContext }): Promise<void> {
  await sweepClusters({ ctx });
  await purgeRetention({ ctx });
}

// One retention pass (docs/design.md §14.5), run by the maintenance sweep: purges what is older
// than its window, table by table, in bounded batches and at most a bounded number of them per
// pass, so one pass never holds locks long and a backlog drains over a few passes. Any instance
// may run it at any time, several at once.
import {
  purgeEventsBatch,
  purgeExpiredIdempotencyBatch,
  purgeFinishedDeliveriesBatch,
  purgeFinishedOperationsBatch,
  purgeTombstonesBatch,
  readFanoutPosition,
  vacuumPurgedTables,
} from "../../../db/queries/retention.ts";
import { eventPurgeCeiling, retentionCutoffs } from "../../domain/retention.ts";
import type { SystemContext } from "../context.ts";

/** Rows purged this pass, per table (attempts go with their deliveries and are not counted). */
export interface RetentionReport {
  events: number;
  tombstones: number;
  deliveries: number;
  operations: number;
  idempotencyKeys: number;
}

export async function purgeRetention({ ctx }: { ctx: SystemContext }): Promise<RetentionReport> {
  const { windows, batchSize, maxBatchesPerPass } = ctx.config.retention;
  const now = ctx.clock.now();
  const cutoffs = retentionCutoffs(now, windows);
  const drain = async (batch: () => Promise<number>): Promise<number> => {
    let total = 0;
    for (let i = 0; i < maxBatchesPerPass; i++) {
      const purged = await batch();
      total += purged;
      if (purged < batchSize) break;
    }
    return total;
  };
  const report: RetentionReport = { events: 0, tombstones: 0, deliveries: 0, operations: 0, idempotencyKeys: 0 };
  // Deliveries first: a finished delivery purged now no longer needs its event.
  const { deliveries, operations, tombstones, events } = cutoffs;
  if (deliveries) report.deliveries = await drain(() => purgeFinishedDeliveriesBatch(ctx.db, { cutoff: deliveries, limit: batchSize }));
  if (events) {
    const ceiling = eventPurgeCeiling(await readFanoutPosition(ctx.db));
    report.events = await drain(() => purgeEventsBatch(ctx.db, { cutoff: events, ceiling, limit: batchSize, now }));
  }
  if (tombstones) report.tombstones = await drain(() => purgeTombstonesBatch(ctx.db, { cutoff: tombstones, limit: batchSize, now }));
  if (operations) report.operations = await drain(() => purgeFinishedOperationsBatch(ctx.db, { cutoff: operations, limit: batchSize }));
  report.idempotencyKeys = await drain(() => purgeExpiredIdempotencyBatch(ctx.db, { now, limit: batchSize }));
  if (ctx.config.retention.vacuumAfterPurge) {
    await vacuumPurgedTables(ctx.db, (Object.keys(report) as Array<keyof RetentionReport>).filter((table) => report[table] > 0));
  }
  return report;
}

// SQL for retention (docs/design.md §14.5). Every purge deletes one bounded batch per call, so a
// statement never holds many row locks for long; callers loop. Several instances purging at
// once take disjoint batches (FOR UPDATE SKIP LOCKED), so they neither wait on nor deadlock
// with each other. The event log and the
// tombstones are purged as a prefix of their sequence, and the batch raises that stream's
// horizon in the same transaction: a reader that checks the horizon after reading rows either
// saw them all or sees the horizon that says they are gone.
import { eq, sql } from "drizzle-orm";
import type { Db } from "../client.ts";
import { retentionHorizons, webhookFanoutCursor } from "../schema.ts";
import type { FanoutPosition, RetentionStream } from "../../src/domain/retention.ts";

const CONNECTION_TYPES = sql`('cluster.connected', 'cluster.disconnected')`;
/** Fits a bigint and any seq or resourceVersion; stands for "no ceiling". */
const NO_CEILING = Number.MAX_SAFE_INTEGER;

type Rows<T> = { rows: T[] };

/** The stream's horizon: every row at or below it may be gone (0 while nothing was purged). */
export async function readHorizon(db: Db, stream: RetentionStream): Promise<number> {
  const [row] = await db.select({ purgedThrough: retentionHorizons.purgedThrough }).from(retentionHorizons).where(eq(retentionHorizons.stream, stream));
  return row?.purgedThrough ?? 0;
}

async function raiseHorizon(db: Db, stream: RetentionStream, purgedThrough: number, now: Date): Promise<void> {
  await db
    .insert(retentionHorizons)
    .values({ stream, purgedThrough, updatedAt: now })
    .onConflictDoUpdate({
      target: retentionHorizons.stream,
      set: { purgedThrough: sql`greatest(${retentionHorizons.purgedThrough}, excluded.purged_through)`, updatedAt: now },
    });
}

/** What the webhook dispatcher still has to read from the event log. */
export async function readFanoutPosition(db: Db): Promise<FanoutPosition> {
  const result = (await db.execute(sql`
    select (select last_seq from ${webhookFanoutCursor} where id = 1) as cursor_seq,
           (select min(start_seq) from webhook_endpoints) as oldest_start,
           (select min(e.seq) from webhook_deliveries d join events e on e.id = d.event_id where d.status = 'pending') as oldest_pending`)) as unknown as Rows<
    Record<"cursor_seq" | "oldest_start" | "oldest_pending", string | number | null>
  >;
  const row = result.rows[0];
  const num = (value: string | number | null | undefined) => (value === null || value === undefined ? null : Number(value));
  return { cursorSeq: num(row?.cursor_seq), oldestEndpointStartSeq: num(row?.oldest_start), oldestPendingSeq: num(row?.oldest_pending) };
}

/**
 * Deletes the oldest events, at most `limit`, up to the first one at or after `cutoff` and never
 * past `ceiling`. Each cluster's newest cluster.connected/disconnected event stays whatever its
 * age: it is the cluster's announced state (sweep-clusters and heartbeat read it). Returns how
 * many went.
 */
export async function purgeEventsBatch(db: Db, batch: { cutoff: Date; ceiling: number | null; limit: number; now: Date }): Promise<number> {
  return db.transaction(async (tx) => {
    const result = (await tx.execute(sql`
      with head as (
        select seq, occurred_at, type in ${CONNECTION_TYPES} as connection, case when type in ${CONNECTION_TYPES} then data->>'clusterId' end as cluster_id
          from events where seq <= ${batch.ceiling ?? NO_CEILING} order by seq limit ${batch.limit} for update skip locked
      ), stop as (
        select min(seq) as seq from head where occurred_at >= ${batch.cutoff}
      ), doomed as (
        select h.seq from head h, stop
         where (stop.seq is null or h.seq < stop.seq)
           and not (h.connection and not exists (
             select 1 from events n
              where n.type in ${CONNECTION_TYPES} and n.data->>'clusterId' = h.cluster_id and n.seq > h.seq))
      )
      delete from events where seq in (select seq from doomed) returning seq`)) as unknown as Rows<{ seq: string | number }>;
    return finishBatch(tx, "events", result.rows.map((row) => Number(row.seq)), batch.now);
  });
}

/** Deletes the oldest tombstones, at most `limit`, up to the first one deleted at or after `cutoff`. */
export async function purgeTombstonesBatch(db: Db, batch: { cutoff: Date; limit: number; now: Date }): Promise<number> {
  return db.transaction(async (tx) => {
    const result = (await tx.execute(sql`
      with head as (
        select id, resource_version, deleted_at from deployment_tombstones order by resource_version limit ${batch.limit} for update skip locked
      ), stop as (
        select min(resource_version) as rv from head where deleted_at >= ${batch.cutoff}
      )
      delete from deployment_tombstones
       where id in (select head.id from head, stop where stop.rv is null or head.resource_version < stop.rv)
      returning resource_version`)) as unknown as Rows<{ resource_version: string | number }>;
    return finishBatch(tx, "deployment_tombstones", result.rows.map((row) => Number(row.resource_version)), batch.now);
  });
}

async function finishBatch(tx: Db, stream: RetentionStream, purged: number[], now: Date): Promise<number> {
  if (purged.length > 0) await raiseHorizon(tx, stream, Math.max(...purged), now);
  return purged.length;
}

/**
 * Deletes finished webhook deliveries (succeeded or given up) last changed before `cutoff`, at
 * most `limit`; their attempts go with them (foreign key cascade). A pending delivery is never
 * touched: the outer condition is checked again on the row a redelivery may just have changed.
 */
export async function purgeFinishedDeliveriesBatch(db: Db, batch: { cutoff: Date; limit: number }): Promise<number> {
  const result = (await db.execute(sql`
    delete from webhook_deliveries
     where id in (select id from webhook_deliveries where status <> 'pending' and updated_at < ${batch.cutoff} order by updated_at limit ${batch.limit} for update skip locked)
       and status <> 'pending' and updated_at < ${batch.cutoff}
    returning id`)) as unknown as Rows<unknown>;
  return result.rows.length;
}

/** Deletes operations in a terminal phase that finished before `cutoff`, at most `limit`. */
export async function purgeFinishedOperationsBatch(db: Db, batch: { cutoff: Date; limit: number }): Promise<number> {
  const result = (await db.execute(sql`
    delete from operations
     where id in (select id from operations where finished_at is not null and finished_at < ${batch.cutoff} order by finished_at limit ${batch.limit} for update skip locked)
       and phase in ('Succeeded', 'Failed', 'Aborted')
    returning id`)) as unknown as Rows<unknown>;
  return result.rows.length;
}

/** Deletes Idempotency-Keys past their TTL, at most `limit`. */
export async function purgeExpiredIdempotencyBatch(db: Db, batch: { now: Date; limit: number }): Promise<number> {
  const result = (await db.execute(sql`
    delete from idempotency_keys
     where (principal, key) in (select principal, key from idempotency_keys where expires_at < ${batch.now} limit ${batch.limit} for update skip locked)
    returning 1`)) as unknown as Rows<unknown>;
  return result.rows.length;
}

/** Whether the event is still in the log (a delivery is sent from its event's row). */
export async function eventIsKept(db: Db, eventId: string): Promise<boolean> {
  const result = (await db.execute(sql`select 1 from events where id = ${eventId}`)) as unknown as Rows<unknown>;
  return result.rows.length > 0;
}

/** The tables retention purges, by the report's names (attempts go with deliveries). */
const PURGED_TABLES = {
  events: sql`events`,
  tombstones: sql`deployment_tombstones`,
  deliveries: sql`webhook_deliveries, webhook_attempts`,
  operations: sql`operations`,
  idempotencyKeys: sql`idempotency_keys`,
} as const;

/** Plain VACUUM (no lock against reads or writes) of the purged tables, so their space is reused. Outside a transaction. */
export async function vacuumPurgedTables(db: Db, tables: Array<keyof typeof PURGED_TABLES>): Promise<void> {
  if (tables.length === 0) return;
  await db.execute(sql`vacuum ${sql.join(tables.map((table) => PURGED_TABLES[table]), sql`, `)}`);
}

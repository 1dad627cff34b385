// SQL for webhook deliveries: the fan-out cursor, claiming due deliveries with
// FOR UPDATE SKIP LOCKED (so any number of dispatchers can run at once), recording an
// attempt together with the delivery's next state, and the delivery log.
//
// A claim pushes next_attempt_at one lease ahead and stamps a lease token: a dispatcher
// that dies mid-send leaves the delivery due again when the lease ends (at least once),
// and only the holder of the current token may move the delivery on.
import { and, asc, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { events, webhookAttempts, webhookDeliveries, webhookEndpoints, webhookFanoutCursor } from "../schema.ts";
import { beforeCursor, keysetOrderDesc, type PageCursor } from "./pagination.ts";

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;

const CURSOR_ROW = 1;

export interface EventHead {
  seq: number;
  id: string;
  type: string;
  projectId: string | null;
}

export interface EndpointRoute {
  id: string;
  projectId: string | null;
  eventTypes: string[];
  startSeq: number;
}

export interface FanoutBatch {
  lastSeq: number;
  /** Committed events after the cursor, oldest first. */
  heads: EventHead[];
  /** Every enabled endpoint, read under the same lock. */
  endpoints: EndpointRoute[];
}

/**
 * Inside a transaction: locks the fan-out cursor row and, in the same round trip, reads up
 * to `limit` committed events after it (oldest first) and the enabled endpoints. Undefined
 * when another dispatcher holds the row (it is fanning out now). The row is created on
 * first use, starting before the oldest endpoint's first event.
 */
export async function lockFanoutCursor(db: Db, limit: number): Promise<FanoutBatch | undefined> {
  type Row = {
    last_seq: string | number;
    endpoints: Array<{ id: string; projectId: string | null; eventTypes: string[]; startSeq: string | number }> | string;
    seq: string | number | null;
    id: string;
    type: string;
    project_id: string | null;
  };
  const read = async () =>
    (
      (await db.execute(sql`
        with cursor as (
          select last_seq from ${webhookFanoutCursor} where id = ${CURSOR_ROW} for update skip locked
        )
        select cursor.last_seq,
               (select coalesce(json_agg(json_build_object('id', w.id, 'projectId', w.project_id, 'eventTypes', w.event_types,
                                                           'startSeq', w.start_seq)), '[]')
                  from ${webhookEndpoints} w where w.enabled) as endpoints,
               e.seq, e.id, e.type, e.project_id
          from cursor
          left join lateral (
            select seq, id, type, project_id from ${events} where seq > cursor.last_seq order by seq limit ${limit}
          ) e on true`)) as unknown as { rows: Row[] }
    ).rows;
  let rows = await read();
  if (rows.length === 0) {
    const created = await db
      .insert(webhookFanoutCursor)
      .values({
        id: CURSOR_ROW,
        lastSeq: sql`coalesce((select min(${webhookEndpoints.startSeq}) from ${webhookEndpoints}), (select max(${events.seq}) from ${events}), 0)`,
      })
      .onConflictDoNothing()
      .returning({ lastSeq: webhookFanoutCursor.lastSeq });
    // Inserted here: this transaction holds the new row. Otherwise another holds it (or made it meanwhile).
    if (created.length === 0) return undefined;
    rows = await read();
  }
  const first = rows[0];
  if (!first) return undefined;
  const endpoints = typeof first.endpoints === "string" ? JSON.parse(first.endpoints) : first.endpoints;
  return {
    lastSeq: Number(first.last_seq),
    heads: rows
      .filter((row) => row.seq !== null)
      .map((row) => ({ seq: Number(row.seq), id: row.id, type: row.type, projectId: row.project_id })),
    endpoints: (endpoints as Array<Omit<EndpointRoute, "startSeq"> & { startSeq: string | number }>).map((endpoint) => ({
      ...endpoint,
      startSeq: Number(endpoint.startSeq),
    })),
  };
}

/**
 * Inside the fan-out transaction: inserts the deliveries (one already there for its
 * endpoint and event is left alone) and moves the cursor, in one statement. Returns how
 * many deliveries were created.
 */
export async function writeFanout(db: Db, rows: NewDeliveryRow[], lastSeq: number): Promise<number> {
  let created = 0;
  // 8 parameters a row; PostgreSQL takes at most 65,535 per statement.
  const chunks: NewDeliveryRow[][] = [];
  for (let i = 0; i < rows.length; i += 2000) chunks.push(rows.slice(i, i + 2000));
  for (const chunk of chunks.slice(0, -1)) created += await insertDeliveries(db, chunk);
  const last = chunks[chunks.length - 1] ?? [];
  const values = last.map(
    (row) =>
      sql`(${row.id}, ${row.endpointId}, ${row.eventId}, ${row.eventType}, ${row.status}, ${row.nextAttemptAt}, ${row.runAttempts}, null, ${row.createdAt}, ${row.createdAt})`,
  );
  const inserted =
    values.length === 0
      ? sql`select 1 where false`
      : sql`insert into ${webhookDeliveries}
              (id, endpoint_id, event_id, event_type, status, next_attempt_at, run_attempts, lease_token, created_at, updated_at)
            values ${sql.join(values, sql`, `)}
            on conflict do nothing returning 1`;
  const result = (await db.execute(sql`
    with inserted as (${inserted})
    update ${webhookFanoutCursor} set last_seq = ${lastSeq} where id = ${CURSOR_ROW}
    returning (select count(*) from inserted) as created`)) as unknown as { rows: Array<{ created: string | number }> };
  return created + Number(result.rows[0]?.created ?? 0);
}

export type NewDeliveryRow = Omit<WebhookDeliveryRow, "leaseToken" | "updatedAt">;

/** Inserts deliveries; one that already exists for its (endpoint, event) is left alone. */
export async function insertDeliveries(db: Db, rows: NewDeliveryRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await db
    .insert(webhookDeliveries)
    .values(rows.map((row) => ({ ...row, leaseToken: null, updatedAt: row.createdAt })))
    .onConflictDoNothing()
    .returning({ id: webhookDeliveries.id });
  return inserted.length;
}

/** What one claimed delivery needs to be sent: the endpoint's URL and secrets, the event. */
export interface ClaimedDelivery {
  id: string;
  runAttempts: number;
  leaseToken: string;
  endpointId: string;
  projectId: string | null;
  url: string;
  /** Clear text only on rows from before sealing (§14.3); otherwise null and the sealed column is set. */
  secret: string | null;
  previousSecret: string | null;
  secretSealed: string | null;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  failingSince: Date | null;
  eventId: string;
  eventType: string;
  occurredAt: Date;
  data: unknown;
}

/**
 * Claims up to `limit` due deliveries of enabled endpoints, oldest due first, at most
 * `perEndpoint` of any one endpoint (so one endpoint's backlog or slowness cannot fill a
 * pass, and a receiver sees few requests at once), skipping rows another dispatcher has
 * locked; each is leased until `leaseUntil` under `token`. Returns what sending needs.
 */
export async function claimDueDeliveries(
  db: Db,
  claim: { now: Date; leaseUntil: Date; token: string; limit: number; perEndpoint: number },
): Promise<ClaimedDelivery[]> {
  const result = (await db.execute(sql`
    with claimed as (
      update ${webhookDeliveries} set next_attempt_at = ${claim.leaseUntil}, lease_token = ${claim.token}, updated_at = ${claim.now}
       where id in (
         select due.id
           from ${webhookEndpoints} e
           cross join lateral (
             select d.id, d.next_attempt_at
               from ${webhookDeliveries} d
              where d.endpoint_id = e.id and d.status = 'pending' and d.next_attempt_at <= ${claim.now}
              order by d.next_attempt_at
              limit ${claim.perEndpoint}
                for update skip locked
           ) due
          where e.enabled
          order by due.next_attempt_at
          limit ${claim.limit})
      returning id, endpoint_id, event_id, run_attempts, lease_token
    )
    select c.id, c.run_attempts, c.lease_token, e.id as endpoint_id, e.project_id, e.url, e.secret, e.previous_secret,
           e.secret_sealed, e.previous_secret_sealed,
           e.previous_secret_expires_at, e.failing_since, ev.id as event_id, ev.type as event_type, ev.occurred_at, ev.data
      from claimed c
      join ${webhookEndpoints} e on e.id = c.endpoint_id
      join ${events} ev on ev.id = c.event_id
     order by ev.seq`)) as unknown as { rows: Array<Record<string, unknown>> };
  const date = (value: unknown) => (value === null || value === undefined ? null : value instanceof Date ? value : new Date(String(value)));
  return result.rows.map((row) => ({
    id: row.id as string,
    runAttempts: Number(row.run_attempts),
    leaseToken: row.lease_token as string,
    endpointId: row.endpoint_id as string,
    projectId: (row.project_id as string | null) ?? null,
    url: row.url as string,
    secret: (row.secret as string | null) ?? null,
    previousSecret: (row.previous_secret as string | null) ?? null,
    secretSealed: (row.secret_sealed as string | null) ?? null,
    previousSecretSealed: (row.previous_secret_sealed as string | null) ?? null,
    previousSecretExpiresAt: date(row.previous_secret_expires_at),
    failingSince: date(row.failing_since),
    eventId: row.event_id as string,
    eventType: row.event_type as string,
    occurredAt: date(row.occurred_at)!,
    // json arrives parsed from node-postgres and PGlite; as text from a driver that leaves it.
    data: typeof row.data === "string" ? JSON.parse(row.data) : row.data,
  }));
}

export interface AttemptRecord {
  deliveryId: string;
  leaseToken: string;
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  responseSnippet: string | null;
  error: string | null;
  /** The delivery's next state. */
  status: "pending" | "succeeded" | "failed";
  nextAttemptAt: Date | null;
}

/**
 * Appends the attempt to the log and moves the delivery to its next state, in one
 * statement. The state moves only while the lease is still this dispatcher's: if it
 * expired and another claimed the delivery, only the log line is added. Returns whether
 * the state moved.
 */
export async function recordAttempt(db: Db, record: AttemptRecord): Promise<boolean> {
  const result = (await db.execute(sql`
    with attempt as (
      insert into ${webhookAttempts} (delivery_id, attempted_at, status_code, latency_ms, response_snippet, error)
      values (${record.deliveryId}, ${record.attemptedAt}, ${record.statusCode}, ${record.latencyMs},
              ${record.responseSnippet}, ${record.error})
    )
    update ${webhookDeliveries}
       set status = ${record.status}, next_attempt_at = ${record.nextAttemptAt}, run_attempts = run_attempts + 1,
           lease_token = null, updated_at = ${record.attemptedAt}
     where id = ${record.deliveryId} and lease_token = ${record.leaseToken}
    returning id`)) as unknown as { rows: unknown[] };
  return result.rows.length > 0;
}

export async function findDelivery(db: Db, endpointId: string, deliveryId: string): Promise<WebhookDeliveryRow | undefined> {
  const [row] = await db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpointId)));
  return row;
}

/** Starts a delivery over: pending, due now, at the start of the retry schedule. */
export async function restartDelivery(db: Db, deliveryId: string, now: Date): Promise<WebhookDeliveryRow | undefined> {
  const [row] = await db
    .update(webhookDeliveries)
    .set({ status: "pending", nextAttemptAt: now, runAttempts: 0, leaseToken: null, updatedAt: now })
    .where(eq(webhookDeliveries.id, deliveryId))
    .returning();
  return row;
}

/** An endpoint's deliveries, newest first. */
export async function listDeliveries(
  db: Db,
  filter: { endpointId: string; cursor?: PageCursor; limit: number; status?: string },
): Promise<WebhookDeliveryRow[]> {
  const filters: (SQL | undefined)[] = [
    eq(webhookDeliveries.endpointId, filter.endpointId),
    beforeCursor(webhookDeliveries.createdAt, webhookDeliveries.id, filter.cursor),
  ];
  if (filter.status) filters.push(eq(webhookDeliveries.status, filter.status));
  return db
    .select()
    .from(webhookDeliveries)
    .where(and(...filters))
    .orderBy(...keysetOrderDesc(webhookDeliveries.createdAt, webhookDeliveries.id))
    .limit(filter.limit);
}

/** The attempts of some deliveries, oldest first. */
export async function listAttempts(db: Db, deliveryIds: string[]): Promise<WebhookAttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db
    .select()
    .from(webhookAttempts)
    .where(inArray(webhookAttempts.deliveryId, deliveryIds))
    .orderBy(asc(webhookAttempts.id));
}

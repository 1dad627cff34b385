// SQL for webhook endpoints: plain CRUD, keyset-paged lists, and the health writes of the
// dispatcher (failing since, disabled).
import { and, eq, isNull, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { events, nextResourceVersion, webhookEndpoints } from "../schema.ts";
import { afterCursor, keysetOrder, type PageCursor } from "./pagination.ts";

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;
export type NewWebhookEndpointRow = Omit<WebhookEndpointRow, "resourceVersion" | "startSeq">;

/** Inserts an endpoint that will receive only events after the last one committed now. */
export async function insertWebhookEndpoint(db: Db, row: NewWebhookEndpointRow): Promise<WebhookEndpointRow> {
  const [created] = await db
    .insert(webhookEndpoints)
    .values({
      ...row,
      startSeq: sql`(select coalesce(max(${events.seq}), 0) from ${events})`,
      resourceVersion: nextResourceVersion,
    })
    .returning();
  return created!;
}

export async function findWebhookEndpoint(db: Db, id: string): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id));
  return row;
}

export async function lockWebhookEndpoint(db: Db, id: string): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)).for("update");
  return row;
}

export interface WebhookEndpointFilter {
  cursor?: PageCursor;
  limit: number;
  /** Only this project's endpoints. */
  projectId?: string;
}

export async function listWebhookEndpoints(db: Db, filter: WebhookEndpointFilter): Promise<WebhookEndpointRow[]> {
  const filters: (SQL | undefined)[] = [afterCursor(webhookEndpoints.createdAt, webhookEndpoints.id, filter.cursor)];
  if (filter.projectId) filters.push(eq(webhookEndpoints.projectId, filter.projectId));
  return db
    .select()
    .from(webhookEndpoints)
    .where(and(...filters))
    .orderBy(...keysetOrder(webhookEndpoints.createdAt, webhookEndpoints.id))
    .limit(filter.limit);
}

export type WebhookEndpointChanges = Partial<
  Pick<
    WebhookEndpointRow,
    | "url"
    | "eventTypes"
    | "description"
    | "enabled"
    | "disabledReason"
    | "secret"
    | "previousSecret"
    | "secretSealed"
    | "previousSecretSealed"
    | "previousSecretExpiresAt"
    | "failingSince"
  >
>;

export async function updateWebhookEndpoint(
  db: Db,
  id: string,
  changes: WebhookEndpointChanges,
  updatedAt: Date,
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({ ...changes, updatedAt, resourceVersion: nextResourceVersion })
    .where(eq(webhookEndpoints.id, id))
    .returning();
  return row;
}

/** Disables an endpoint that is still enabled; undefined if it was already disabled (or is gone). */
export async function disableWebhookEndpoint(
  db: Db,
  id: string,
  reason: "gone" | "failing",
  at: Date,
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({ enabled: false, disabledReason: reason, updatedAt: at, resourceVersion: nextResourceVersion })
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.enabled, true)))
    .returning();
  return row;
}

/**
 * Records that an endpoint is failing (since a time; an earlier record is kept) or healthy
 * again (null). Callers write only when they saw the state change.
 */
export async function setWebhookEndpointFailing(db: Db, id: string, failingSince: Date | null, at: Date): Promise<void> {
  await db
    .update(webhookEndpoints)
    .set({
      failingSince: failingSince === null ? null : sql`coalesce(${webhookEndpoints.failingSince}, ${failingSince})`,
      updatedAt: at,
      resourceVersion: nextResourceVersion,
    })
    .where(eq(webhookEndpoints.id, id));
}

export async function deleteWebhookEndpoint(db: Db, id: string): Promise<boolean> {
  const rows = await db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, id)).returning({ id: webhookEndpoints.id });
  return rows.length > 0;
}

/** Arbitrary, fixed: the first key of the advisory locks that serialise endpoint creation per project. */
const ENDPOINT_CAP_LOCK = 7266;

/**
 * Inside a transaction: serialises endpoint creation in one project (null: the installation-wide
 * endpoints), so the count read next stays true until the insert commits.
 */
export async function lockWebhookEndpointCreation(db: Db, projectId: string | null): Promise<void> {
  await db.execute(sql`select pg_advisory_xact_lock(${ENDPOINT_CAP_LOCK}, hashtext(${projectId ?? ""}))`);
}

export async function countWebhookEndpoints(db: Db, projectId: string | null): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(webhookEndpoints)
    .where(projectId === null ? isNull(webhookEndpoints.projectId) : eq(webhookEndpoints.projectId, projectId));
  return Number(row!.n);
}

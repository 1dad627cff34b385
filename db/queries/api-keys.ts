// SQL for API keys. Tokens are looked up by their SHA-256 only.
import { and, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import type { Db } from "../client.ts";
import { apiKeys, nextResourceVersion } from "../schema.ts";
import { afterCursor, keysetOrder, type PageCursor } from "./pagination.ts";
import { preparedPerDb } from "./prepared.ts";

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export async function insertApiKey(db: Db, row: Omit<ApiKeyRow, "resourceVersion" | "revokedAt">): Promise<ApiKeyRow> {
  const [created] = await db
    .insert(apiKeys)
    .values({ ...row, resourceVersion: nextResourceVersion })
    .returning();
  return created!;
}

const activeKeyByHash = preparedPerDb((db) =>
  db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.tokenHash, sql.placeholder("tokenHash")), isNull(apiKeys.revokedAt)))
    .prepare("active_api_key_by_hash"),
);

export async function findActiveApiKeyByHash(db: Db, tokenHash: string): Promise<ApiKeyRow | undefined> {
  const [row] = await activeKeyByHash(db).execute({ tokenHash });
  return row;
}

/** Which of these key ids exist and are not revoked (one indexed query for many). */
export async function listActiveApiKeyIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(inArray(apiKeys.id, ids), isNull(apiKeys.revokedAt)));
  return new Set(rows.map((row) => row.id));
}

export async function findApiKeyById(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, id));
  return row;
}

export async function listApiKeys(
  db: Db,
  options: { cursor?: PageCursor; limit: number; projectId?: string },
): Promise<ApiKeyRow[]> {
  const filters: (SQL | undefined)[] = [afterCursor(apiKeys.createdAt, apiKeys.id, options.cursor)];
  if (options.projectId) filters.push(eq(apiKeys.projectId, options.projectId));
  return db
    .select()
    .from(apiKeys)
    .where(and(...filters))
    .orderBy(...keysetOrder(apiKeys.createdAt, apiKeys.id))
    .limit(options.limit);
}

export async function revokeApiKey(db: Db, id: string, at: Date): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: at, updatedAt: at, resourceVersion: nextResourceVersion })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
    .returning();
  return row;
}

export async function countApiKeys(db: Db): Promise<number> {
  const rows = await db.select({ id: apiKeys.id }).from(apiKeys).limit(1);
  return rows.length;
}

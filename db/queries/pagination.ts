// Keyset pagination on (created_at, id): stable under concurrent writes because a row's
// position never changes, and the cursor names the last row seen, not an offset.
import { and, asc, desc, gt, lt, or, eq, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";

export interface PageCursor {
  createdAt: Date;
  id: string;
}

export function afterCursor(createdAt: PgColumn, id: PgColumn, cursor: PageCursor | undefined): SQL | undefined {
  if (!cursor) return undefined;
  return or(gt(createdAt, cursor.createdAt), and(eq(createdAt, cursor.createdAt), gt(id, cursor.id)));
}

export function keysetOrder(createdAt: PgColumn, id: PgColumn): SQL[] {
  return [asc(createdAt), asc(id)];
}

/** Newest-first keyset: rows before the cursor in (created_at, id) order. */
export function beforeCursor(createdAt: PgColumn, id: PgColumn, cursor: PageCursor | undefined): SQL | undefined {
  if (!cursor) return undefined;
  return or(lt(createdAt, cursor.createdAt), and(eq(createdAt, cursor.createdAt), lt(id, cursor.id)));
}

export function keysetOrderDesc(createdAt: PgColumn, id: PgColumn): SQL[] {
  return [desc(createdAt), desc(id)];
}

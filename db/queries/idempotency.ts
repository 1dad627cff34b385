// SQL for Idempotency-Key records. A key is claimed by inserting it; the insert's
// uniqueness is what stops two concurrent requests with one key from both running.
import { and, eq, lt, or } from "drizzle-orm";
import type { Db } from "../client.ts";
import { idempotencyKeys } from "../schema.ts";

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

/**
 * Claims (principal, key) for a new request. Returns null when the claim was taken,
 * or the existing record when the key is already known and still live.
 * Expired records, and in-flight claims older than `staleBefore` (a crashed request), are replaced.
 */
export async function claimIdempotencyKey(
  db: Db,
  claim: { principal: string; key: string; fingerprint: string; now: Date; expiresAt: Date; staleBefore: Date },
): Promise<IdempotencyRow | null> {
  await db
    .delete(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.principal, claim.principal),
        eq(idempotencyKeys.key, claim.key),
        or(
          lt(idempotencyKeys.expiresAt, claim.now),
          and(eq(idempotencyKeys.completed, false), lt(idempotencyKeys.createdAt, claim.staleBefore)),
        ),
      ),
    );
  const inserted = await db
    .insert(idempotencyKeys)
    .values({
      principal: claim.principal,
      key: claim.key,
      fingerprint: claim.fingerprint,
      completed: false,
      createdAt: claim.now,
      expiresAt: claim.expiresAt,
    })
    .onConflictDoNothing()
    .returning({ key: idempotencyKeys.key });
  if (inserted.length > 0) return null;
  const [existing] = await db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.principal, claim.principal), eq(idempotencyKeys.key, claim.key)));
  return existing ?? null;
}

export async function completeIdempotencyKey(
  db: Db,
  principal: string,
  key: string,
  response: { status: number; headers: Record<string, string>; body: string },
): Promise<void> {
  await db
    .update(idempotencyKeys)
    .set({ completed: true, responseStatus: response.status, responseHeaders: response.headers, responseBody: response.body })
    .where(and(eq(idempotencyKeys.principal, principal), eq(idempotencyKeys.key, key)));
}

export async function releaseIdempotencyKey(db: Db, principal: string, key: string): Promise<void> {
  await db
    .delete(idempotencyKeys)
    .where(
      and(eq(idempotencyKeys.principal, principal), eq(idempotencyKeys.key, key), eq(idempotencyKeys.completed, false)),
    );
}

// Expired keys are purged in batches with the rest of retention (db/queries/retention.ts).

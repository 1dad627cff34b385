// SQL for Idempotency-Key records. A key is claimed by inserting it; the insert's
// uniqueness is what stops two concurrent requests with one key from both running.
import { and, eq, lt, or } from "drizzle-orm";
import type { Db } from "../client.ts";
import { idempotencyKeys } from "../schema.ts";

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

export type IdempotencyClaimResult =
  | { outcome: "claimed" }
  | { outcome: "existing"; row: IdempotencyRow }
  /** The key changed hands every time it was looked at (claimed and released again and again). */
  | { outcome: "contended" };

/** Insert-then-read rounds before giving up; a round only repeats when a release lands in between. */
const CLAIM_ROUNDS = 3;

/**
 * Claims (principal, key) for a new request: "claimed" when the insert took it, or the existing
 * record when the key is already known and still live. Expired records, and in-flight claims
 * older than `staleBefore` (a crashed request), are replaced. The holder may release the key
 * (its request failed) between this insert and this read, on any instance: then nobody holds
 * it and the claim is tried again, never reported as taken without a row.
 */
export async function claimIdempotencyKey(
  db: Db,
  claim: { principal: string; key: string; fingerprint: string; now: Date; expiresAt: Date; staleBefore: Date },
): Promise<IdempotencyClaimResult> {
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
  for (let round = 0; round < CLAIM_ROUNDS; round++) {
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
    if (inserted.length > 0) return { outcome: "claimed" };
    const [existing] = await db
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.principal, claim.principal), eq(idempotencyKeys.key, claim.key)));
    if (existing) return { outcome: "existing", row: existing };
  }
  return { outcome: "contended" };
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

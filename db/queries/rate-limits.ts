// SQL for request rate limits: one upsert per request takes a token from a bucket shared by
// every API instance. It computes exactly what src/domain/token-bucket.ts `take` does, under
// the row's lock, and returns what is left and whether a token was there.
import { lt, sql } from "drizzle-orm";
import type { Db } from "../client.ts";
import { rateLimitBuckets } from "../schema.ts";
import { preparedPerDb } from "./prepared.ts";

// The stored bucket refilled to now (the old row's values: SET reads the row before the update).
const refilled = sql`least(${sql.placeholder("quota")}::float8, "rate_limit_buckets"."tokens" + greatest(0, ${sql.placeholder("nowMs")}::bigint - "rate_limit_buckets"."updated_at_ms") * ${sql.placeholder("perMs")}::float8)`;

const takeStatement = preparedPerDb((db) =>
  db
    .insert(rateLimitBuckets)
    .values({
      bucket: sql.placeholder("bucket"),
      tokens: sql`${sql.placeholder("quota")}::float8 - 1`,
      updatedAtMs: sql`${sql.placeholder("nowMs")}::bigint`,
      allowed: true,
    })
    .onConflictDoUpdate({
      target: rateLimitBuckets.bucket,
      set: {
        tokens: sql`case when ${refilled} >= 1 then ${refilled} - 1 else ${refilled} end`,
        allowed: sql`${refilled} >= 1`,
        updatedAtMs: sql`greatest("rate_limit_buckets"."updated_at_ms", ${sql.placeholder("nowMs")}::bigint)`,
      },
    })
    .returning({ tokens: rateLimitBuckets.tokens, allowed: rateLimitBuckets.allowed })
    .prepare("rate_limit_take"),
);

export interface TakenToken {
  allowed: boolean;
  /** Tokens left after the take. */
  tokens: number;
}

/** Takes one token from `bucket` (created full at `quota`), refilling `perMs` tokens per millisecond. */
export async function takeRateLimitToken(
  db: Db,
  input: { bucket: string; quota: number; perMs: number; nowMs: number },
): Promise<TakenToken> {
  const [row] = await takeStatement(db).execute(input);
  return { allowed: row!.allowed, tokens: Number(row!.tokens) };
}

/** Buckets untouched since `beforeMs` are full again (idle longer than a window) and can go. */
export async function deleteIdleRateLimitBuckets(db: Db, beforeMs: number): Promise<void> {
  await db.delete(rateLimitBuckets).where(lt(rateLimitBuckets.updatedAtMs, beforeMs));
}

// Takes one token per request from the caller's bucket in the database (shared by every API
// instance, docs/design.md §14.2), with two per-instance memories that make floods cheap:
// a bucket that refused is refused locally until its next token is due, and a token that
// failed authentication is refused without a lookup for a few seconds.
import { takeRateLimitToken } from "../../../db/queries/rate-limits.ts";
import type { Db } from "../../../db/client.ts";
import { msUntilToken, refill, refillPerMs, retryAfterSeconds, type BucketPolicy } from "../../domain/token-bucket.ts";
import type { BucketKind, RateLimitConfig } from "./config.ts";

export interface LimitDecision {
  allowed: boolean;
  /** Tokens left in the bucket after this request. */
  tokens: number;
  policy: BucketPolicy;
  /** Whole seconds until a token is back (0 when allowed). */
  retryAfterSeconds: number;
}

/** Bounded map: the oldest entries go first, so a flood of distinct tokens cannot grow memory. */
class BoundedExpiry<V extends { untilMs: number }> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly maxEntries: number) {}

  get(key: string, nowMs: number): V | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.untilMs <= nowMs) this.entries.delete(key);
    return entry && entry.untilMs > nowMs ? entry : undefined;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, value);
  }
}

export class RequestLimiter {
  private readonly refusing = new BoundedExpiry<{ untilMs: number; tokens: number; atMs: number }>(10_000);
  private readonly failedTokens = new BoundedExpiry<{ untilMs: number }>(10_000);

  constructor(readonly config: RateLimitConfig) {}

  get enabled(): boolean {
    return this.config.enabled;
  }

  policy(kind: BucketKind): BucketPolicy {
    return { name: kind, quota: this.config.quotas[kind], windowSeconds: this.config.windowSeconds };
  }

  /** Takes a token from the bucket of `kind` and `id` (a key id, a credential id or an address). */
  async take(db: Db, kind: BucketKind, id: string, now: Date): Promise<LimitDecision> {
    const policy = this.policy(kind);
    const bucket = `${kind === "agent" || kind === "address" ? kind : "key"}:${id}`;
    const nowMs = now.getTime();
    const refused = this.refusing.get(bucket, nowMs);
    if (refused) {
      // Refused moments ago and no token is due yet: answer without the database.
      const { tokens } = refill({ tokens: refused.tokens, updatedAtMs: refused.atMs }, nowMs, policy);
      return { allowed: false, tokens, policy, retryAfterSeconds: retryAfterSeconds(tokens, policy) };
    }
    const taken = await takeRateLimitToken(db, { bucket, quota: policy.quota, perMs: refillPerMs(policy), nowMs });
    if (taken.allowed) return { allowed: true, tokens: taken.tokens, policy, retryAfterSeconds: 0 };
    this.refusing.set(bucket, { untilMs: nowMs + msUntilToken(taken.tokens, policy), tokens: taken.tokens, atMs: nowMs });
    return { allowed: false, tokens: taken.tokens, policy, retryAfterSeconds: retryAfterSeconds(taken.tokens, policy) };
  }

  /** Whether this bearer token failed authentication here within the last few seconds. */
  recentlyFailed(token: string, now: Date): boolean {
    return this.failedTokens.get(token, now.getTime()) !== undefined;
  }

  noteFailed(token: string, now: Date): void {
    const ttlMs = this.config.failedAuthCacheSeconds * 1000;
    if (ttlMs > 0) this.failedTokens.set(token, { untilMs: now.getTime() + ttlMs });
  }
}

// Token buckets for request rate limits (docs/design.md §14.2): the arithmetic only, so the
// database's one-statement version (db/queries/rate-limits.ts) and the tests share one
// definition. A bucket holds at most `quota` tokens and gains `quota` per `windowSeconds`,
// continuously; a request takes one token or is refused. Times are epoch milliseconds.

export interface BucketPolicy {
  /** The policy's name in RateLimit-Policy / RateLimit (viewer, editor, admin, agent, address). */
  name: string;
  /** Burst size and tokens regained per window. */
  quota: number;
  windowSeconds: number;
}

export interface BucketState {
  /** Tokens left (fractional: refill is continuous). */
  tokens: number;
  /** When `tokens` was computed; never moves back, so a clock step backwards refills nothing. */
  updatedAtMs: number;
}

export interface Take {
  allowed: boolean;
  state: BucketState;
}

export function refillPerMs(policy: BucketPolicy): number {
  return policy.quota / (policy.windowSeconds * 1000);
}

/** The bucket at `nowMs`: refilled for the time since it was last computed, capped at the quota. */
export function refill(state: BucketState | undefined, nowMs: number, policy: BucketPolicy): BucketState {
  if (!state) return { tokens: policy.quota, updatedAtMs: nowMs };
  const elapsed = Math.max(0, nowMs - state.updatedAtMs);
  return {
    tokens: Math.min(policy.quota, state.tokens + elapsed * refillPerMs(policy)),
    updatedAtMs: Math.max(state.updatedAtMs, nowMs),
  };
}

/** Takes one token if there is one; a refused request takes nothing (it does not dig the hole deeper). */
export function take(state: BucketState | undefined, nowMs: number, policy: BucketPolicy): Take {
  const current = refill(state, nowMs, policy);
  if (current.tokens >= 1) return { allowed: true, state: { ...current, tokens: current.tokens - 1 } };
  return { allowed: false, state: current };
}

/** Whole seconds until the bucket holds one token again (Retry-After); at least 1. */
export function retryAfterSeconds(tokens: number, policy: BucketPolicy): number {
  if (tokens >= 1) return 0;
  return Math.max(1, Math.ceil((1 - tokens) / refillPerMs(policy) / 1000));
}

/** Milliseconds until one token is back, for remembering a refusal without asking again. */
export function msUntilToken(tokens: number, policy: BucketPolicy): number {
  return tokens >= 1 ? 0 : Math.ceil((1 - tokens) / refillPerMs(policy));
}

/** Whole seconds until the bucket is full again (the RateLimit field's `t`); at least 1 once a token is taken. */
export function secondsUntilFull(tokens: number, policy: BucketPolicy): number {
  const missing = policy.quota - tokens;
  if (missing <= 0) return 0;
  return Math.max(1, Math.ceil(missing / refillPerMs(policy) / 1000));
}

/**
 * The RateLimit-Policy and RateLimit header values (draft-ietf-httpapi-ratelimit-headers,
 * https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/): structured-field
 * lists of one item, the policy name as an sf-string with q (quota) and w (window, seconds),
 * and r (remaining whole tokens) and t (seconds until the quota is whole again).
 */
export function rateLimitHeaders(tokens: number, policy: BucketPolicy): { policy: string; limit: string } {
  const name = sfString(policy.name);
  return {
    policy: `${name};q=${policy.quota};w=${policy.windowSeconds}`,
    limit: `${name};r=${Math.max(0, Math.floor(tokens))};t=${secondsUntilFull(tokens, policy)}`,
  };
}

function sfString(text: string): string {
  return `"${text.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`;
}

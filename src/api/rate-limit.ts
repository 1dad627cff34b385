// Request rate limits at the edge of /v1 (docs/design.md §14.2): which bucket a request
// takes from, the RateLimit-Policy / RateLimit headers on what passed, 429 on what did not,
// and the per-key slots of streams and long-polls. The arithmetic is src/domain/token-bucket.ts.
import type { Context } from "hono";
import { resolveClientAddress } from "../domain/client-address.ts";
import { RateLimited } from "../domain/errors.ts";
import type { Principal } from "../domain/principal.ts";
import { rateLimitHeaders } from "../domain/token-bucket.ts";
import type { BucketKind } from "../services/rate-limits/config.ts";
import type { SlotKind } from "../services/rate-limits/open-slots.ts";
import type { AppEnv } from "./env.ts";

/** The address unauthenticated and failed-auth traffic counts against ("unknown" when the runtime gives none). */
export function clientAddress(c: Context<AppEnv>): string {
  const { peerAddress, config } = c.get("deps");
  const address = resolveClientAddress(peerAddress?.(c), c.req.header("X-Forwarded-For"), config.rateLimits.trustedProxies);
  return address ?? "unknown";
}

/** Charges the request to the client's address bucket. */
export function limitAddress(c: Context<AppEnv>): Promise<void> {
  return limit(c, "address", clientAddress(c));
}

/** Charges the request to its key's bucket (by role) or its agent credential's. */
export function limitPrincipal(c: Context<AppEnv>, principal: Principal): Promise<void> {
  return principal.kind === "agent" ? limit(c, "agent", principal.credentialId) : limit(c, principal.role, principal.keyId);
}

async function limit(c: Context<AppEnv>, kind: BucketKind, id: string): Promise<void> {
  const { limiter, db, clock, logger } = c.get("deps");
  if (!limiter?.enabled) return;
  let decision;
  try {
    decision = await limiter.take(db, kind, id, clock.now());
  } catch (error) {
    // The limiter fails open: a database that cannot take a token fails the request's own work anyway.
    logger.warn({ requestId: c.get("requestId"), err: String(error) }, "rate limit check failed; request not limited");
    return;
  }
  const headers = rateLimitHeaders(decision.tokens, decision.policy);
  c.header("RateLimit-Policy", headers.policy);
  c.header("RateLimit", headers.limit);
  if (decision.allowed) return;
  const { policy } = decision;
  throw new RateLimited(
    `The "${policy.name}" rate limit (${policy.quota} requests per ${policy.windowSeconds} s) is used up; retry after ${decision.retryAfterSeconds} s.`,
    policy.name,
    policy.quota,
    policy.windowSeconds,
    decision.retryAfterSeconds,
  );
}

/** Who holds a stream or long-poll slot: the key or the agent credential. */
function slotHolder(principal: Principal): string {
  return principal.kind === "agent" ? `agent:${principal.credentialId}` : `key:${principal.keyId}`;
}

/** Takes a stream or long-poll slot for the caller (429 over the cap); call the result when it ends. */
export function holdSlot(c: Context<AppEnv>, kind: SlotKind): () => void {
  const { openSlots, config } = c.get("deps");
  if (!openSlots) return () => {};
  const cap = kind === "stream" ? config.rateLimits.streamsPerKey : config.rateLimits.longPollsPerKey;
  return openSlots.acquire(kind, slotHolder(c.get("principal")), cap);
}

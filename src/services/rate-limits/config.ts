// What the rate limiter and the caps read (docs/design.md §14.2); BERTH_RATE_LIMIT_* in
// src/api/config.ts. The defaults are generous: they stop floods, not busy clients.
import type { Cidr } from "../../domain/client-address.ts";
import type { KeyRole } from "../../domain/principal.ts";

export type BucketKind = KeyRole | "agent" | "address";

export interface RateLimitConfig {
  /** BERTH_RATE_LIMIT: false turns the request buckets off (the caps below stay). */
  enabled: boolean;
  /** BERTH_RATE_LIMIT_WINDOW_SECONDS: the window each quota refills over. */
  windowSeconds: number;
  /** Requests per window, and the burst, per API key by role, per agent credential, per client address. */
  quotas: Record<BucketKind, number>;
  /** How long a token that failed authentication is refused without asking the database. */
  failedAuthCacheSeconds: number;
  /** Open SSE streams per key or credential on one instance (0 = no cap). */
  streamsPerKey: number;
  /** Open long-polls (GET /v1/agent/desired) per credential on one instance (0 = no cap). */
  longPollsPerKey: number;
  /** Webhook endpoints per project (and installation-wide ones together). */
  webhooksPerProject: number;
  /** BERTH_TRUSTED_PROXIES: peers whose X-Forwarded-For is believed. */
  trustedProxies: readonly Cidr[];
}

export const DEFAULT_RATE_LIMITS: RateLimitConfig = {
  enabled: true,
  windowSeconds: 60,
  quotas: { viewer: 1200, editor: 1200, admin: 2400, agent: 1200, address: 300 },
  failedAuthCacheSeconds: 10,
  streamsPerKey: 16,
  longPollsPerKey: 4,
  webhooksPerProject: 20,
  trustedProxies: [],
};

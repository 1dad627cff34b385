// What every service verb receives: the database, the clock, the caller and the app
// configuration. Built per request by the API; services never read globals.
import type { Db } from "../../db/client.ts";
import type { Clock } from "../domain/clock.ts";
import type { Principal } from "../domain/principal.ts";
import type { SecretKeyring } from "../domain/secret-envelope.ts";
import { DEFAULT_RETENTION_WINDOWS, type RetentionWindows } from "../domain/retention.ts";
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from "../domain/webhook-retry.ts";
import type { PrincipalCache } from "./auth/principal-cache.ts";
import { DEFAULT_RATE_LIMITS, type RateLimitConfig } from "./rate-limits/config.ts";
import type { NotificationHub } from "./notifications/notification-hub.ts";
import type { WebhookTransport } from "./webhooks/transport.ts";

export interface ServiceContext {
  db: Db;
  clock: Clock;
  principal: Principal;
  config: AppConfig;
  /** This instance's memory of recently authenticated tokens; absent = none. */
  principals?: PrincipalCache;
  /** How webhooks resolve and reach receivers (runtime-specific, from the entry); absent = plain fetch. */
  webhookTransport?: WebhookTransport;
  /** This instance's LISTEN session: change wake-ups and revocation notices; absent = poll. */
  notifications?: NotificationHub;
}

/** Context for work done before a caller is known (authentication, bootstrap). */
export type SystemContext = Omit<ServiceContext, "principal">;

/** What the API app itself needs (no ports, no paths: those belong to the entry file). */
export interface AppConfig {
  /** BERTH_ADMIN_TOKEN: accepted as an installation-admin key when set. */
  adminToken?: string;
  /** BERTH_METRICS_TOKEN: when set, GET /metrics needs it as a bearer token; unset = open. */
  metricsToken?: string;
  /** Largest accepted request body in bytes. */
  maxBodyBytes: number;
  /** How long an Idempotency-Key is remembered. */
  idempotencyTtlSeconds: number;
  /** How long an instance may reuse a token's principal without asking the database (0 = never). */
  authCacheSeconds: number;
  /** How often an open event or watch stream looks for changes where no NOTIFY arrives (Neon). */
  streamPollMs: number;
  /** With NOTIFY: how long a stream sleeps at most without a notice (survives a lost one). */
  streamFallbackMs: number;
  /** BERTH_AGENT_CREDENTIAL_OVERLAP_SECONDS: how long a rotated agent credential keeps working. */
  agentCredentialOverlapSeconds: number;
  /** After this long without an event, a stream sends a comment so proxies keep it open. */
  streamHeartbeatMs: number;
  /** BERTH_CORS_ORIGINS: exact origins a browser page may call from; empty = no CORS. */
  corsOrigins: readonly string[];
  webhooks: WebhookConfig;
  /** Request rate limits and caps on streams, long-polls and webhook endpoints (docs/design.md §14.2). */
  rateLimits: RateLimitConfig;
  /**
   * BERTH_SECRET_KEY (seals) and BERTH_SECRET_KEYS_PREVIOUS (still open): what stored secrets are
   * encrypted with (docs/design.md §14.3). The serve entries always set it; only an app that
   * stores nothing (the OpenAPI generator) goes without, and then sealing or opening throws.
   */
  secretKeys?: SecretKeyring;
  retention: RetentionConfig;
}

/** Retention (docs/design.md §14.5). */
export interface RetentionConfig {
  /** BERTH_RETENTION_*_HOURS: how long each table keeps rows (null: forever). */
  windows: RetentionWindows;
  /** Rows one purge statement deletes at most. */
  batchSize: number;
  /** Batches per table one maintenance pass runs at most; the rest waits for the next pass. */
  maxBatchesPerPass: number;
  /**
   * VACUUM each table a pass purged rows from. For embedded PGlite, which runs no autovacuum:
   * without it deleted rows' space is never reused and the files only grow. PostgreSQL and Neon
   * leave it to autovacuum.
   */
  vacuumAfterPurge: boolean;
}

/** Webhook delivery (docs/design.md §10). */
export interface WebhookConfig {
  /** BERTH_WEBHOOK_RETRY_SCHEDULE: seconds before each retry (jittered ±10%). */
  retryScheduleSeconds: readonly number[];
  /** BERTH_WEBHOOK_ALLOW_PRIVATE: lift the SSRF guard (local use and tests only). */
  allowPrivateAddresses: boolean;
  /** BERTH_WEBHOOK_ALLOW_HTTP: accept http:// URLs besides https:// (development installs only). */
  allowHttp: boolean;
  /** Per attempt, from connecting to the response headers. */
  timeoutMs: number;
  /** How long a claimed delivery belongs to its dispatcher before it is due again. */
  leaseSeconds: number;
  /** An endpoint whose attempts have all failed for this long is disabled. */
  disableAfterFailingMs: number;
  /** After a rotation, how long the previous secret keeps signing. */
  previousSecretTtlMs: number;
  /** Deliveries one dispatch pass claims and sends at once. */
  claimBatch: number;
  /** Of those, at most this many to any one endpoint. */
  endpointConcurrency: number;
  /** Events one dispatch fans out. */
  fanoutBatch: number;
}

export const DEFAULT_APP_CONFIG: AppConfig = {
  maxBodyBytes: 1024 * 1024,
  idempotencyTtlSeconds: 24 * 60 * 60,
  authCacheSeconds: 5,
  streamPollMs: 500,
  streamFallbackMs: 10_000,
  agentCredentialOverlapSeconds: 600,
  streamHeartbeatMs: 15_000,
  corsOrigins: [],
  webhooks: {
    retryScheduleSeconds: DEFAULT_RETRY_SCHEDULE_SECONDS,
    allowPrivateAddresses: false,
    allowHttp: false,
    timeoutMs: 10_000,
    leaseSeconds: 30,
    disableAfterFailingMs: 3 * 24 * 60 * 60 * 1000,
    previousSecretTtlMs: 24 * 60 * 60 * 1000,
    claimBatch: 50,
    endpointConcurrency: 4,
    fanoutBatch: 500,
  },
  rateLimits: DEFAULT_RATE_LIMITS,
  retention: { windows: DEFAULT_RETENTION_WINDOWS, batchSize: 5000, maxBatchesPerPass: 20, vacuumAfterPurge: false },
};

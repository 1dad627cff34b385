// What every service verb receives: the database, the clock, the caller and the app
// configuration. Built per request by the API; services never read globals.
import type { Db } from "../../db/client.ts";
import type { Clock } from "../domain/clock.ts";
import type { Principal } from "../domain/principal.ts";
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from "../domain/webhook-retry.ts";
import type { PrincipalCache } from "./auth/principal-cache.ts";
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
}

/** Context for work done before a caller is known (authentication, bootstrap). */
export type SystemContext = Omit<ServiceContext, "principal">;

/** What the API app itself needs (no ports, no paths: those belong to the entry file). */
export interface AppConfig {
  /** BERTH_ADMIN_TOKEN: accepted as an installation-admin key when set. */
  adminToken?: string;
  /** Largest accepted request body in bytes. */
  maxBodyBytes: number;
  /** How long an Idempotency-Key is remembered. */
  idempotencyTtlSeconds: number;
  /** How long an instance may reuse a token's principal without asking the database (0 = never). */
  authCacheSeconds: number;
  /** How often an open event or watch stream looks for changes. */
  streamPollMs: number;
  /** After this long without an event, a stream sends a comment so proxies keep it open. */
  streamHeartbeatMs: number;
  /** BERTH_CORS_ORIGINS: exact origins a browser page may call from; empty = no CORS. */
  corsOrigins: readonly string[];
  webhooks: WebhookConfig;
}

/** Webhook delivery (docs/design.md §10). */
export interface WebhookConfig {
  /** BERTH_WEBHOOK_RETRY_SCHEDULE: seconds before each retry (jittered ±10%). */
  retryScheduleSeconds: readonly number[];
  /** BERTH_WEBHOOK_ALLOW_PRIVATE: lift the SSRF guard (local use and tests only). */
  allowPrivateAddresses: boolean;
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
  streamHeartbeatMs: 15_000,
  corsOrigins: [],
  webhooks: {
    retryScheduleSeconds: DEFAULT_RETRY_SCHEDULE_SECONDS,
    allowPrivateAddresses: false,
    timeoutMs: 10_000,
    leaseSeconds: 30,
    disableAfterFailingMs: 3 * 24 * 60 * 60 * 1000,
    previousSecretTtlMs: 24 * 60 * 60 * 1000,
    claimBatch: 50,
    endpointConcurrency: 4,
    fanoutBatch: 500,
  },
};

// What every service verb receives: the database, the clock, the caller and the app
// configuration. Built per request by the API; services never read globals.
import type { Db } from "../../db/client.ts";
import type { Clock } from "../domain/clock.ts";
import type { Principal } from "../domain/principal.ts";
import type { PrincipalCache } from "./auth/principal-cache.ts";

export interface ServiceContext {
  db: Db;
  clock: Clock;
  principal: Principal;
  config: AppConfig;
  /** This instance's memory of recently authenticated tokens; absent = none. */
  principals?: PrincipalCache;
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
}

export const DEFAULT_APP_CONFIG: AppConfig = {
  maxBodyBytes: 1024 * 1024,
  idempotencyTtlSeconds: 24 * 60 * 60,
  authCacheSeconds: 5,
  streamPollMs: 500,
  streamHeartbeatMs: 15_000,
};

// The Hono environment of the API: what the composition root provides (deps) and what
// middleware attaches per request (principal, request id).
import type { Context } from "hono";
import type { Db } from "../../db/client.ts";
import type { Clock } from "../domain/clock.ts";
import type { Principal } from "../domain/principal.ts";
import type { PrincipalCache } from "../services/auth/principal-cache.ts";
import type { OpenSlots } from "../services/rate-limits/open-slots.ts";
import type { RequestLimiter } from "../services/rate-limits/request-limiter.ts";
import type { NotificationHub } from "../services/notifications/notification-hub.ts";
import type { AppConfig, ServiceContext, SystemContext } from "../services/context.ts";
import type { WebhookTransport } from "../services/webhooks/transport.ts";

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface AppDeps {
  db: Db;
  clock: Clock;
  config: AppConfig;
  logger: Logger;
  /** Recently authenticated tokens of this instance (built by createApp). */
  principals?: PrincipalCache;
  /** Resolves when the database answers; /readyz calls it. */
  checkDatabase(): Promise<void>;
  /** How webhooks resolve hosts and reach receivers (runtime-specific); absent = plain fetch, no pinning. */
  webhookTransport?: WebhookTransport;
  /** Aborted when this instance begins to stop: long-polls answer at once instead of holding the close. */
  shutdown?: AbortSignal;
  /** The socket's peer address, from the runtime's connection info (absent or undefined: unknown). */
  peerAddress?: (c: Context<AppEnv>) => string | undefined;
  /** Request rate limits (built by createApp). */
  limiter?: RequestLimiter;
  /** This instance's open streams and long-polls per key (built by createApp). */
  openSlots?: OpenSlots;
  /** This instance's notification hub (one LISTEN session); createApp builds one when absent. */
  notifications?: NotificationHub;
}

export type AppEnv = {
  Variables: {
    deps: AppDeps;
    principal: Principal;
    requestId: string;
  };
};

export function systemContext(c: Context<AppEnv>): SystemContext {
  const { db, clock, config, principals, webhookTransport, notifications } = c.get("deps");
  return { db, clock, config, principals, webhookTransport, notifications };
}

/** The request's abort signal, also aborted when the instance begins to stop. */
export function requestSignal(c: Context<AppEnv>): AbortSignal {
  const shutdown = c.get("deps").shutdown;
  return shutdown ? AbortSignal.any([c.req.raw.signal, shutdown]) : c.req.raw.signal;
}

export function serviceContext(c: Context<AppEnv>): ServiceContext {
  return { ...systemContext(c), principal: c.get("principal") };
}

/** A JSON logger that needs no dependency, for runtimes where pino is not wanted. */
export const consoleLogger: Logger = {
  info: (obj, msg) => console.log(JSON.stringify({ level: "info", time: Date.now(), ...obj, msg })),
  warn: (obj, msg) => console.warn(JSON.stringify({ level: "warn", time: Date.now(), ...obj, msg })),
  error: (obj, msg) => console.error(JSON.stringify({ level: "error", time: Date.now(), ...obj, msg })),
};

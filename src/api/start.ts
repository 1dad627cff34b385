// What every long-running entry (Node, Deno) does before it serves: open the database,
// migrate, bootstrap an empty installation (printing its admin key once), build the app
// with Prometheus metrics, run housekeeping on a timer and the webhook dispatcher loop.
// Runtime specifics — making a directory, writing to stderr, logs, the docs bundle, the
// webhook transport — are passed in.
import { prometheus } from "@hono/prometheus";
import { Registry } from "prom-client";
import { createDatabase, inferDriver, type Database } from "../../db/client.ts";
import { systemClock } from "../domain/clock.ts";
import { bootstrapInstallation } from "../services/bootstrap.ts";
import { DEFAULT_APP_CONFIG, type AppConfig } from "../services/context.ts";
import { MAINTENANCE_INTERVAL_MS, runMaintenance } from "../services/maintenance.ts";
import { dispatchWebhooks } from "../services/webhooks/dispatch-webhooks.ts";
import type { WebhookTransport } from "../services/webhooks/transport.ts";
import { createApp } from "./app.ts";
import type { Config } from "./config.ts";
import type { DocsAssets } from "./docs.ts";
import type { Logger } from "./env.ts";
import { startWebhookDispatcher } from "./webhook-dispatcher.ts";

export interface EntryRuntime {
  logger: Logger;
  docsAssets?: DocsAssets;
  /** Writes a notice for the operator (stderr). */
  notify(text: string): void;
  /** Creates a directory and its parents (for the embedded database). */
  makeDirectory(path: string): Promise<void>;
  /** Resolves webhook hosts and connects to the checked address (absent: plain fetch, no pinning). */
  webhookTransport?: WebhookTransport;
}

export async function openDatabase(config: Config, makeDirectory: EntryRuntime["makeDirectory"]): Promise<Database> {
  const driver = config.databaseDriver ?? inferDriver(config.databaseUrl);
  let url = config.databaseUrl;
  if (driver === "pglite" && !url) {
    url = `${config.dataDir.replace(/\/+$/, "")}/db`;
    await makeDirectory(url);
  }
  if (!url) throw new Error(`DATABASE_URL is required with DATABASE_DRIVER=${driver}`);
  return createDatabase({ driver, url });
}

export interface PreparedApi {
  app: ReturnType<typeof createApp>;
  database: Database;
  /** One webhook dispatch pass (the Deno entry's Deno.cron calls it). */
  dispatchOnce(): Promise<unknown>;
  /** Ends long-polls and streams at once, so the server's close is not held by them. */
  beginShutdown(): void;
  /** Stops housekeeping and the webhook dispatcher, and closes the database. */
  close(): Promise<void>;
}

export async function prepareApi(config: Config, runtime: EntryRuntime): Promise<PreparedApi> {
  const database = await openDatabase(config, runtime.makeDirectory);
  // With BERTH_MIGRATE=false the schema is the migrations Job's job (one run per version).
  if (config.migrateOnStart) await database.migrate();
  const appConfig: AppConfig = {
    ...DEFAULT_APP_CONFIG,
    adminToken: config.adminToken,
    authCacheSeconds: config.authCacheSeconds,
    corsOrigins: config.corsOrigins,
    webhooks: {
      ...DEFAULT_APP_CONFIG.webhooks,
      retryScheduleSeconds: config.webhookRetrySchedule,
      allowPrivateAddresses: config.webhookAllowPrivate,
    },
  };
  const ctx = { db: database.db, clock: systemClock, config: appConfig, webhookTransport: runtime.webhookTransport };
  const { adminToken } = await bootstrapInstallation({ ctx });
  if (adminToken) {
    // Printed once, on the first start of an empty database; only its hash is stored.
    runtime.notify(
      `\nberth: created the installation admin key (shown only now, store it):\n\n  ${adminToken}\n\n` +
        `  export BERTH_TOKEN=${adminToken}\n\n`,
    );
  }
  const { printMetrics, registerMetrics } = prometheus({
    registry: new Registry(),
    collectDefaultMetrics: true,
    prefix: "berth_api_",
  });
  const shutdown = new AbortController();
  const app = createApp({
    ...ctx,
    shutdown: shutdown.signal,
    logger: runtime.logger,
    checkDatabase: () => database.ping(),
    metrics: { middleware: registerMetrics, handler: printMetrics },
    docsAssets: runtime.docsAssets,
  });
  const maintenance = setInterval(() => {
    runMaintenance({ ctx }).catch((error: unknown) =>
      runtime.logger.warn({ err: String(error) }, "maintenance failed; will retry"),
    );
  }, MAINTENANCE_INTERVAL_MS);
  // Node: housekeeping alone must not keep the process alive.
  (maintenance as { unref?: () => void }).unref?.();
  const dispatcher = startWebhookDispatcher({
    ctx,
    logger: runtime.logger,
    listen: database.listen?.bind(database),
  });
  return {
    app,
    database,
    dispatchOnce: () => dispatchWebhooks({ ctx }),
    beginShutdown: () => shutdown.abort(),
    close: async () => {
      shutdown.abort();
      clearInterval(maintenance);
      await dispatcher.stop();
      await database.close();
    },
  };
}

// What every long-running entry (Node, Deno) does before it serves: open the database,
// migrate, bootstrap an empty installation (printing its admin key once), build the app
// with Prometheus metrics, run housekeeping on a timer and the webhook dispatcher loop.
// Runtime specifics — making a directory, writing to stderr, logs, the docs bundle, the
// webhook transport — are passed in.
import { prometheus } from "@hono/prometheus";
import { Registry } from "prom-client";
import { createDatabase, inferDriver, type Database } from "../../db/client.ts";
import { systemClock } from "../domain/clock.ts";
import { decodeSecretKey, generateSecretKey, loadKeyring, type SecretKeyring } from "../domain/secret-envelope.ts";
import { bootstrapInstallation } from "../services/bootstrap.ts";
import { DEFAULT_APP_CONFIG, type AppConfig } from "../services/context.ts";
import { errorForLog } from "../services/log-error.ts";
import { MAINTENANCE_INTERVAL_MS, runMaintenance } from "../services/maintenance.ts";
import { NotificationHub } from "../services/notifications/notification-hub.ts";
import { dispatchWebhooks } from "../services/webhooks/dispatch-webhooks.ts";
import { sealEndpointSecrets } from "../services/webhooks/endpoint-secrets.ts";
import type { WebhookTransport } from "../services/webhooks/transport.ts";
import { createApp } from "./app.ts";
import type { Config } from "./config.ts";
import type { DocsAssets } from "./docs.ts";
import type { AppDeps, Logger } from "./env.ts";
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
  /** The socket's peer address, from the runtime's connection info (rate limits per client address). */
  peerAddress?: AppDeps["peerAddress"];
  /** Reads and creates the generated server key file (absent: a PGlite start without BERTH_SECRET_KEY refuses). */
  keyFile?: KeyFileStore;
}

export interface KeyFileStore {
  /** The file's text, or undefined when there is no such file. */
  read(path: string): Promise<string | undefined>;
  /** Creates the file readable by its owner only (0600); false when it already exists (another start won). */
  create(path: string, text: string): Promise<boolean>;
}

/** A start refused for its configuration; the message names the variable and the way out. */
export class StartRefused extends Error {}

/** Where a PGlite installation without BERTH_SECRET_KEY keeps the key it generated. */
export const SECRET_KEY_FILE = "secret-key";

/**
 * The keyring from BERTH_SECRET_KEY and BERTH_SECRET_KEYS_PREVIOUS. Without a key, a local
 * (PGlite) installation generates one beside its database, once; a shared database
 * (PostgreSQL, Neon) refuses, since every instance must hold the same key and a key made up
 * by one of them would leave the others unable to read what it sealed.
 */
export async function resolveSecretKeys(config: Config, runtime: EntryRuntime): Promise<SecretKeyring> {
  const previous = config.previousSecretKeys;
  if (config.secretKey) return loadKeyring(config.secretKey, previous);
  const driver = config.databaseDriver ?? inferDriver(config.databaseUrl);
  if (driver !== "pglite") {
    throw new StartRefused(
      `BERTH_SECRET_KEY is required with a ${driver} database: it encrypts webhook secrets and stored Idempotency-Key ` +
        "responses. Generate one with `openssl rand -base64 32`, give every API instance the same value, and keep it " +
        "with the database's backups (without it they cannot be read).",
    );
  }
  if (config.databaseUrl?.startsWith("memory://")) {
    runtime.logger.info({}, "BERTH_SECRET_KEY is not set; generated a key for this in-memory database (it ends with the process)");
    return loadKeyring(decodeSecretKey(generateSecretKey()), previous);
  }
  if (!runtime.keyFile) {
    throw new StartRefused("BERTH_SECRET_KEY is not set and this runtime cannot keep a key file; set it (`openssl rand -base64 32`).");
  }
  const path = `${config.dataDir.replace(/\/+$/, "")}/${SECRET_KEY_FILE}`;
  let text = await runtime.keyFile.read(path);
  if (text === undefined) {
    await runtime.makeDirectory(config.dataDir);
    if (await runtime.keyFile.create(path, generateSecretKey() + "\n")) {
      runtime.logger.warn(
        { path },
        "BERTH_SECRET_KEY is not set; generated a server key into the data directory (mode 0600). Back it up with the data directory: stored secrets cannot be read without it",
      );
    }
    text = await runtime.keyFile.read(path);
  }
  try {
    return await loadKeyring(decodeSecretKey(text ?? ""), previous);
  } catch (error) {
    throw new StartRefused(`${path} does not hold a server key (${(error as Error).message}); restore it from a backup or set BERTH_SECRET_KEY.`);
  }
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
  // Before the database opens: a start without its key must not touch anything.
  const secretKeys = await resolveSecretKeys(config, runtime);
  const database = await openDatabase(config, runtime.makeDirectory);
  // With BERTH_MIGRATE=false the schema is the migrations Job's job (one run per version).
  if (config.migrateOnStart) await database.migrate();
  const appConfig: AppConfig = {
    ...DEFAULT_APP_CONFIG,
    secretKeys,
    adminToken: config.adminToken,
    metricsToken: config.metricsToken,
    authCacheSeconds: config.authCacheSeconds,
    agentCredentialOverlapSeconds: config.agentCredentialOverlapSeconds,
    corsOrigins: config.corsOrigins,
    webhooks: {
      ...DEFAULT_APP_CONFIG.webhooks,
      retryScheduleSeconds: config.webhookRetrySchedule,
      allowPrivateAddresses: config.webhookAllowPrivate,
      allowHttp: config.webhookAllowHttp,
      leaseSeconds: config.webhookLeaseSeconds,
    },
    rateLimits: config.rateLimits,
    retention: { ...DEFAULT_APP_CONFIG.retention, windows: config.retentionWindows, vacuumAfterPurge: database.driver === "pglite" },
  };
  const ctx = { db: database.db, clock: systemClock, config: appConfig, webhookTransport: runtime.webhookTransport };
  // Clear text from before secrets were sealed, and values under an older key: sealed now, before serving.
  const resealed = await sealEndpointSecrets(ctx);
  if (resealed > 0) runtime.logger.info({ endpoints: resealed }, "sealed webhook secrets with the current server key");
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
  // One LISTEN session for this instance's streams, long-polls and revocation notices.
  const notifications = new NotificationHub({
    db: database.db,
    clock: systemClock,
    listen: database.listen?.bind(database),
    warn: (obj, msg) => runtime.logger.warn(obj, msg),
  });
  await notifications.start();
  const app = createApp({
    ...ctx,
    notifications,
    shutdown: shutdown.signal,
    logger: runtime.logger,
    checkDatabase: () => database.ping(),
    peerAddress: runtime.peerAddress,
    metrics: { middleware: registerMetrics, handler: printMetrics },
    docsAssets: runtime.docsAssets,
  });
  const maintenance = setInterval(() => {
    runMaintenance({ ctx }).catch((error: unknown) =>
      runtime.logger.warn({ error: errorForLog(error) }, "maintenance failed; will retry"),
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
      await notifications.close();
      await database.close();
    },
  };
}

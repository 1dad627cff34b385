// The Node entry of the API: open the database, migrate, bootstrap, and serve with
// pino logs and Prometheus metrics. Everything runtime-specific stays in this file.
import { serve, type ServerType } from "@hono/node-server";
import { prometheus } from "@hono/prometheus";
import { mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import pino from "pino";
import { Registry } from "prom-client";
import { createDatabase, inferDriver, type Database } from "../../db/client.ts";
import { systemClock } from "../domain/clock.ts";
import { bootstrapInstallation } from "../services/bootstrap.ts";
import { DEFAULT_APP_CONFIG } from "../services/context.ts";
import { createApp } from "./app.ts";
import type { Config } from "./config.ts";
import type { DocsAssets } from "./docs.ts";

export async function openDatabase(config: Config): Promise<Database> {
  const driver = config.databaseDriver ?? inferDriver(config.databaseUrl);
  let url = config.databaseUrl;
  if (driver === "pglite" && !url) {
    url = join(config.dataDir, "db");
    mkdirSync(url, { recursive: true });
  }
  if (!url) throw new Error(`DATABASE_URL is required with DATABASE_DRIVER=${driver}`);
  return createDatabase({ driver, url });
}

/** The /docs UI bundle from node_modules (the package exports no path to it, so go via its entry). */
export const nodeDocsAssets: DocsAssets = {
  scalarJs: async () => {
    const entry = createRequire(import.meta.url).resolve("@scalar/api-reference");
    return readFile(join(dirname(entry), "browser", "standalone.js"));
  },
};

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const logger = pino({ level: config.logLevel, base: { service: "berth-api" } });
  const database = await openDatabase(config);
  await database.migrate();
  const appConfig = { ...DEFAULT_APP_CONFIG, adminToken: config.adminToken, authCacheSeconds: config.authCacheSeconds };
  const { adminToken } = await bootstrapInstallation({ ctx: { db: database.db, clock: systemClock, config: appConfig } });
  if (adminToken) {
    // Printed once, on the first start of an empty database; only its hash is stored.
    process.stderr.write(
      `\nberth: created the installation admin key (shown only now, store it):\n\n  ${adminToken}\n\n` +
        `  export BERTH_TOKEN=${adminToken}\n\n`,
    );
  }
  const registry = new Registry();
  const { printMetrics, registerMetrics } = prometheus({ registry, collectDefaultMetrics: true, prefix: "berth_api_" });
  const app = createApp({
    db: database.db,
    clock: systemClock,
    config: appConfig,
    logger,
    checkDatabase: () => database.ping(),
    metrics: { middleware: registerMetrics, handler: printMetrics },
    docsAssets: nodeDocsAssets,
  });
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, () => resolve(s));
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const url = `http://${config.host}:${port}`;
  logger.info({ url, driver: database.driver }, "berth API listening");
  return {
    url,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await database.close();
    },
  };
}

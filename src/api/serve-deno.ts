// The Deno entry of the API: `deno task serve`. Open the database, migrate, bootstrap and
// serve app.fetch with Deno.serve; imports resolve through npm's node_modules
// (deno.json "nodeModulesDir": "manual"). Everything Deno-specific stays in this file.
import { prometheus } from "@hono/prometheus";
import { Registry } from "prom-client";
import { createDatabase, inferDriver, type Database } from "../../db/client.ts";
import { systemClock } from "../domain/clock.ts";
import { bootstrapInstallation } from "../services/bootstrap.ts";
import { DEFAULT_APP_CONFIG } from "../services/context.ts";
import { createApp } from "./app.ts";
import { parseConfig, type Config } from "./config.ts";
import type { DocsAssets } from "./docs.ts";
import { consoleLogger, type Logger } from "./env.ts";

// The slice of the Deno namespace this file uses, declared here so `tsc` (which has no Deno
// types) checks the file too; at run time `Deno` is the real global.
declare const Deno: {
  env: { toObject(): Record<string, string> };
  mkdir(path: string, options: { recursive: boolean }): Promise<void>;
  readFile(path: URL): Promise<Uint8Array>;
  stderr: { writeSync(bytes: Uint8Array): number };
  addSignalListener(signal: "SIGINT" | "SIGTERM", handler: () => void): void;
  exit(code: number): never;
  serve(
    options: { hostname: string; port: number; onListen?: (address: { hostname: string; port: number }) => void },
    handler: (request: Request) => Response | Promise<Response>,
  ): { finished: Promise<void>; shutdown(): Promise<void> };
};

const LEVELS = ["trace", "debug", "info", "warn", "error", "silent"] as const;

/** consoleLogger, quiet below LOG_LEVEL (pino stays on Node; this entry needs no dependency for logs). */
function leveledLogger(level: Config["logLevel"]): Logger {
  const min = LEVELS.indexOf(level);
  const on = (at: (typeof LEVELS)[number]) => LEVELS.indexOf(at) >= min;
  return {
    info: (obj, msg) => on("info") && consoleLogger.info(obj, msg),
    warn: (obj, msg) => on("warn") && consoleLogger.warn(obj, msg),
    error: (obj, msg) => on("error") && consoleLogger.error(obj, msg),
  };
}

async function openDatabase(config: Config): Promise<Database> {
  const driver = config.databaseDriver ?? inferDriver(config.databaseUrl);
  let url = config.databaseUrl;
  if (driver === "pglite" && !url) {
    url = `${config.dataDir.replace(/\/+$/, "")}/db`;
    await Deno.mkdir(url, { recursive: true });
  }
  if (!url) throw new Error(`DATABASE_URL is required with DATABASE_DRIVER=${driver}`);
  return createDatabase({ driver, url });
}

/** The /docs UI bundle, from the node_modules that deno.json points imports at. */
const denoDocsAssets: DocsAssets = {
  scalarJs: () => Deno.readFile(new URL("../../node_modules/@scalar/api-reference/dist/browser/standalone.js", import.meta.url)),
};

async function main(): Promise<void> {
  let config: Config;
  try {
    config = parseConfig(Deno.env.toObject());
  } catch (error) {
    console.error(`berth: ${(error as Error).message}`);
    Deno.exit(2);
  }
  const logger = leveledLogger(config.logLevel);
  const database = await openDatabase(config);
  await database.migrate();
  const appConfig = { ...DEFAULT_APP_CONFIG, adminToken: config.adminToken, authCacheSeconds: config.authCacheSeconds };
  const { adminToken } = await bootstrapInstallation({ ctx: { db: database.db, clock: systemClock, config: appConfig } });
  if (adminToken) {
    // Printed once, on the first start of an empty database; only its hash is stored.
    Deno.stderr.writeSync(
      new TextEncoder().encode(
        `\nberth: created the installation admin key (shown only now, store it):\n\n  ${adminToken}\n\n` +
          `  export BERTH_TOKEN=${adminToken}\n\n`,
      ),
    );
  }
  const { printMetrics, registerMetrics } = prometheus({
    registry: new Registry(),
    collectDefaultMetrics: true,
    prefix: "berth_api_",
  });
  const app = createApp({
    db: database.db,
    clock: systemClock,
    config: appConfig,
    logger,
    checkDatabase: () => database.ping(),
    metrics: { middleware: registerMetrics, handler: printMetrics },
    docsAssets: denoDocsAssets,
  });
  const server = Deno.serve(
    {
      hostname: config.host,
      port: config.port,
      onListen: ({ port }) =>
        logger.info({ url: `http://${config.host}:${port}`, driver: database.driver, runtime: "deno" }, "berth API listening"),
    },
    app.fetch,
  );
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await server.shutdown();
    await database.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

await main();

// The Deno entry of the API: `deno task serve`. Prepare the API (src/api/start.ts) and
// serve app.fetch with Deno.serve; imports resolve through npm's node_modules
// (deno.json "nodeModulesDir": "manual"). Everything Deno-specific stays in this file.
import { parseConfig, type Config } from "./config.ts";
import type { DocsAssets } from "./docs.ts";
import { consoleLogger, type Logger } from "./env.ts";
import { errorForLog } from "../services/log-error.ts";
import { prepareApi, StartRefused } from "./start.ts";
import { nodeWebhookTransport } from "./webhook-transport-node.ts";

// The slice of the Deno namespace this file uses, declared here so `tsc` (which has no Deno
// types) checks the file too; at run time `Deno` is the real global.
declare const Deno: {
  env: { toObject(): Record<string, string> };
  mkdir(path: string, options: { recursive: boolean }): Promise<void>;
  readFile(path: URL): Promise<Uint8Array>;
  readTextFile(path: string): Promise<string>;
  writeTextFile(path: string, text: string, options: { mode: number; createNew: boolean }): Promise<void>;
  errors: { NotFound: new () => Error; AlreadyExists: new () => Error };
  stderr: { writeSync(bytes: Uint8Array): number };
  addSignalListener(signal: "SIGINT" | "SIGTERM", handler: () => void): void;
  exit(code: number): never;
  /** Present with --unstable-cron and on Deno Deploy. */
  cron?(name: string, schedule: string, handler: () => Promise<void>): Promise<void>;
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
  const api = await prepareApi(config, {
    logger,
    docsAssets: denoDocsAssets,
    notify: (text) => Deno.stderr.writeSync(new TextEncoder().encode(text)),
    makeDirectory: (path) => Deno.mkdir(path, { recursive: true }),
    webhookTransport: nodeWebhookTransport,
    // Deno.serve passes its ServeHandlerInfo as the second argument of fetch, which Hono keeps as c.env.
    peerAddress: (c) => (c.env as { remoteAddr?: { hostname?: string } } | undefined)?.remoteAddr?.hostname,
    keyFile: {
      read: (path) => Deno.readTextFile(path).catch((error: unknown) => (error instanceof Deno.errors.NotFound ? undefined : Promise.reject(error))),
      create: (path, text) =>
        Deno.writeTextFile(path, text, { mode: 0o600, createNew: true }).then(
          () => true,
          (error: unknown) => (error instanceof Deno.errors.AlreadyExists ? false : Promise.reject(error)),
        ),
    },
  }).catch((error: unknown) => {
    if (!(error instanceof StartRefused)) throw error;
    console.error(`berth: ${error.message}`);
    Deno.exit(2);
  });
  // The dispatcher loop runs while this process lives; Deno.cron also runs a pass every
  // minute where isolates sleep between requests (Deno Deploy). Passes may overlap safely.
  if (typeof Deno.cron === "function") {
    void Deno.cron("berth webhook dispatch", "* * * * *", async () => {
      await api.dispatchOnce().catch((error: unknown) => logger.warn({ error: errorForLog(error) }, "webhook cron pass failed"));
    });
  }
  const server = Deno.serve(
    {
      hostname: config.host,
      port: config.port,
      onListen: ({ port }) =>
        logger.info({ url: `http://${config.host}:${port}`, driver: api.database.driver, runtime: "deno" }, "berth API listening"),
    },
    api.app.fetch,
  );
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    api.beginShutdown(); // long-polls and streams answer now, so shutdown() is not held by them
    await server.shutdown();
    await api.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

await main();

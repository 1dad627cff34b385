// The Node entry of the API: prepare it (src/api/start.ts) and serve it with
// @hono/node-server, pino logs, the docs bundle read from node_modules and the pinning
// webhook transport.
import { serve, type ServerType } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import pino from "pino";
import type { Database } from "../../db/client.ts";
import { earlyAnswerServerOptions } from "../node-http/early-answers.ts";
import type { Config } from "./config.ts";
import type { DocsAssets } from "./docs.ts";
import { openDatabase as openEntryDatabase, prepareApi, type KeyFileStore } from "./start.ts";
import { nodeWebhookTransport } from "./webhook-transport-node.ts";

const makeDirectory = async (path: string) => void (await mkdir(path, { recursive: true }));

export function openDatabase(config: Config): Promise<Database> {
  return openEntryDatabase(config, makeDirectory);
}

/** The generated server key file: created exclusively (wx), owner-only. */
export const nodeKeyFile: KeyFileStore = {
  read: async (path) => {
    try {
      return await readFile(path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  },
  create: async (path, text) => {
    try {
      await writeFile(path, text, { mode: 0o600, flag: "wx" });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw error;
    }
  },
};

/** The /docs UI bundle from node_modules (the package exports no path to it, so go via its entry). */
export const nodeDocsAssets: DocsAssets = {
  scalarJs: async () => {
    const entry = createRequire(import.meta.url).resolve("@scalar/api-reference");
    return readFile(join(dirname(entry), "browser", "standalone.js"));
  },
};

/**
 * How the API is served on Node: answers sent before the body was read keep the connection
 * usable (src/node-http/early-answers.ts owns that, so @hono/node-server's own clean-up of
 * unread bodies, which closes a socket that advertised keep-alive, is off).
 */
export function nodeServeOptions(fetch: (request: Request) => Response | Promise<Response>, port: number, hostname: string) {
  return { fetch, port, hostname, serverOptions: earlyAnswerServerOptions, autoCleanupIncoming: false };
}

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const logger = pino({ level: config.logLevel, base: { service: "berth-api" } });
  const api = await prepareApi(config, {
    logger,
    docsAssets: nodeDocsAssets,
    notify: (text) => process.stderr.write(text),
    makeDirectory,
    webhookTransport: nodeWebhookTransport,
    peerAddress: (c) => getConnInfo(c).remote.address,
    keyFile: nodeKeyFile,
  });
  let server: ServerType;
  try {
    server = await new Promise<ServerType>((resolve, reject) => {
      const s = serve(nodeServeOptions(api.app.fetch, config.port, config.host), () => {
        s.off("error", reject);
        resolve(s);
      });
      // A port in use (EADDRINUSE) is the caller's to report, not an unhandled 'error' event.
      s.once("error", reject);
    });
  } catch (error) {
    await api.close();
    throw error;
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const url = `http://${config.host}:${port}`;
  logger.info({ url, driver: api.database.driver }, "berth API listening");
  return {
    url,
    close: async () => {
      // server.close() waits for every open socket, and a keep-alive client that sends its next
      // request at once (the agent's long-poll) never lets one go: each now closes after its next answer.
      if ("maxRequestsPerSocket" in server) server.maxRequestsPerSocket = 1;
      // Long-polls and event streams answer now rather than after their wait.
      api.beginShutdown();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await api.close();
    },
  };
}

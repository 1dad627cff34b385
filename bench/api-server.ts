// The server side of bench/api.ts, run as its own process so the load generator does not
// share an event loop with it: the real API (startServer, Node entry) and, in the same
// process, a bare Hono route as the baseline. Prints one JSON line with both URLs.
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { parseConfig } from "../src/api/config.ts";
import { startServer } from "../src/api/serve-node.ts";

const api = await startServer(parseConfig(process.env));

const bareApp = new Hono();
bareApp.get("/hello", (c) => c.text("ok"));
const bare = await new Promise<ServerType>((resolve) => {
  const server = serve({ fetch: bareApp.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(server));
});
const address = bare.address();
const barePort = typeof address === "object" && address ? address.port : 0;

process.stdout.write(JSON.stringify({ api: api.url, bare: `http://127.0.0.1:${barePort}` }) + "\n");

const stop = async () => {
  await new Promise<void>((resolve) => bare.close(() => resolve()));
  await api.close();
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);

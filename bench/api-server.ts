// The server side of bench/api.ts, run as its own process so the load generator does not
// share an event loop with it: the real API (startServer, Node entry) and, in the same
// process, a bare Hono route as the baseline and a bare route doing one raw PostgreSQL
// read as the floor of any database-backed API. Prints one JSON line with both URLs.
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import pg from "pg";
import { parseConfig } from "../src/api/config.ts";
import { startServer } from "../src/api/serve-node.ts";

const api = await startServer(parseConfig(process.env));

const bareApp = new Hono();
bareApp.get("/hello", (c) => c.text("ok"));
// The floor of any API that reads PostgreSQL per request: one prepared primary-key read
// with raw node-postgres, no auth, no validation, the row returned as JSON.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
bareApp.get("/hello-db/:id", async (c) => {
  const result = await pool.query({
    name: "bench_floor_read",
    text: "select id, name, spec, status from deployments where id = $1",
    values: [c.req.param("id")],
  });
  return c.json(result.rows[0] ?? null);
});
const bare = await new Promise<ServerType>((resolve) => {
  const server = serve({ fetch: bareApp.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(server));
});
const address = bare.address();
const barePort = typeof address === "object" && address ? address.port : 0;

process.stdout.write(JSON.stringify({ api: api.url, bare: `http://127.0.0.1:${barePort}` }) + "\n");

const stop = async () => {
  await new Promise<void>((resolve) => bare.close(() => resolve()));
  await pool.end();
  await api.close();
  process.exit(0);
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);

// Idle stream cost: `npm run bench:streams`. Starts its own PostgreSQL 15, builds the API
// app in this process on a drizzle handle whose logger counts every query it sends, opens
// idle SSE streams (half event streams, half deployment watches) with app.request, and
// counts the queries they cause over a window. Two cases on the same database:
//
// - polling: no LISTEN session (what every stream did before NOTIFY, and what Neon still
//   does): each stream polls every streamPollMs (500 ms);
// - notify: the notification hub LISTENs; each stream polls once per notice or after the
//   fallback timer (streamFallbackMs, 10 s).
//
// Both cases include the hub's revalidation of the streams' key (one query per 5 s for
// the instance, whatever the number of streams). Prints a table, writes
// bench/results/streams.json. Env: BENCH_DURATION (s per case, default 60), BENCH_STREAMS
// (default 20).
import { mkdir, writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { createDatabase, type Db } from "../db/client.ts";
import * as schema from "../db/schema.ts";
import { createApp } from "../src/api/app.ts";
import { systemClock } from "../src/domain/clock.ts";
import { bootstrapInstallation } from "../src/services/bootstrap.ts";
import { DEFAULT_APP_CONFIG, type AppConfig } from "../src/services/context.ts";
import { NotificationHub } from "../src/services/notifications/notification-hub.ts";
import { startPostgresServer, type PostgresServer } from "../test/support/postgres-server.ts";
import { printTable } from "./support/table.ts";

const DURATION_S = Number(process.env.BENCH_DURATION ?? 60);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 20);
const WARMUP_MS = 2000;
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const RESULTS = new URL("./results/streams.json", import.meta.url);
const silent = { info: () => {}, warn: () => {}, error: () => {} };

interface CaseResult {
  name: string;
  streams: number;
  seconds: number;
  queries: number;
  queriesPerStreamPerMinute: number;
}

async function createBenchDatabase(adminUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query("CREATE DATABASE berth_streams_bench");
  await client.end();
  const url = new URL(adminUrl);
  url.pathname = "/berth_streams_bench";
  return url.toString();
}

async function runCase(name: string, url: string, listen: boolean): Promise<CaseResult> {
  let queries = 0;
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const db = drizzle(pool, { schema, logger: { logQuery: () => void queries++ } }) as unknown as Db;
  // The LISTEN session is its own connection (db/client.ts); an idle one sends no queries.
  const listener = listen ? await createDatabase({ driver: "postgres", url }) : undefined;
  const config: AppConfig = { ...DEFAULT_APP_CONFIG, adminToken: ADMIN_TOKEN };
  const notifications = new NotificationHub({ db, clock: systemClock, listen: listener?.listen?.bind(listener) });
  const app = createApp({ db, clock: systemClock, config, logger: silent, checkDatabase: async () => {}, notifications });
  const created = await app.request("/v1/api-keys", {
    method: "POST",
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify({ name: `bench-${name}`, role: "viewer" }),
  });
  const { token } = (await created.json()) as { token: string };
  const readers: Array<ReadableStreamDefaultReader<Uint8Array>> = [];
  const drained: Array<Promise<void>> = [];
  for (let i = 0; i < STREAMS; i++) {
    const path = i % 2 === 0 ? "/v1/events/stream?after=999999999" : "/v1/deployments?watch=true&resourceVersion=999999999";
    const response = await app.request(path, { headers: { Authorization: `Bearer ${token}` } });
    const reader = response.body!.getReader();
    readers.push(reader);
    drained.push(
      (async () => {
        try {
          while (!(await reader.read()).done);
        } catch {
          // cancelled at the end
        }
      })(),
    );
  }
  await new Promise((resolve) => setTimeout(resolve, WARMUP_MS));
  const before = queries;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, DURATION_S * 1000));
  const seconds = (performance.now() - started) / 1000;
  const counted = queries - before;
  await Promise.all(readers.map((reader) => reader.cancel().catch(() => {})));
  await Promise.race([Promise.all(drained), new Promise((resolve) => setTimeout(resolve, 2000))]);
  await notifications.close();
  await listener?.close();
  await pool.end();
  return { name, streams: STREAMS, seconds, queries: counted, queriesPerStreamPerMinute: (counted / STREAMS / seconds) * 60 };
}

async function main(): Promise<void> {
  let postgres: PostgresServer | undefined;
  try {
    postgres = await startPostgresServer();
    const url = await createBenchDatabase(postgres.adminUrl);
    const setup = await createDatabase({ driver: "postgres", url });
    await setup.migrate();
    await bootstrapInstallation({ ctx: { db: setup.db, clock: systemClock, config: { ...DEFAULT_APP_CONFIG, adminToken: ADMIN_TOKEN } } });
    await setup.close();
    const results = [await runCase("polling", url, false), await runCase("notify", url, true)];
    printTable([
      ["case", "streams", "seconds", "queries", "queries/stream/min"],
      ...results.map((r) => [r.name, String(r.streams), r.seconds.toFixed(1), String(r.queries), r.queriesPerStreamPerMinute.toFixed(2)]),
    ]);
    await mkdir(new URL(".", RESULTS), { recursive: true });
    await writeFile(
      RESULTS,
      JSON.stringify({ measuredAt: new Date().toISOString(), cpus: cpus().length, durationSeconds: DURATION_S, results }, null, 2) + "\n",
    );
  } finally {
    await postgres?.stop();
  }
}

await main();

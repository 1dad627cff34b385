// Retention benchmark: `npm run bench:retention`. A simulated week of churn against the real
// API app (in process, driven with app.request, no sockets for the API) on PGlite and on its
// own PostgreSQL 15, with a clock the bench moves an hour a step. Each step: a deployment
// created or the oldest deleted, one patched, the webhook dispatcher run until idle against a
// receiver on loopback (which refuses 5% of events for good, so those retry for about 28 h
// and are given up), and the maintenance pass the serve entries run (every 10 s there, once a
// simulated hour here). Every fourth hour the agent records a restart operation (with an
// Idempotency-Key) and finishes it.
//
// Each driver runs twice in the same run: with retention (windows scaled to the week: events
// and tombstones 48 h, deliveries and operations 96 h; Idempotency-Keys keep their 24 h) and
// without (every window "never"). Row counts and pg_total_relation_size per table are taken
// at the end of each simulated day. Prints a table, writes bench/results/retention.json.
//
// Env: BENCH_DAYS (simulated days, default 7).
import { mkdir, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import pg from "pg";
import { createDatabase, type Database } from "../db/client.ts";
import { createApp } from "../src/api/app.ts";
import { nodeWebhookTransport } from "../src/api/webhook-transport-node.ts";
import type { RetentionWindows } from "../src/domain/retention.ts";
import { decodeSecretKey, generateSecretKey, loadKeyring } from "../src/domain/secret-envelope.ts";
import { bootstrapInstallation } from "../src/services/bootstrap.ts";
import { DEFAULT_APP_CONFIG, type AppConfig } from "../src/services/context.ts";
import { runMaintenance } from "../src/services/maintenance.ts";
import { dispatchWebhooks } from "../src/services/webhooks/dispatch-webhooks.ts";
import { startPostgresServer, type PostgresServer } from "../test/support/postgres-server.ts";
import { startReceiver, type Receiver } from "../test/webhooks/support/receiver.ts";
import { printTable } from "./support/table.ts";

const DAYS = Number(process.env.BENCH_DAYS ?? 7);
const STEP_MS = 60 * 60 * 1000;
const STEPS_PER_DAY = (24 * 60 * 60 * 1000) / STEP_MS;
const SEEDED_DEPLOYMENTS = 20;
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const RESULTS = new URL("./results/retention.json", import.meta.url);
const TABLES = ["events", "deployment_tombstones", "webhook_deliveries", "webhook_attempts", "operations", "idempotency_keys", "deployments"] as const;
const HOUR = 1;
const SCALED_WINDOWS: RetentionWindows = { eventsHours: 48 * HOUR, tombstonesHours: 48 * HOUR, deliveriesHours: 96 * HOUR, operationsHours: 96 * HOUR };
const NEVER: RetentionWindows = { eventsHours: null, tombstonesHours: null, deliveriesHours: null, operationsHours: null };

type Table = (typeof TABLES)[number];
interface DaySample {
  day: number;
  rows: Record<Table, number>;
  bytes: Record<Table, number>;
  totalBytes: number;
}
interface CaseResult {
  driver: "pglite" | "postgres";
  retention: boolean;
  windows: RetentionWindows;
  days: DaySample[];
  wallSeconds: number;
  /** What the churn did, as the API answered it. */
  writes: { created: number; deleted: number; patched: number; operations: number; deliveriesSent: number };
}

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

class SimClock {
  constructor(private at = new Date("2026-11-01T00:00:00.000Z")) {}
  now = () => new Date(this.at.getTime());
  advance(ms: number) {
    this.at = new Date(this.at.getTime() + ms);
  }
}

function spec(replicas: number) {
  return {
    model: { name: "Qwen/Qwen3-8B" },
    engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
    roles: [{ name: "main", replicas, resources: { gpus: 1 } }],
  };
}

/** Refuses, for good, the deliveries of one event in twenty (by its webhook-id). */
function refusesForGood(webhookId: string): boolean {
  let hash = 0;
  for (const char of webhookId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return hash % 20 === 0;
}

async function sample(database: Database, day: number): Promise<DaySample> {
  const counts = TABLES.map((table) => `(select count(*) from ${table}) as "${table}"`).join(", ");
  const sizes = TABLES.map((table) => `pg_total_relation_size('${table}') as "${table}"`).join(", ");
  const read = async (text: string) => ((await database.db.execute(text as never)) as unknown as { rows: Array<Record<string, unknown>> }).rows[0]!;
  const rowCounts = await read(`select ${counts}`);
  const byteCounts = await read(`select ${sizes}`);
  const numbers = (row: Record<string, unknown>) => Object.fromEntries(TABLES.map((table) => [table, Number(row[table])])) as Record<Table, number>;
  const bytes = numbers(byteCounts);
  return { day, rows: numbers(rowCounts), bytes, totalBytes: Object.values(bytes).reduce((a, b) => a + b, 0) };
}

async function runCase(driver: "pglite" | "postgres", url: string, windows: RetentionWindows, receiver: Receiver): Promise<CaseResult> {
  const started = Date.now();
  const database = await createDatabase({ driver, url });
  await database.migrate();
  const clock = new SimClock();
  const config: AppConfig = {
    ...DEFAULT_APP_CONFIG,
    adminToken: ADMIN_TOKEN,
    // Seals webhook secrets and stored Idempotency-Key answers, as the serve entries' key does (§14.3).
    secretKeys: await loadKeyring(decodeSecretKey(generateSecretKey())),
    webhooks: { ...DEFAULT_APP_CONFIG.webhooks, allowPrivateAddresses: true, allowHttp: true },
    // As the serve entries configure it (src/api/start.ts).
    retention: { ...DEFAULT_APP_CONFIG.retention, windows, vacuumAfterPurge: driver === "pglite" },
  };
  const ctx = { db: database.db, clock, config, webhookTransport: nodeWebhookTransport };
  await bootstrapInstallation({ ctx });
  const app = createApp({ ...ctx, logger: { info: () => {}, warn: () => {}, error: () => {} }, checkDatabase: () => database.ping() });
  const call = async (method: string, path: string, body?: unknown, token = ADMIN_TOKEN, headers: Record<string, string> = {}) => {
    const res = await app.request(path, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };

  const projectId = (await call("GET", "/v1/projects")).items.find((p: { name: string }) => p.name === "default").id as string;
  const cluster = await call("POST", "/v1/clusters", { name: "bench" });
  const agentToken = (await call("POST", "/v1/agent/register", { joinToken: cluster.joinToken })).token as string;
  await call("POST", "/v1/webhooks", { url: receiver.url, eventTypes: ["*"] });
  const live: string[] = [];
  const writes = { created: 0, deleted: 0, patched: 0, operations: 0, deliveriesSent: 0 };
  let serial = 0;
  const create = async () => {
    const created = await call("POST", "/v1/deployments", { name: `d-${(serial++).toString(36)}`, projectId, spec: spec(1) });
    live.push(created.id);
    writes.created++;
  };
  for (let i = 0; i < SEEDED_DEPLOYMENTS; i++) await create();

  const days: DaySample[] = [await sample(database, 0)];
  for (let step = 1; step <= DAYS * STEPS_PER_DAY; step++) {
    clock.advance(STEP_MS);
    if (step % 2 === 0) await create();
    else if (live.length > SEEDED_DEPLOYMENTS / 2) {
      // No agent heartbeat here, so a delete removes the row at once and leaves a tombstone.
      await call("DELETE", `/v1/deployments/${live.shift()}`);
      writes.deleted++;
    }
    const target = live[step % live.length]!;
    await call("PATCH", `/v1/deployments/${target}`, { labels: { step: String(step) } });
    writes.patched++;
    if (step % 4 === 0) {
      const op = await call(
        "POST",
        "/v1/agent/operations",
        { kind: "restart", deploymentId: target, role: "main", replica: 0, phase: "Running", step: "Restarting" },
        agentToken,
        { "Idempotency-Key": `restart-${step}` },
      );
      await call("PATCH", `/v1/agent/operations/${op.id}`, { phase: "Succeeded", step: "Done" }, agentToken);
      writes.operations++;
    }
    for (let pass = 0; pass < 20; pass++) {
      const outcome = await dispatchWebhooks({ ctx });
      if (!outcome.more) break;
    }
    await runMaintenance({ ctx });
    if (step % STEPS_PER_DAY === 0) {
      days.push(await sample(database, step / STEPS_PER_DAY));
      const last = days[days.length - 1]!;
      log(`${driver} ${windows === NEVER ? "no retention" : "retention"} day ${last.day}: events ${last.rows.events}, ${(last.totalBytes / 1024).toFixed(0)} KiB`);
    }
  }
  writes.deliveriesSent = receiver.received.length;
  await database.close();
  return { driver, retention: windows !== NEVER, windows, days, wallSeconds: Math.round((Date.now() - started) / 100) / 10, writes };
}

async function createBenchDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function main() {
  const loadBefore = loadavg();
  let postgres: PostgresServer | undefined;
  const cases: CaseResult[] = [];
  try {
    postgres = await startPostgresServer();
    for (const driver of ["pglite", "postgres"] as const) {
      for (const windows of [SCALED_WINDOWS, NEVER]) {
        const receiver = await startReceiver((request) => ({ status: refusesForGood(request.headers["webhook-id"] ?? "") ? 503 : 204 }));
        try {
          const url = driver === "pglite" ? "memory://" : await createBenchDatabase(postgres.adminUrl, `berth_retention_${windows === NEVER ? "never" : "kept"}`);
          cases.push(await runCase(driver, url, windows, receiver));
        } finally {
          await receiver.close();
        }
      }
    }
  } finally {
    await postgres?.stop();
  }
  const loadAfter = loadavg();
  const kib = (bytes: number) => (bytes / 1024).toFixed(0);
  const rows: string[][] = [["case", "day", "events", "tombstones", "deliveries", "attempts", "operations", "idem. keys", "total KiB"]];
  for (const c of cases) {
    for (const d of c.days.filter((day) => day.day % 1 === 0)) {
      rows.push([
        `${c.driver} ${c.retention ? "retention" : "no retention"}`,
        String(d.day),
        String(d.rows.events),
        String(d.rows.deployment_tombstones),
        String(d.rows.webhook_deliveries),
        String(d.rows.webhook_attempts),
        String(d.rows.operations),
        String(d.rows.idempotency_keys),
        kib(d.totalBytes),
      ]);
    }
  }
  printTable(rows);
  const machine = { cpus: cpus().length, model: cpus()[0]?.model ?? "", loadavg1mBefore: loadBefore[0], loadavg1mAfter: loadAfter[0] };
  console.log(`\nmachine: ${machine.cpus} CPUs, load average (1 min) ${machine.loadavg1mBefore.toFixed(2)} before, ${machine.loadavg1mAfter.toFixed(2)} after`);
  for (const c of cases) console.log(`${c.driver} ${c.retention ? "retention" : "no retention"}: ${c.wallSeconds} s, ${JSON.stringify(c.writes)}`);
  await mkdir(new URL("./results/", import.meta.url), { recursive: true });
  await writeFile(RESULTS, JSON.stringify({ simulatedDays: DAYS, stepMinutes: STEP_MS / 60_000, machine, cases }, null, 2) + "\n");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

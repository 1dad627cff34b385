// Webhook delivery benchmark: `npm run bench:webhooks`. Starts its own PostgreSQL 15 and
// the real `berth serve` (its dispatcher loop does the work), a receiver on loopback in
// this process, and an open-loop writer that commits events at a fixed rate through the
// same outbox path the API uses (recordEvent in a transaction). Latency is measured from
// the writer's COMMIT (taken just before it is sent) to the receiver getting the signed
// POST, which it answers 204 at once; both ends are in this process, on one clock.
//
// Baseline in the same run: the floor — this process sending the same signed POSTs
// straight to the receiver through the same transport, at the same rate (a fresh
// connection each, as the dispatcher does). Prints a table, writes bench/results/webhooks.json.
//
// Env: BENCH_DURATION (s per case, default 20), BENCH_RATE (events/s, default 200),
// BENCH_DEBUG=1 (latency per second of each case, and the serve process's log).
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism, cpus } from "node:os";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createDatabase } from "../db/client.ts";
import { nodeWebhookTransport } from "../src/api/webhook-transport-node.ts";
import { newId } from "../src/domain/ids.ts";
import { newWebhookSecret } from "../src/domain/webhooks.ts";
import { recordEvent } from "../src/services/events/record-event.ts";
import { deliveryHeaders } from "../src/services/webhooks/sign-delivery.ts";
import { startPostgresServer, type PostgresServer } from "../test/support/postgres-server.ts";
import { preciseNow, startReceiver, type Receiver } from "../test/webhooks/support/receiver.ts";
import { printTable as printRows } from "./support/table.ts";
import { generateSecretKey } from "../src/domain/secret-envelope.ts";

const DURATION_S = Number(process.env.BENCH_DURATION ?? 20);
const WARMUP_S = 3;
const RATE = Number(process.env.BENCH_RATE ?? 200);
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const RESULTS = new URL("./results/webhooks.json", import.meta.url);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TARGETS = { p50Ms: 100, p99Ms: 1000 };
const CLOCK_TICKS_PER_S = 100;

interface CaseResult {
  name: string;
  events: number;
  deliveries: number;
  missing: number;
  duplicates: number;
  /** Achieved event rate over the measured window. */
  eventsPerSecond: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  ratioP50ToFloor?: number;
  /** CPU ms per delivery: the `berth serve` process and PostgreSQL. */
  cpuMsPerDelivery?: { serve: number; postgres: number };
}

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return 0;
  }
}

/** CPU of the postmaster and every backend it forked (summed; backends come and go). */
function postgresCpuMs(dataDir: string): number {
  try {
    const postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, "utf8").split("\n")[0]);
    let total = processCpuMs(postmaster);
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster) total += processCpuMs(Number(name));
      } catch {}
    }
    return total;
  } catch {
    return 0;
  }
}

async function createBenchDatabase(adminUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query("CREATE DATABASE berth_webhooks_bench");
  await client.end();
  const url = new URL(adminUrl);
  url.pathname = "/berth_webhooks_bench";
  return url.toString();
}

/** `berth serve` (the real entry: API + dispatcher loop) on PostgreSQL; resolves with its URL. */
async function startServe(databaseUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["bin/berth.js", "serve"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: "0",
      DATABASE_URL: databaseUrl,
      BERTH_ADMIN_TOKEN: ADMIN_TOKEN,
      BERTH_SECRET_KEY: generateSecretKey(), // required with PostgreSQL (docs/design.md §14.3)
      BERTH_WEBHOOK_ALLOW_PRIVATE: "true", // the receiver is on loopback, over http
      BERTH_WEBHOOK_ALLOW_HTTP: "true",
      LOG_LEVEL: "info", // for the listen line; the dispatcher logs nothing per delivery
    },
  });
  let output = "";
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk));
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"berth API listening"/.exec(output);
    if (match) {
      if (process.env.BENCH_DEBUG) child.stdout!.on("data", (chunk: Buffer) => process.stderr.write(`[serve] ${chunk}`));
      if (process.env.BENCH_DEBUG) child.stderr!.on("data", (chunk: Buffer) => process.stderr.write(`[serve] ${chunk}`));
      return { child, url: match[1]! };
    }
    if (child.exitCode !== null) throw new Error(`berth serve exited:\n${output}`);
    if (Date.now() > deadline) throw new Error(`berth serve did not start:\n${output}`);
    await sleep(100);
  }
}

async function api(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/**
 * Writes one event every 1/RATE s for `seconds`, one write at a time (a write that ends late
 * makes the next start at once, so the rate holds on average). One writer, not many: writers
 * in one process that queue on the change-log lock mostly measure this process's own
 * event loop.
 */
async function paced<T>(seconds: number, write: (index: number) => Promise<T>): Promise<T[]> {
  const total = Math.round(seconds * RATE);
  const started = preciseNow();
  const results: T[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - preciseNow();
    if (wait > 1) await sleep(wait);
    results.push(await write(i));
  }
  return results;
}

function summarize(name: string, sent: Array<{ id: string; at: number; measured: boolean }>, receiver: Receiver, paths: string[]): CaseResult {
  const sentAt = new Map(sent.map((s) => [s.id, s]));
  const latencies: number[] = [];
  const seen = new Map<string, number>();
  for (const request of receiver.received) {
    const id = request.headers["webhook-id"]!;
    const key = `${request.path} ${id}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
    const origin = sentAt.get(id);
    if (origin?.measured && seen.get(key) === 1) latencies.push(request.at - origin.at);
  }
  if (process.env.BENCH_DEBUG) {
    const bySecond = new Map<number, number[]>();
    const t0 = sent[0]!.at;
    for (const request of receiver.received) {
      const origin = sentAt.get(request.headers["webhook-id"]!);
      if (!origin) continue;
      const second = Math.floor((origin.at - t0) / 1000);
      bySecond.set(second, [...(bySecond.get(second) ?? []), request.at - origin.at]);
    }
    for (const [second, values] of [...bySecond].sort((a, b) => a[0] - b[0])) {
      values.sort((a, b) => a - b);
      log(`${name} second ${second}: n=${values.length} p50=${percentile(values, 50).toFixed(1)} max=${values.at(-1)!.toFixed(1)}`);
    }
  }
  latencies.sort((a, b) => a - b);
  const expected = sent.length * paths.length;
  const unique = seen.size;
  const measured = sent.filter((s) => s.measured);
  const span = measured.length > 1 ? (measured[measured.length - 1]!.at - measured[0]!.at) / 1000 : 1;
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return {
    name,
    events: sent.length,
    deliveries: receiver.received.length,
    missing: expected - unique,
    duplicates: receiver.received.length - unique,
    eventsPerSecond: Math.round(measured.length / span),
    p50: round(percentile(latencies, 50)),
    p90: round(percentile(latencies, 90)),
    p99: round(percentile(latencies, 99)),
    max: round(latencies[latencies.length - 1] ?? NaN),
  };
}

async function waitForAll(receiver: Receiver, count: number, timeoutMs = 60_000): Promise<void> {
  await receiver.waitFor(count, timeoutMs).catch((error: Error) => log(error.message));
  await sleep(500);
}

/** The floor: this process signs and POSTs each event straight to the receiver, same transport. */
async function floorCase(receiver: Receiver): Promise<CaseResult> {
  receiver.received.length = 0;
  const secret = newWebhookSecret();
  const url = new URL(`${receiver.url}/floor`);
  const sent = await paced(WARMUP_S + DURATION_S, async (index) => {
    const id = newId("event");
    const body = JSON.stringify({ type: "deployment.updated", timestamp: new Date().toISOString(), data: { n: index } });
    const at = preciseNow();
    const now = new Date();
    await nodeWebhookTransport.send({ url, address: "127.0.0.1", headers: deliveryHeaders([secret], id, now, body), body, timeoutMs: 10_000 });
    return { id, at, measured: index >= WARMUP_S * RATE };
  });
  await waitForAll(receiver, sent.length);
  return summarize("floor: signed POST straight to the receiver", sent, receiver, ["/hook/floor"]);
}

async function deliveryCase(
  name: string,
  endpoints: number,
  context: { serve: { child: ChildProcess; url: string }; receiver: Receiver; writer: Awaited<ReturnType<typeof createDatabase>>; projectId: string; pgDataDir: string },
): Promise<CaseResult> {
  const { serve, receiver, writer, projectId } = context;
  for (const webhook of (await api(serve.url, "GET", "/v1/webhooks?limit=200")).items) {
    await api(serve.url, "DELETE", `/v1/webhooks/${webhook.id}`);
  }
  const paths: string[] = [];
  for (let i = 0; i < endpoints; i++) {
    paths.push(`/hook/e${i}`);
    await api(serve.url, "POST", "/v1/webhooks", { url: `${receiver.url}/e${i}`, eventTypes: ["deployment.updated"], projectId });
  }
  receiver.received.length = 0;
  let cpu = { serve: 0, postgres: 0 };
  const sent = await paced(WARMUP_S + DURATION_S, async (index) => {
    if (index === WARMUP_S * RATE) cpu = { serve: processCpuMs(serve.child.pid!), postgres: postgresCpuMs(context.pgDataDir) };
    let at = 0;
    const row = await writer.db.transaction(async (tx) => {
      const event = await recordEvent(tx, new Date(), { type: "deployment.updated", projectId, data: { n: index } });
      at = preciseNow(); // the callback returns, drizzle sends COMMIT
      return event;
    });
    return { id: row.id, at, measured: index >= WARMUP_S * RATE };
  });
  await waitForAll(receiver, sent.length * endpoints);
  const measuredDeliveries = sent.filter((s) => s.measured).length * endpoints;
  const result = summarize(name, sent, receiver, paths);
  result.cpuMsPerDelivery = {
    serve: Math.round(((processCpuMs(serve.child.pid!) - cpu.serve) / measuredDeliveries) * 1000) / 1000,
    postgres: Math.round(((postgresCpuMs(context.pgDataDir) - cpu.postgres) / measuredDeliveries) * 1000) / 1000,
  };
  return result;
}

function printTable(cases: CaseResult[], verdicts: string[]): void {
  const rows = [
    ["case", "events/s", "deliveries", "missing", "dup", "p50 ms", "p90 ms", "p99 ms", "max ms", "p50 vs floor", "serve cpu ms/dlv", "pg cpu ms/dlv"],
    ...cases.map((c) => [
      c.name,
      String(c.eventsPerSecond),
      String(c.deliveries),
      String(c.missing),
      String(c.duplicates),
      c.p50.toFixed(2),
      c.p90.toFixed(2),
      c.p99.toFixed(2),
      c.max.toFixed(2),
      c.ratioP50ToFloor === undefined ? "" : `${c.ratioP50ToFloor}×`,
      c.cpuMsPerDelivery ? c.cpuMsPerDelivery.serve.toFixed(3) : "",
      c.cpuMsPerDelivery ? c.cpuMsPerDelivery.postgres.toFixed(3) : "",
    ]),
  ];
  printRows(rows);
  console.log("\ntargets:");
  for (const verdict of verdicts) console.log(`  ${verdict}`);
}

async function main(): Promise<void> {
  let postgres: PostgresServer | undefined;
  let serve: { child: ChildProcess; url: string } | undefined;
  let receiver: Receiver | undefined;
  let writer: Awaited<ReturnType<typeof createDatabase>> | undefined;
  try {
    log("starting PostgreSQL 15");
    postgres = await startPostgresServer();
    const databaseUrl = await createBenchDatabase(postgres.adminUrl);
    writer = await createDatabase({ driver: "postgres", url: databaseUrl, poolSize: 16 });
    await writer.migrate();
    log("starting berth serve");
    serve = await startServe(databaseUrl);
    receiver = await startReceiver(() => ({ status: 204 }));
    const projects = await api(serve.url, "GET", "/v1/projects");
    const projectId = projects.items.find((p: { name: string }) => p.name === "default").id as string;
    const context = { serve, receiver, writer, projectId, pgDataDir: `${postgres.root}/data` };

    const cases: CaseResult[] = [];
    log(`floor: ${RATE}/s for ${WARMUP_S}+${DURATION_S} s`);
    const floor = await floorCase(receiver);
    cases.push(floor);
    for (const endpoints of [1, 2]) {
      const name = `commit → 2xx, ${endpoints} endpoint${endpoints > 1 ? "s" : ""} (${RATE * endpoints} deliveries/s)`;
      log(`${name} for ${WARMUP_S}+${DURATION_S} s`);
      const result = await deliveryCase(name, endpoints, context);
      result.ratioP50ToFloor = Math.round((result.p50 / floor.p50) * 10) / 10;
      cases.push(result);
    }

    const main = cases[1]!;
    const verdicts = [
      `p50 < ${TARGETS.p50Ms} ms at ${RATE} events/s: ${main.p50 < TARGETS.p50Ms ? "met" : "NOT met"} (${main.p50} ms)`,
      `p99 < ${TARGETS.p99Ms} ms at ${RATE} events/s: ${main.p99 < TARGETS.p99Ms ? "met" : "NOT met"} (${main.p99} ms)`,
      `every event delivered: ${cases.every((c) => c.missing === 0) ? "yes" : "NO"}`,
    ];
    printTable(cases, verdicts);
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      RESULTS,
      JSON.stringify(
        {
          benchmark: "webhooks",
          date: new Date().toISOString(),
          machine: { node: process.version, cpus: availableParallelism(), cpu: cpus()[0]?.model.trim() },
          settings: {
            durationSeconds: DURATION_S,
            warmupSeconds: WARMUP_S,
            eventsPerSecond: RATE,
            dispatcher: "berth serve's loop (LISTEN-woken, 2 workers), node transport, fresh connection per POST",
            latency: "from the writer's COMMIT to the receiver having the POST (it answers 204 at once); first delivery of each event",
          },
          targets: TARGETS,
          cases,
          verdicts,
        },
        null,
        2,
      ) + "\n",
    );
  } finally {
    if (serve && serve.child.exitCode === null) {
      const exited = new Promise((resolve) => serve!.child.once("exit", resolve));
      serve.child.kill("SIGTERM");
      await exited;
    }
    await receiver?.close();
    await writer?.close();
    await postgres?.stop();
  }
}

await main();

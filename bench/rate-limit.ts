// Rate-limit benchmark: `npm run bench:rate-limit`. What the limiter costs per request: the
// real Node entry (bench/api-server.ts) twice on one database, BERTH_RATE_LIMIT=false and
// true, driven in the same run over loopback with autocannon (GET one deployment, a key whose
// bucket never runs dry). Two more cases time the refusals: a key over its bucket (answered
// from the instance's memory of the refusal) and one bad token (the negative cache), each
// against the limiter on. PostgreSQL (own server) and PGlite (memory://). Writes
// bench/results/rate-limit.json and prints a table; machine load is read before and after.
//
// Env: BENCH_DURATION (s per case, default 6), BENCH_CONNECTIONS (default 10).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, loadavg } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { generateSecretKey } from "../src/domain/secret-envelope.ts";
import { startPostgresServer } from "../test/support/postgres-server.ts";
import { call, stopChild } from "./support/api-process.ts";
import { printTable } from "./support/table.ts";

const DURATION_S = Number(process.env.BENCH_DURATION ?? 6);
const WARMUP_S = 1;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS = new URL("./results/rate-limit.json", import.meta.url);

interface CaseResult {
  driver: string;
  name: string;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  statusCodes: Record<string, number>;
  errors: number;
}

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

async function startApi(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/api-server.ts"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NODE_ENV: "production", HOST: "127.0.0.1", PORT: "0", BERTH_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: "silent", ...env },
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`bench server exited (${code}):\n${stderr}`)));
  });
  return { child, url: (JSON.parse(first) as { api: string }).api };
}

/** A deployment to read, a key that never runs dry and a key with a bucket of one. */
async function seed(base: string): Promise<{ path: string; plenty: string; scarce: string }> {
  const projects = await call(base, ADMIN_TOKEN, "GET", "/v1/projects");
  const projectId = projects.items.find((p: { name: string }) => p.name === "default").id;
  const deployment = await call(base, ADMIN_TOKEN, "POST", "/v1/deployments", {
    name: "bench-read",
    projectId,
    spec: {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "main", resources: { gpus: 1 } }],
    },
  });
  const plenty = (await call(base, ADMIN_TOKEN, "POST", "/v1/api-keys", { name: "bench editor", role: "editor" })).token;
  const scarce = (await call(base, ADMIN_TOKEN, "POST", "/v1/api-keys", { name: "bench viewer", role: "viewer" })).token;
  return { path: `/v1/deployments/${deployment.id}`, plenty, scarce };
}

async function measure(driver: string, name: string, url: string, token: string): Promise<CaseResult> {
  const headers = { Authorization: `Bearer ${token}` };
  await autocannon({ url, connections: CONNECTIONS, duration: WARMUP_S, headers });
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, headers });
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = Number(stat.count ?? 0);
  const requests = Object.values(statusCodes).reduce((a, b) => a + b, 0);
  const row = { driver, name, rps: Math.round(requests / result.duration), p50: result.latency.p50, p99: result.latency.p99, requests, statusCodes, errors: result.errors };
  log(`${driver} ${name}: ${row.rps} rps, p50 ${row.p50} ms, p99 ${row.p99} ms, ${JSON.stringify(statusCodes)}`);
  return row;
}

// Editors get a bucket that never runs dry in a case; viewers one token a minute.
const LIMITS = { BERTH_RATE_LIMIT_EDITOR: "1000000", BERTH_RATE_LIMIT_VIEWER: "1", BERTH_RATE_LIMIT_ADDRESS: "1" };
// Required with PostgreSQL (docs/design.md §14.3); one for both instances, which may share a database.
const SECRET_KEY = { BERTH_SECRET_KEY: generateSecretKey() };

async function runDriver(driver: "postgres" | "pglite", urls: { off: string; on: string }): Promise<CaseResult[]> {
  const off = await startApi({ DATABASE_URL: urls.off, BERTH_RATE_LIMIT: "false", ...LIMITS, ...SECRET_KEY });
  const on = await startApi({ DATABASE_URL: urls.on, BERTH_RATE_LIMIT: "true", BERTH_MIGRATE: driver === "pglite" ? "true" : "false", ...LIMITS, ...SECRET_KEY });
  try {
    const seededOff = await seed(off.url);
    const seededOn = driver === "pglite" ? await seed(on.url) : seededOff;
    const rows: CaseResult[] = [];
    // Off and on twice, interleaved, so drift during the run shows instead of favouring one side.
    for (const round of [1, 2]) {
      rows.push(await measure(driver, `limiter off (${round})`, off.url + seededOff.path, seededOff.plenty));
      rows.push(await measure(driver, `limiter on (${round})`, on.url + seededOn.path, seededOn.plenty));
    }
    rows.push(await measure(driver, "limiter on, key over its bucket (429)", on.url + seededOn.path, seededOn.scarce));
    rows.push(await measure(driver, "limiter on, one bad token (401, then 429)", on.url + seededOn.path, "bp_not-a-key"));
    return rows;
  } finally {
    await stopChild(on.child);
    await stopChild(off.child);
  }
}

async function main(): Promise<void> {
  const loadBefore = loadavg();
  const postgres = await startPostgresServer({});
  const rows: CaseResult[] = [];
  try {
    const admin = new pg.Client({ connectionString: postgres.adminUrl });
    await admin.connect();
    await admin.query("CREATE DATABASE bench_rate_limit");
    await admin.end();
    const url = new URL(postgres.adminUrl);
    url.pathname = "/bench_rate_limit";
    // One database for both instances: the limiter-on instance reads the same deployment.
    rows.push(...(await runDriver("postgres", { off: url.toString(), on: url.toString() })));
    rows.push(...(await runDriver("pglite", { off: "memory://", on: "memory://" })));
  } finally {
    await postgres.stop();
  }
  const loadAfter = loadavg();
  printTable([
    ["driver / case", "rps", "p50 ms", "p99 ms", "statuses"],
    ...rows.map((r) => [`${r.driver}: ${r.name}`, r.rps.toLocaleString("en-US"), String(r.p50), String(r.p99), JSON.stringify(r.statusCodes)]),
  ]);
  const machine = {
    node: process.version,
    cpus: availableParallelism(),
    cpu: cpus()[0]?.model ?? "unknown",
    loadAverage1mBefore: Math.round(loadBefore[0]! * 100) / 100,
    loadAverage1mAfter: Math.round(loadAfter[0]! * 100) / 100,
  };
  console.log(`\nmachine: ${JSON.stringify(machine)}`);
  await mkdir(new URL("./results/", import.meta.url), { recursive: true });
  await writeFile(
    RESULTS,
    JSON.stringify({ date: new Date().toISOString(), durationS: DURATION_S, connections: CONNECTIONS, machine, cases: rows }, null, 2) + "\n",
  );
}

await main();

// API benchmark: `npm run bench:api`. Starts its own PostgreSQL 15, runs the real Node
// entry (bench/api-server.ts: startServer plus a bare Hono route in the same process, as
// the baseline) and drives it over loopback, each case bounded in time: autocannon for
// throughput and its fixed-rate mode, plus an evenly paced open-loop client for the same
// rates (see paced()). Prints a table and writes bench/results/api.json. Throughput is compared as a ratio to
// the bare route measured in the same run, because absolute numbers drift between machines.
//
// Beside latency and rate, each case reports the CPU that the API process and PostgreSQL
// spent per request (from /proc), which says where the time goes without a profiler.
//
// Env: BENCH_DURATION (s per case, default 8), BENCH_CONNECTIONS (default 10),
// BENCH_ONLY (regex on case names; then no results file), BENCH_SERVER_NODE_OPTIONS
// (extra node flags for the server process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import http from "node:http";
import { availableParallelism, cpus } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import pg from "pg";
import { startPostgresServer, type PostgresServer } from "../test/support/postgres-server.ts";
import { call, stopChild } from "./support/api-process.ts";
import { printTable as printRows } from "./support/table.ts";
import { generateSecretKey } from "../src/domain/secret-envelope.ts";

const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
const WARMUP_S = 2;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const SEEDED = 200;
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY, "i") : undefined;
const RESULTS = new URL("./results/api.json", import.meta.url);
const ROOT = fileURLToPath(new URL("..", import.meta.url));

const TARGETS = {
  getP99AtRate: { rate: 1000, p99Ms: 10 },
  postP99AtRate: { rate: 300, p99Ms: 25 },
  getThroughputRatio: 0.35,
};

interface CaseResult {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  ratioToBare?: number;
  targetRps?: number;
  /** CPU milliseconds per request: the API process, PostgreSQL (all its processes), the load generator. */
  cpuMsPerRequest?: { api: number; postgres: number; loadGenerator: number };
  note?: string;
}

// ---------------------------------------------------------------- processes

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

async function createDatabase(adminUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Starts bench/api-server.ts and resolves with the URLs it prints. */
// ---------------------------------------------------------------- CPU accounting (Linux /proc)

const CLOCK_TICKS_PER_S = 100; // USER_HZ on Linux x86-64 and arm64

/** utime + stime of a process in ms, or 0 when it is gone or /proc is absent. */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // fields from #3 (state) on
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return 0;
  }
}

/** The postmaster and every backend it forked (read fresh: backends come and go). */
function postgresPids(dataDir: string): number[] {
  try {
    const postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, "utf8").split("\n")[0]);
    const children = readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .filter((pid) => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
          return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster;
        } catch {
          return false;
        }
      })
      .map(Number);
    return [postmaster, ...children];
  } catch {
    return [];
  }
}

interface CpuMeter {
  start(): void;
  /** CPU ms per request since start(). */
  stop(requests: number): NonNullable<CaseResult["cpuMsPerRequest"]>;
}

function cpuMeter(apiPid: number, postgresDataDir: string): CpuMeter {
  let api = 0;
  let pgByPid = new Map<number, number>();
  let self = process.cpuUsage();
  const snapshotPg = () => new Map(postgresPids(postgresDataDir).map((pid) => [pid, processCpuMs(pid)]));
  const round = (ms: number, requests: number) => Math.round((ms / Math.max(requests, 1)) * 1000) / 1000;
  return {
    start() {
      api = processCpuMs(apiPid);
      pgByPid = snapshotPg();
      self = process.cpuUsage();
    },
    stop(requests) {
      const apiMs = processCpuMs(apiPid) - api;
      let pgMs = 0;
      // Backends keep their connections for the whole run (pool), so per-pid deltas are exact.
      for (const [pid, now] of snapshotPg()) pgMs += now - (pgByPid.get(pid) ?? 0);
      const used = process.cpuUsage(self);
      return {
        api: round(apiMs, requests),
        postgres: round(pgMs, requests),
        loadGenerator: round((used.user + used.system) / 1000, requests),
      };
    },
  };
}

// ---------------------------------------------------------------- servers

async function startServers(databaseUrl: string): Promise<{ child: ChildProcess; api: string; bare: string }> {
  const nodeOptions = (process.env.BENCH_SERVER_NODE_OPTIONS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...nodeOptions, "--import", "tsx", "bench/api-server.ts"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      NODE_ENV: "production",
      HOST: "127.0.0.1",
      PORT: "0",
      DATABASE_URL: databaseUrl,
      BERTH_ADMIN_TOKEN: ADMIN_TOKEN,
      BERTH_SECRET_KEY: generateSecretKey(), // required with PostgreSQL (docs/design.md §14.3)
      LOG_LEVEL: "silent",
    },
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`bench server exited (${code}):\n${stderr}`)));
  });
  const { api, bare } = JSON.parse(first) as { api: string; bare: string };
  return { child, api, bare };
}

// ---------------------------------------------------------------- fixtures

interface Fixture {
  token: string;
  deploymentIds: string[];
}

function deploymentBody(name: string) {
  return {
    name,
    labels: { team: "bench" },
    spec: {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "server", replicas: 2, resources: { gpus: 2, gpuType: "nvidia-h100-80gb" } }],
    },
  };
}

/** An editor key bound to the bootstrap project (what a real client sends), and seeded deployments. */
async function prepare(api: string): Promise<Fixture> {
  const { items } = await call(api, ADMIN_TOKEN, "GET", "/v1/projects");
  const project = (items as Array<{ id: string; name: string }>).find((p) => p.name === "default");
  if (!project) throw new Error("the bootstrap project `default` is missing");
  const key = await call(api, ADMIN_TOKEN, "POST", "/v1/api-keys", { name: "bench", role: "editor", projectId: project.id });
  const token: string = key.token;
  const deploymentIds: string[] = [];
  for (let start = 0; start < SEEDED; start += 10) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(10, SEEDED - start) }, (_, i) =>
        call(api, token, "POST", "/v1/deployments", deploymentBody(`seed-${String(start + i).padStart(3, "0")}`)),
      ),
    );
    deploymentIds.push(...batch.map((d: { id: string }) => d.id));
  }
  return { token, deploymentIds };
}

// ---------------------------------------------------------------- load

type LoadOptions = Omit<autocannon.Options, "url" | "duration">;

async function fire(url: string, options: LoadOptions, durationS: number): Promise<autocannon.Result> {
  return autocannon({ url, connections: CONNECTIONS, ...options, duration: durationS });
}

function summarize(name: string, result: autocannon.Result, extra: Partial<CaseResult> = {}): CaseResult {
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = Number(stat.count ?? 0);
  const requests = Object.values(statusCodes).reduce((a, b) => a + b, 0);
  return {
    name,
    rps: Math.round(requests / result.duration),
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statusCodes,
    ...extra,
  };
}

let meter: CpuMeter | undefined;

interface MeasureOptions {
  extra?: Partial<CaseResult>;
  /** Runs before the warm-up and before the measured run (e.g. to re-read ETags). */
  before?: () => Promise<void>;
}

/** A warm-up run (not recorded), then the measured one; undefined when BENCH_ONLY skips it. */
async function measure(name: string, url: string, options: () => LoadOptions, { extra = {}, before }: MeasureOptions = {}) {
  if (ONLY && !ONLY.test(name)) return undefined;
  log(`${name}: warm-up ${WARMUP_S} s, then ${DURATION_S} s`);
  await before?.();
  await fire(url, options(), WARMUP_S);
  await before?.();
  meter?.start();
  const raw = await fire(url, options(), DURATION_S);
  const result = summarize(name, raw, extra);
  result.cpuMsPerRequest = meter?.stop(result.requests);
  const cpu = result.cpuMsPerRequest;
  log(
    `${name}: ${result.rps} rps, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}` +
      (cpu ? `; CPU ms/request api ${cpu.api}, postgres ${cpu.postgres}, autocannon ${cpu.loadGenerator}` : ""),
  );
  return result;
}

/**
 * An open-loop client at a steady rate: request i is due at start + i/rate, whatever the
 * earlier ones are doing, and its latency counts from when it was due (so a stalled server
 * is charged for the wait, as with coordinated-omission correction). autocannon's
 * `overallRate` instead sends each connection's share as a burst at the start of every second.
 */
async function paced(
  name: string,
  base: string,
  rate: number,
  durationS: number,
  nextRequest: () => { method: string; path: string; headers: Record<string, string>; body?: string },
  extra: Partial<CaseResult> = {},
): Promise<CaseResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const { hostname, port } = new URL(base);
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  const send = (due: number) =>
    new Promise<void>((resolve) => {
      const { method, path, headers, body } = nextRequest();
      const req = http.request({ agent, hostname, port, method, path, headers }, (res) => {
        res.resume();
        res.on("end", () => {
          latencies.push(performance.now() - due);
          statusCodes[res.statusCode!] = (statusCodes[res.statusCode!] ?? 0) + 1;
          resolve();
        });
      });
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  const total = Math.floor(rate * durationS);
  const inFlight: Promise<void>[] = [];
  meter?.start();
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const ahead = due - performance.now();
    if (ahead >= 1) await new Promise((resolve) => setTimeout(resolve, ahead));
    inFlight.push(send(due));
  }
  await Promise.all(inFlight);
  const elapsedS = (performance.now() - start) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 100) / 100;
  const requests = latencies.length;
  const result: CaseResult = {
    name,
    rps: Math.round(requests / elapsedS),
    p50: at(0.5),
    p99: at(0.99),
    requests,
    errors,
    timeouts: 0,
    non2xx: Object.entries(statusCodes).reduce((n, [code, count]) => (code.startsWith("2") ? n : n + count), 0),
    statusCodes,
    ...extra,
  };
  result.cpuMsPerRequest = meter?.stop(requests);
  log(`${name}: ${result.rps} rps, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}, errors ${errors}`);
  return result;
}

function authHeaders(token: string, json = false): Record<string, string> {
  return { authorization: `Bearer ${token}`, ...(json ? { "content-type": "application/json" } : {}) };
}

/** GET one deployment, round-robin over the seeded ones. */
function getOne(fixture: Fixture): LoadOptions {
  let next = 0;
  return {
    requests: [
      {
        method: "GET",
        headers: authHeaders(fixture.token),
        setupRequest: (request) => ({ ...request, path: `/v1/deployments/${fixture.deploymentIds[next++ % fixture.deploymentIds.length]}` }),
      },
    ],
  };
}

let created = 0;
/** POST a deployment with a name never used before (one counter for the whole run). */
function postOne(fixture: Fixture): LoadOptions {
  return {
    requests: [
      {
        method: "POST",
        path: "/v1/deployments",
        headers: authHeaders(fixture.token, true),
        setupRequest: (request) => ({ ...request, body: JSON.stringify(deploymentBody(`load-${(created++).toString(36)}`)) }),
      },
    ],
  };
}

/**
 * PATCH with If-Match: each request sends the ETag of that deployment's previous answer.
 * A deployment is lent to one connection at a time (a free list twice the connection count),
 * so concurrent writers never race on one row and a 412 means a real bug, not contention.
 */
function patchOne(fixture: Fixture, etags: Map<string, string>): LoadOptions {
  const free = fixture.deploymentIds.slice(0, CONNECTIONS * 2);
  let replicas = 0;
  return {
    requests: [
      {
        method: "PATCH",
        headers: authHeaders(fixture.token),
        setupRequest: (request, context) => {
          const id = free.shift();
          if (!id) throw new Error("PATCH bench ran out of free deployments");
          (context as { id?: string }).id = id;
          return {
            ...request,
            path: `/v1/deployments/${id}`,
            headers: {
              ...request.headers,
              "content-type": "application/merge-patch+json",
              "if-match": etags.get(id) ?? "*",
            },
            body: JSON.stringify({ spec: { roles: [{ name: "server", replicas: 1 + (replicas++ % 4) }] } }),
          };
        },
        onResponse: (status, _body, context, headers) => {
          const id = (context as { id?: string }).id!;
          const etag = headerValue(headers, "etag");
          // 200 carries the new ETag; a 412 carries the current one, so the next request recovers.
          if (etag && (status === 200 || status === 412)) etags.set(id, etag);
          free.push(id);
        },
      },
    ],
  };
}

function headerValue(headers: Record<string, string | string[] | undefined> | undefined, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

// ---------------------------------------------------------------- report

function printTable(cases: CaseResult[], verdicts: string[]): void {
  const rows = [
    ["case", "rps", "p50 ms", "p99 ms", "vs bare", "non-2xx", "errors", "api cpu ms/req", "pg cpu ms/req"],
    ...cases.map((c) => [
      c.name,
      String(c.rps),
      c.p50.toFixed(2),
      c.p99.toFixed(2),
      c.ratioToBare === undefined ? "" : `${(c.ratioToBare * 100).toFixed(1)}%`,
      String(c.non2xx),
      String(c.errors + c.timeouts),
      c.cpuMsPerRequest ? c.cpuMsPerRequest.api.toFixed(3) : "",
      c.cpuMsPerRequest ? c.cpuMsPerRequest.postgres.toFixed(3) : "",
    ]),
  ];
  printRows(rows);
  console.log("\ntargets:");
  for (const verdict of verdicts) console.log(`  ${verdict}`);
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  let postgres: PostgresServer | undefined;
  let child: ChildProcess | undefined;
  try {
    log("starting PostgreSQL 15");
    postgres = await startPostgresServer();
    const databaseUrl = await createDatabase(postgres.adminUrl, "berth_bench");
    const servers = await startServers(databaseUrl);
    child = servers.child;
    meter = cpuMeter(child.pid!, `${postgres.root}/data`);
    log(`API ${servers.api}, bare route ${servers.bare}/hello`);
    const fixture = await prepare(servers.api);
    log(`seeded ${fixture.deploymentIds.length} deployments`);

    const cases: CaseResult[] = [];
    const record = (result: CaseResult | undefined) => {
      if (result) cases.push(result);
      return result;
    };
    const bare = record(await measure("bare /hello", `${servers.bare}/hello`, () => ({})));
    const withRatio = (result: CaseResult | undefined) =>
      result && bare ? { ...result, ratioToBare: Math.round((result.rps / bare.rps) * 1000) / 1000 } : result;

    const floorId = fixture.deploymentIds[0]!;
    const floor = record(
      withRatio(await measure("bare + one pg read (floor)", `${servers.bare}/hello-db/${floorId}`, () => ({}))),
    );
    const get = record(withRatio(await measure("GET /v1/deployments/{id}", servers.api, () => getOne(fixture))));
    if (get && floor) get.note = `${Math.round((get.rps / floor.rps) * 100)}% of the one-read floor`;
    record(
      withRatio(
        await measure("LIST /v1/deployments?limit=50", `${servers.api}/v1/deployments?limit=50`, () => ({
          headers: authHeaders(fixture.token),
        })),
      ),
    );
    record(withRatio(await measure("POST /v1/deployments", servers.api, () => postOne(fixture))));

    const etags = new Map<string, string>();
    // Requests cut off when a run ends may still land after it: start each run from fresh ETags.
    const readETags = async () => {
      for (const id of fixture.deploymentIds.slice(0, CONNECTIONS * 2)) {
        const res = await fetch(`${servers.api}/v1/deployments/${id}`, { headers: authHeaders(fixture.token) });
        etags.set(id, res.headers.get("etag")!);
        await res.arrayBuffer();
      }
    };
    const patch = record(
      withRatio(
        await measure("PATCH /v1/deployments/{id} (If-Match)", servers.api, () => patchOne(fixture, etags), { before: readETags }),
      ),
    );
    if (patch) patch.note = `412 (If-Match mismatch): ${patch.statusCodes["412"] ?? 0}`;

    const { getP99AtRate, postP99AtRate, getThroughputRatio } = TARGETS;
    const getAtRate = record(
      await measure(`GET at ${getP99AtRate.rate} rps`, servers.api, () => ({ ...getOne(fixture), overallRate: getP99AtRate.rate }), {
        extra: { targetRps: getP99AtRate.rate },
      }),
    );
    const postAtRate = record(
      await measure(`POST at ${postP99AtRate.rate} rps`, servers.api, () => ({ ...postOne(fixture), overallRate: postP99AtRate.rate }), {
        extra: { targetRps: postP99AtRate.rate },
      }),
    );

    // The same two rates from an evenly paced open-loop client (see paced()).
    const pacedCase = async (name: string, rate: number, nextRequest: Parameters<typeof paced>[4]) => {
      if (ONLY && !ONLY.test(name)) return undefined;
      log(`${name}: warm-up ${WARMUP_S} s, then ${DURATION_S} s`);
      await paced(`${name} (warm-up)`, servers.api, rate, WARMUP_S, nextRequest);
      return paced(name, servers.api, rate, DURATION_S, nextRequest, { targetRps: rate });
    };
    let nextGet = 0;
    const getPaced = record(
      await pacedCase(`GET at ${getP99AtRate.rate} rps, paced`, getP99AtRate.rate, () => ({
        method: "GET",
        path: `/v1/deployments/${fixture.deploymentIds[nextGet++ % fixture.deploymentIds.length]}`,
        headers: authHeaders(fixture.token),
      })),
    );
    const postPaced = record(
      await pacedCase(`POST at ${postP99AtRate.rate} rps, paced`, postP99AtRate.rate, () => ({
        method: "POST",
        path: "/v1/deployments",
        headers: authHeaders(fixture.token, true),
        body: JSON.stringify(deploymentBody(`load-${(created++).toString(36)}`)),
      })),
    );

    const targets = [];
    const latencyTarget = (label: string, result: CaseResult | undefined, rate: number, p99Ms: number) => {
      if (!result) return;
      targets.push({
        name: `${label} p99 < ${p99Ms} ms at ${rate} rps (${result.name.includes("paced") ? "paced" : "autocannon overallRate"})`,
        measured: `${result.p99} ms (at ${result.rps} rps)`,
        pass: result.p99 < p99Ms && result.non2xx === 0 && result.errors === 0,
      });
    };
    latencyTarget("GET", getAtRate, getP99AtRate.rate, getP99AtRate.p99Ms);
    latencyTarget("GET", getPaced, getP99AtRate.rate, getP99AtRate.p99Ms);
    latencyTarget("POST", postAtRate, postP99AtRate.rate, postP99AtRate.p99Ms);
    latencyTarget("POST", postPaced, postP99AtRate.rate, postP99AtRate.p99Ms);
    if (get?.ratioToBare !== undefined && bare) {
      targets.push({
        name: `GET throughput >= ${getThroughputRatio * 100}% of the bare route`,
        measured: `${(get.ratioToBare * 100).toFixed(1)}% (${get.rps} / ${bare.rps} rps)`,
        pass: get.ratioToBare >= getThroughputRatio,
      });
    }
    printTable(
      cases,
      targets.map((t) => `${t.pass ? "PASS" : "FAIL"}  ${t.name}: ${t.measured}`),
    );
    if (patch?.note) console.log(`  PATCH ${patch.note}`);
    if (get?.note) console.log(`  GET one: ${get.note}`);

    if (ONLY) {
      log("BENCH_ONLY set: results file not written");
      return;
    }
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      RESULTS,
      JSON.stringify(
        {
          benchmark: "api",
          date: new Date().toISOString(),
          machine: { node: process.version, cpus: availableParallelism(), cpu: cpus()[0]?.model ?? "unknown" },
          settings: {
            durationSeconds: DURATION_S,
            warmupSeconds: WARMUP_S,
            connections: CONNECTIONS,
            seededDeployments: SEEDED,
            logLevel: "silent",
            auth: "project-bound editor API key",
            rateLimitedCases:
              "`at N rps`: autocannon overallRate, where each connection sends its share as a burst at the start of every second; " +
              "`at N rps, paced`: an open-loop client sending one request every 1/N s, latency counted from when each was due",
          },
          cases,
          targets,
        },
        null,
        2,
      ) + "\n",
    );
    log(`wrote ${fileURLToPath(RESULTS)}`);
  } finally {
    if (child) await stopChild(child);
    await postgres?.stop();
  }
}

await main();

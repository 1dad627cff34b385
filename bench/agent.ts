// Agent benchmark: `npm run bench:agent [-- --deployments N --changes N --passes N
// --resync-seconds N]` (defaults 500, 100, 4, 15; only a default run writes results). Starts the real
// `berth serve` (PGlite, as `berth up` runs it), a simulated cluster in this process (50 nodes
// × 64 GPUs; the bench's engine image runs no process, so 2,000 pods fit on one machine), and
// the agent in a child process of its own (bench/support/agent-process.ts), so its CPU and RSS
// are its own. Then, through the API, N deployments × 4 replicas × 1 GPU.
//
// Reconcile cost: with resync every R s, the agent's CPU (its own process.cpuUsage) sampled just
// before a pass is due and again once its requests are over; passes the heartbeat ran into are
// left out (the heartbeat stays on: the API marks a cluster silent for 30 s disconnected). Baselines, in the agent's process and client, when no pass runs: the bare reads a
// relisting pass needs (readNamespace + listNamespacedPod + listNamespacedService per deployment,
// all at once as a resync enqueues them), the agent's own observeDeployment, and the heartbeat's
// reads. Propagation: C changes (replicas 4 ↔ 5 by merge PATCH), one at a time, with the agent
// on its default configuration; latency from the PATCH response to the first write request the
// simulated API server receives (the commit lies between the PATCH being sent and its response,
// so "from send" bounds it above). Baseline: a second long-poll client of GET /v1/agent/desired
// (the agent's token) started before each PATCH: the protocol's own latency. Everything is timed
// on this process's performance.now(). Prints tables, writes bench/results/agent.json.
//
// Footprint (`-- --footprint-only` runs only this after the setup): the real `berth agent` CLI
// against the same 500 × 4 cluster, compiled (`npm run build` first, dist/bin/berth.js) beside
// the tsx one (bin/berth.js with BERTH_FROM_SOURCE=1). Ready = spawn to its "berth agent started"
// line (modules loaded, loops started); also spawn to its first request to the simulated API
// server. Median of FOOTPRINT_STARTS starts each, alternating. Then one run each held for
// FOOTPRINT_HOLD_MS (its informers list all 2,000 pods, it reconciles all 500 deployments, a
// resync pass and heartbeats run): peak RSS is the kernel's high-water mark (VmHWM in
// /proc/<pid>/status, Linux). Writes bench/results/agent-footprint.json.
import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { namespaceName } from "../k8s/render/index.ts";
import { berthPrograms, type ObservedRequest, type SimCluster, startSimCluster } from "../k8s/sim/index.ts";
import type { AgentConfig } from "../src/agent/agent.ts";
import { registerAgent } from "../src/agent/api-client.ts";
import type { AgentProcessOptions, AgentRequest, ReadsResult, Sample } from "./support/agent-process.ts";
import { printTable } from "./support/table.ts";

const { values: flags } = parseArgs({
  options: {
    deployments: { type: "string", default: "500" },
    changes: { type: "string", default: "100" },
    passes: { type: "string", default: "4" },
    "resync-seconds": { type: "string", default: "15" },
    "footprint-only": { type: "boolean", default: false },
    /** Adds a footprint row: the compiled agent with these NODE_OPTIONS (e.g. heap limits), to tell live data from GC slack. */
    "compiled-node-options": { type: "string" },
  },
});
const FOOTPRINT_ONLY = flags["footprint-only"];
const DEPLOYMENTS = Number(flags.deployments);
const CHANGES = Number(flags.changes);
const PASSES = Number(flags.passes);
const RESYNC_MS = Number(flags["resync-seconds"]) * 1000;
const REPLICAS = 4;
const NODES = 50;
const GPUS_PER_NODE = 64;
const BASELINE_ROUNDS = 3;
const CREATE_CONCURRENCY = 4;
const ENGINE_IMAGE = "bench.local/no-process-engine:1";
const ROUTER_IMAGE = "ghcr.io/berth/berth:0.1.0";
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const PROJECT = "bench";
const NAMESPACE = namespaceName(PROJECT);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS = new URL("./results/agent.json", import.meta.url);
const FOOTPRINT_RESULTS = new URL("./results/agent-footprint.json", import.meta.url);
const FOOTPRINT_STARTS = 3;
/** Past one default resync (30 s) and three heartbeats (10 s). */
const FOOTPRINT_HOLD_MS = 35_000;
const FOOTPRINT_TARGETS = { peakRssMb: 200, readyMs: 1000 };
/** BENCH_AGENT_PROFILE=file.cpuprofile: a V8 CPU profile of the agent over the reconcile window (it costs CPU: not for the numbers). */
const PROFILE = process.env.BENCH_AGENT_PROFILE;
const TARGETS = { propagationP99Ms: 1000, passCpuMs: 2000, rssMb: 300 };
/** Bounds on every wait, so the bench ends. */
const LIMITS = { allReadyMs: 8 * 60_000, firstWriteMs: 15_000, settleMs: 30_000, quietMs: 120_000 };

if (![DEPLOYMENTS, CHANGES, PASSES, RESYNC_MS].every((n) => Number.isInteger(n) && n > 0)) {
  throw new Error("--deployments, --changes, --passes and --resync-seconds take positive integers");
}
if (DEPLOYMENTS * REPLICAS + Math.min(DEPLOYMENTS, CHANGES) > NODES * GPUS_PER_NODE) throw new Error(`more than ${NODES * GPUS_PER_NODE} GPUs needed`);

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

interface Distribution {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

function distribution(values: number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  return { n: sorted.length, p50: round(percentile(sorted, 50)), p90: round(percentile(sorted, 90)), p99: round(percentile(sorted, 99)), max: round(sorted.at(-1) ?? NaN) };
}

const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);

// ---------------------------------------------------------------------------------------------
// The simulated API server's requests, as they arrive

const seen = { total: 0, lastAt: 0, writes: [] as ObservedRequest[], log: undefined as ObservedRequest[] | undefined };

function onRequest(request: ObservedRequest): void {
  seen.total++;
  seen.lastAt = request.at;
  seen.log?.push(request);
  if (request.method !== "GET") seen.writes.push(request);
}

/** Resolves once no request has arrived for `ms` (false if that never happens within the limit). */
async function quiet(ms: number, limitMs = LIMITS.quietMs): Promise<boolean> {
  const deadline = performance.now() + limitMs;
  while (performance.now() < deadline) {
    if (performance.now() - seen.lastAt >= ms) return true;
    await sleep(50);
  }
  return false;
}

/** The next burst of requests (a resync pass) has started and ended (quiet for `gapMs`). */
async function nextPassEnd(gapMs = 700): Promise<void> {
  const before = seen.total;
  const deadline = performance.now() + RESYNC_MS * 2 + 30_000;
  while (seen.total === before && performance.now() < deadline) await sleep(20);
  await quiet(gapMs);
}

async function firstWriteAfter(t: number, limitMs: number): Promise<ObservedRequest | undefined> {
  const deadline = performance.now() + limitMs;
  let from = 0;
  for (;;) {
    for (let i = from; i < seen.writes.length; i++) if (seen.writes[i]!.at >= t) return seen.writes[i];
    from = Math.max(0, seen.writes.length - 1);
    if (performance.now() > deadline) return undefined;
    await sleep(5);
  }
}

// ---------------------------------------------------------------------------------------------
// Processes

interface Serve {
  child: ChildProcess;
  url: string;
  dataDir: string;
}

/** `berth serve` on a fresh PGlite directory; resolves with its URL (from the listen line). */
async function startServe(): Promise<Serve> {
  const dataDir = mkdtempSync(join(tmpdir(), "berth-bench-agent-"));
  const child = spawn(process.execPath, ["bin/berth.js", "serve"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, HOST: "127.0.0.1", PORT: "0", BERTH_DATA_DIR: dataDir, BERTH_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: "info" },
  });
  let output = "";
  const collect = (chunk: Buffer) => void (output.length < 1_000_000 && (output += chunk));
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"berth API listening"/.exec(output);
    if (match) {
      child.stdout!.off("data", collect).resume();
      child.stderr!.off("data", collect).on("data", (chunk: Buffer) => {
        if (/"level":(50|60)/.test(String(chunk))) process.stderr.write(`[serve] ${chunk}`);
      });
      return { child, url: match[1]!, dataDir };
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      rmSync(dataDir, { recursive: true, force: true });
      throw new Error(`berth serve did not start:\n${output}`);
    }
    await sleep(100);
  }
}

async function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

type Reply<T> = T & { id: number; error?: string };

class AgentProcess {
  #next = 1;
  #pending = new Map<number, (reply: Reply<object>) => void>();
  /** Sampled as the process became ready, before any work. */
  atStart!: Sample;
  private constructor(readonly child: ChildProcess) {
    child.on("message", (message: Reply<object> & { ready?: boolean }) => this.#pending.get(message.id)?.(message));
    child.once("exit", (code) => {
      for (const settle of this.#pending.values()) settle({ id: -1, error: `agent process exited (${code})` });
    });
  }

  static async start(options: AgentProcessOptions): Promise<AgentProcess> {
    const child = fork(fileURLToPath(new URL("./support/agent-process.ts", import.meta.url)), [JSON.stringify(options)], {
      cwd: ROOT,
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const agent = new AgentProcess(child);
    agent.atStart = await agent.#call<Sample>({ id: 0, type: "sample" }, 0); // the ready message carries id 0
    return agent;
  }

  #call<T>(request: AgentRequest, id = this.#next++): Promise<Reply<T>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`agent process: no answer to ${request.type} in 120 s`)), 120_000);
      this.#pending.set(id, (reply) => {
        clearTimeout(timer);
        this.#pending.delete(id);
        if (reply.error) reject(new Error(reply.error));
        else resolve(reply as Reply<T>);
      });
      if (id !== 0) this.child.send({ ...request, id });
    });
  }

  sample(): Promise<Sample> {
    return this.#call<Sample>({ id: 0, type: "sample" });
  }

  reads(mode: "bare" | "observe" | "heartbeat", deploymentIds: string[]): Promise<ReadsResult> {
    return this.#call<ReadsResult>({ id: 0, type: "reads", mode, namespace: NAMESPACE, deploymentIds });
  }

  async profile(action: "start" | "stop", path: string): Promise<void> {
    await this.#call<object>({ id: 0, type: "profile", action, path });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    await this.#call<object>({ id: 0, type: "stop" }).catch(() => {});
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// The API

interface Answer {
  status: number;
  body: any;
  etag: string | null;
}

/** GETs are retried on a network failure (a keep-alive connection the loaded server closed); writes are not. */
async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, token = ADMIN_TOKEN): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, etag: res.headers.get("etag") };
    } catch (error) {
      if (method !== "GET" || attempt >= 3) throw error;
      await sleep(200);
    }
  }
}

async function must(answer: Promise<Answer>, what: string): Promise<Answer> {
  const result = await answer;
  if (result.status >= 300) throw new Error(`${what}: ${result.status} ${JSON.stringify(result.body)}`);
  return result;
}

async function countReady(base: string, projectId: string): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const query = `projectId=${projectId}&phase=Ready&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const answer = await must(call(base, "GET", `/v1/deployments?${query}`), "list deployments");
    count += answer.body.items.length;
    cursor = answer.body.nextCursor ?? undefined;
    if (!cursor) break;
  }
  return count;
}

// ---------------------------------------------------------------------------------------------
// Phases

interface Convergence {
  deployments: number;
  pods: number;
  createSeconds: number;
  allReadySeconds: number;
  agentCpuMs: number;
  /** "reconcile failed" warnings the agent logged on the way (it retries with backoff). */
  agentWarnings: number;
}

async function createAll(base: string, projectId: string, agent: AgentProcess): Promise<{ ids: string[]; names: string[]; convergence: Convergence }> {
  const start = await agent.sample();
  const t0 = performance.now();
  const ids: string[] = new Array(DEPLOYMENTS);
  const names = Array.from({ length: DEPLOYMENTS }, (_, i) => `d-${String(i).padStart(4, "0")}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < DEPLOYMENTS) {
        const i = next++;
        const body = {
          name: names[i],
          projectId,
          spec: {
            model: { name: "Qwen/Qwen3-8B" },
            engine: { name: "vllm", image: ENGINE_IMAGE },
            roles: [{ name: "main", replicas: REPLICAS, resources: { gpus: 1 } }],
          },
        };
        // A create whose answer was lost is looked up by name (409 on the retry).
        const created = await call(base, "POST", "/v1/deployments", body).catch(() => call(base, "POST", "/v1/deployments", body));
        const found = created.status === 409 ? await call(base, "GET", `/v1/deployments/${names[i]}?projectId=${projectId}`) : created;
        if (found.status >= 300) throw new Error(`create ${names[i]}: ${found.status} ${JSON.stringify(found.body)}`);
        ids[i] = found.body.id;
      }
    }),
  );
  const createSeconds = (performance.now() - t0) / 1000;
  log(`created ${DEPLOYMENTS} deployments in ${createSeconds.toFixed(1)} s; waiting for all Ready`);
  const deadline = performance.now() + LIMITS.allReadyMs;
  let ready = 0;
  let lastLog = 0;
  while ((ready = await countReady(base, projectId)) < DEPLOYMENTS) {
    if (performance.now() > deadline) throw new Error(`only ${ready}/${DEPLOYMENTS} deployments Ready after ${LIMITS.allReadyMs / 1000} s`);
    if (performance.now() - lastLog > 10_000) {
      lastLog = performance.now();
      log(`  ${ready}/${DEPLOYMENTS} Ready after ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
    await sleep(1000);
  }
  const allReadySeconds = (performance.now() - t0) / 1000;
  log(`all ${DEPLOYMENTS} Ready ${allReadySeconds.toFixed(1)} s after the first create`);
  const end = await agent.sample();
  return {
    ids,
    names,
    convergence: {
      deployments: DEPLOYMENTS,
      pods: DEPLOYMENTS * REPLICAS,
      createSeconds: round(createSeconds),
      allReadySeconds: round(allReadySeconds),
      agentCpuMs: Math.round(end.cpuMs - start.cpuMs),
      agentWarnings: end.warnings - start.warnings,
    },
  };
}

interface ReadsSummary {
  cpuMs: number;
  wallMs: number;
  rounds: Array<{ cpuMs: number; wallMs: number; failed: number }>;
}

interface PassSample {
  cpuMs: number;
  wallMs: number;
  requests: number;
  warnings: number;
}

interface ReconcileCost {
  resyncSeconds: number;
  /** Passes measured (one sample of the agent's CPU just before a pass and one just after). */
  passes: PassSample[];
  /** Passes left out because the agent's heartbeat ran inside the window. */
  passesWithHeartbeat: number;
  cpuMsPerPass: number;
  cpuMsPerPassMax: number;
  bareReads: ReadsSummary;
  observeOnly: ReadsSummary;
  heartbeatReads: ReadsSummary;
  ratioToBareReads: number;
  ratioToObserve: number;
  rssMb: number;
  maxRssMb: number;
  heapUsedMb: number;
  /** The same process right after start (imports, clients), before any work. */
  rssAtStartMb: number;
  /** Warnings the agent logged inside the measured passes (a failed reconcile costs less, its retry more). */
  agentWarningsInWindow: number;
}

const isHeartbeatRead = (request: ObservedRequest) => request.method === "GET" && (request.path === "/api/v1/nodes" || request.path === "/api/v1/pods");
const isPassStart = (request: ObservedRequest) => request.method === "GET" && request.path === `/api/v1/namespaces/${NAMESPACE}`;
const requestsBetween = (from: number, to: number) => (seen.log ?? []).filter((r) => r.at >= from && r.at <= to);

/** Arrival time of the first request of the next resync pass (a readNamespace after 2 s of no pass requests). */
async function nextPassStart(limitMs: number): Promise<number | undefined> {
  const deadline = performance.now() + limitMs;
  let from = seen.log!.length;
  while (performance.now() < deadline) {
    const log = seen.log!;
    for (let i = from; i < log.length; i++) {
      if (!isPassStart(log[i]!)) continue;
      const previous = log.slice(0, i).findLast((r) => !isHeartbeatRead(r));
      if (!previous || log[i]!.at - previous.at >= 2000) return log[i]!.at;
    }
    from = log.length;
    await sleep(20);
  }
  return undefined;
}

/**
 * For an agent whose resync sends the cluster nothing (informers: no relist per pass), so no
 * pass can be seen: its CPU over PASSES resync intervals ÷ PASSES, heartbeats included
 * (`passesWithHeartbeat` then counts the heartbeats inside the window).
 */
async function measureByIntervals(agent: AgentProcess, ids: string[]): Promise<ReconcileCost> {
  log(`  no relisting pass seen: the agent's CPU over ${PASSES} resync intervals ÷ ${PASSES}, heartbeats included`);
  seen.log = [];
  const a = await agent.sample();
  const t0 = performance.now();
  await sleep(PASSES * RESYNC_MS);
  const b = await agent.sample();
  const window = requestsBetween(t0, performance.now());
  const cpuMs = (b.cpuMs - a.cpuMs) / PASSES;
  const reads = async (mode: "bare" | "observe" | "heartbeat") => {
    const results: ReadsResult[] = [];
    for (let i = 0; i < BASELINE_ROUNDS; i++) results.push(await agent.reads(mode, ids));
    return { cpuMs: round(median(results.map((r) => r.cpuMs))), wallMs: round(median(results.map((r) => r.wallMs))), rounds: results.map((r) => ({ cpuMs: round(r.cpuMs), wallMs: round(r.wallMs), failed: r.failed })) };
  };
  const [bareReads, observeOnly, heartbeatReads] = [await reads("bare"), await reads("observe"), await reads("heartbeat")];
  const end = await agent.sample();
  seen.log = undefined;
  return {
    resyncSeconds: RESYNC_MS / 1000,
    passes: [{ cpuMs: round(cpuMs), wallMs: NaN, requests: Math.round(window.length / PASSES), warnings: b.warnings - a.warnings }],
    passesWithHeartbeat: window.filter((r) => r.path === "/api/v1/nodes").length,
    cpuMsPerPass: round(cpuMs),
    cpuMsPerPassMax: round(cpuMs),
    bareReads,
    observeOnly,
    heartbeatReads,
    ratioToBareReads: round(cpuMs / bareReads.cpuMs, 2),
    ratioToObserve: round(cpuMs / observeOnly.cpuMs, 2),
    rssMb: round(b.rssMb),
    maxRssMb: round(b.maxRssMb),
    heapUsedMb: round(end.heapUsedMb),
    rssAtStartMb: round(agent.atStart.rssMb),
    agentWarningsInWindow: b.warnings - a.warnings,
  };
}

async function measureReconcile(agent: AgentProcess, ids: string[]): Promise<ReconcileCost> {
  seen.log = [];
  log(`reconcile cost: finding the resync phase (every ${RESYNC_MS / 1000} s)`);
  let start = await nextPassStart(RESYNC_MS * 2 + 30_000);
  if (start === undefined) return measureByIntervals(agent, ids);
  await quiet(700);
  if (PROFILE) await agent.profile("start", PROFILE);
  const passes: PassSample[] = [];
  let passesWithHeartbeat = 0;
  for (let attempt = 0; passes.length < PASSES && attempt < PASSES * 4; attempt++) {
    // Sample just before the next pass is due, and again once it is over.
    const due = start + RESYNC_MS;
    if (due - 400 > performance.now()) await sleep(due - 400 - performance.now());
    const a = await agent.sample();
    const tA = performance.now();
    const next = await nextPassStart(RESYNC_MS + 10_000);
    if (next === undefined) throw new Error("the resync passes stopped");
    start = next;
    await quiet(700);
    const b = await agent.sample();
    const window = requestsBetween(tA, performance.now());
    if (window.some(isHeartbeatRead)) {
      passesWithHeartbeat++;
      continue;
    }
    const pass = window.filter((r) => r.at >= next);
    passes.push({ cpuMs: round(b.cpuMs - a.cpuMs), wallMs: round(pass.at(-1)!.at - next), requests: pass.length, warnings: b.warnings - a.warnings });
    log(`  pass ${passes.length}: ${passes.at(-1)!.cpuMs} ms CPU, ${passes.at(-1)!.wallMs} ms wall, ${pass.length} requests`);
  }
  const end = await agent.sample();
  if (PROFILE) {
    await agent.profile("stop", PROFILE);
    log(`  CPU profile of the agent over the passes (and the time between): ${PROFILE}`);
  }
  if (passes.length === 0) throw new Error("every pass overlapped a heartbeat");

  // Baselines between passes; a round the agent's own heartbeat ran into is done again.
  const measure = async (mode: "bare" | "observe" | "heartbeat"): Promise<ReadsResult> => {
    for (let attempt = 1; ; attempt++) {
      const t0 = performance.now();
      const result = await agent.reads(mode, ids);
      const heartbeats = requestsBetween(t0, performance.now()).filter(isHeartbeatRead).length;
      if (heartbeats <= (mode === "heartbeat" ? 2 : 0) || attempt >= 4) return result;
      await quiet(300);
    }
  };
  const rounds = { bare: [] as ReadsResult[], observe: [] as ReadsResult[], heartbeat: [] as ReadsResult[] };
  for (let i = 0; i < BASELINE_ROUNDS; i++) {
    await nextPassStart(RESYNC_MS + 10_000);
    await quiet(700);
    const started = performance.now();
    rounds.bare.push(await measure("bare"));
    rounds.observe.push(await measure("observe"));
    rounds.heartbeat.push(await measure("heartbeat"));
    const took = performance.now() - started;
    if (took > RESYNC_MS * 0.6) log(`  note: baseline round ${i + 1} took ${(took / 1000).toFixed(1)} s of a ${RESYNC_MS / 1000} s interval`);
  }
  seen.log = undefined;
  const summarize = (results: ReadsResult[]): ReadsSummary => ({
    cpuMs: round(median(results.map((r) => r.cpuMs))),
    wallMs: round(median(results.map((r) => r.wallMs))),
    rounds: results.map((r) => ({ cpuMs: round(r.cpuMs), wallMs: round(r.wallMs), failed: r.failed })),
  });
  const bareReads = summarize(rounds.bare);
  const observeOnly = summarize(rounds.observe);
  const cpuMsPerPass = median(passes.map((p) => p.cpuMs));
  return {
    resyncSeconds: RESYNC_MS / 1000,
    passes,
    passesWithHeartbeat,
    cpuMsPerPass: round(cpuMsPerPass),
    cpuMsPerPassMax: round(Math.max(...passes.map((p) => p.cpuMs))),
    bareReads,
    observeOnly,
    heartbeatReads: summarize(rounds.heartbeat),
    ratioToBareReads: round(cpuMsPerPass / bareReads.cpuMs, 2),
    ratioToObserve: round(cpuMsPerPass / observeOnly.cpuMs, 2),
    rssMb: round(end.rssMb),
    maxRssMb: round(end.maxRssMb),
    heapUsedMb: round(end.heapUsedMb),
    rssAtStartMb: round(agent.atStart.rssMb),
    agentWarningsInWindow: passes.reduce((sum, p) => sum + p.warnings, 0),
  };
}

interface Propagation {
  changes: number;
  measured: number;
  noWrite: number;
  unexpectedFirstWrite: number;
  settleTimeouts: number;
  longPoll: Distribution;
  fromResponse: Distribution;
  fromSend: Distribution;
  patchRoundTrip: Distribution;
  ratioP50ToLongPoll: number;
  ratioP99ToLongPoll: number;
  agentWarnings: number;
  /** Changes whose first write came over 500 ms after the PATCH response, with what the agent sent the cluster meanwhile. */
  slow: Array<{ change: number; fromResponseMs: number; requestsMeanwhile: number; resyncPassMeanwhile: boolean; heartbeatMeanwhile: boolean }>;
}

/** Reads the desired-state feed up to now (waitSeconds=0) and returns its resourceVersion. */
async function drainFeed(base: string, token: string, since: number): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const answer = await must(call(base, "GET", `/v1/agent/desired?since=${since}&waitSeconds=0`, undefined, {}, token), "desired");
    if (answer.body.items.length === 0 && answer.body.deleted.length === 0) return since;
    since = answer.body.resourceVersion;
  }
  return since;
}

/** Long-polls until the feed carries `id` at `generation`; resolves with the arrival time of that answer. */
async function longPollFor(base: string, token: string, since: number, id: string, generation: number): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const answer = await must(call(base, "GET", `/v1/agent/desired?since=${since}&waitSeconds=30`, undefined, {}, token), "desired");
    const at = performance.now();
    if (answer.body.items.some((item: any) => item.deployment.id === id && item.deployment.generation >= generation)) return at;
    since = answer.body.resourceVersion;
  }
  return NaN;
}

async function measurePropagation(base: string, token: string, agent: AgentProcess, ids: string[], names: string[]): Promise<Propagation> {
  const longPoll: number[] = [];
  const fromResponse: number[] = [];
  const fromSend: number[] = [];
  const patchRoundTrip: number[] = [];
  let noWrite = 0;
  let unexpected = 0;
  let settleTimeouts = 0;
  let since = 0;
  const warnings0 = (await agent.sample()).warnings;
  const slow: Propagation["slow"] = [];
  seen.log = [];
  for (let i = 0; i < CHANGES; i++) {
    const index = i % DEPLOYMENTS;
    const id = ids[index]!;
    const current = await must(call(base, "GET", `/v1/deployments/${id}`), "get deployment");
    const roles = current.body.spec.roles as Array<{ name: string; replicas: number }>;
    const replicas = roles[0]!.replicas === REPLICAS ? REPLICAS + 1 : REPLICAS;
    since = await drainFeed(base, token, since);
    const polled = longPollFor(base, token, since, id, current.body.generation + 1);
    await sleep(100 + Math.random() * 100); // the long-poll is waiting in the server, as the agent's is
    const tSend = performance.now();
    const patched = await call(base, "PATCH", `/v1/deployments/${id}`, { spec: { roles: roles.map((role) => ({ ...role, replicas })) } }, {
      "Content-Type": "application/merge-patch+json",
      "If-Match": current.etag!,
    });
    const tResponse = performance.now();
    if (patched.status !== 200) throw new Error(`PATCH ${id}: ${patched.status} ${JSON.stringify(patched.body)}`);
    const write = await firstWriteAfter(tSend, LIMITS.firstWriteMs);
    const polledAt = await polled;
    patchRoundTrip.push(tResponse - tSend);
    if (Number.isFinite(polledAt)) longPoll.push(polledAt - tResponse);
    if (!write) noWrite++;
    else {
      fromResponse.push(write.at - tResponse);
      fromSend.push(write.at - tSend);
      if (write.at - tResponse > 500) {
        const meanwhile = requestsBetween(tSend, write.at);
        slow.push({
          change: i,
          fromResponseMs: round(write.at - tResponse),
          requestsMeanwhile: meanwhile.length,
          resyncPassMeanwhile: meanwhile.filter(isPassStart).length > 10,
          heartbeatMeanwhile: meanwhile.some(isHeartbeatRead),
        });
      }
      const expected =
        replicas > REPLICAS
          ? write.method === "POST" && write.path === `/api/v1/namespaces/${NAMESPACE}/pods`
          : write.method === "DELETE" && write.path === `/api/v1/namespaces/${NAMESPACE}/pods/${names[index]}-main-r${REPLICAS}-m0`;
      if (!expected) unexpected++;
    }
    // Settled before the next change, so each first write belongs to its change.
    const deadline = performance.now() + LIMITS.settleMs;
    for (;;) {
      const status = (await must(call(base, "GET", `/v1/deployments/${id}`), "get deployment")).body.status;
      const role = status?.roles?.[0];
      if (status?.phase === "Ready" && status.observedGeneration === patched.body.generation && role?.ready === replicas && role?.desired === replicas) break;
      if (performance.now() > deadline) {
        settleTimeouts++;
        break;
      }
      await sleep(100);
    }
    if ((i + 1) % 20 === 0) log(`  ${i + 1}/${CHANGES} changes`);
    seen.log = seen.log.filter((r) => r.at >= performance.now() - 60_000);
  }
  seen.log = undefined;
  const result = {
    longPoll: distribution(longPoll),
    fromResponse: distribution(fromResponse),
    fromSend: distribution(fromSend),
    patchRoundTrip: distribution(patchRoundTrip),
  };
  return {
    changes: CHANGES,
    measured: fromResponse.length,
    noWrite,
    unexpectedFirstWrite: unexpected,
    settleTimeouts,
    ...result,
    ratioP50ToLongPoll: round(result.fromResponse.p50 / result.longPoll.p50, 2),
    ratioP99ToLongPoll: round(result.fromResponse.p99 / result.longPoll.p99, 2),
    agentWarnings: (await agent.sample()).warnings - warnings0,
    slow,
  };
}

// ---------------------------------------------------------------------------------------------
// Footprint of the real `berth agent` CLI: compiled against tsx

/** "compiled", "tsx", or "compiled NODE_OPTIONS=…" (--compiled-node-options). */
type Build = string;

interface Footprint {
  build: Build;
  /** Spawn to the "berth agent started" line, each start, then the median. */
  readyMs: number[];
  readyMsMedian: number;
  /** Spawn to its first request to the simulated API server. */
  firstClusterRequestMs: number[];
  firstClusterRequestMsMedian: number;
  /** RSS as the ready line came, before any work. */
  rssAtReadyMb: number;
  /** VmHWM over the held run. */
  peakRssMb: number;
  /** VmRSS at the end of the held run. */
  rssMb: number;
  /** Cluster requests the held run sent (its lists, watches and heartbeats). */
  clusterRequests: number;
  /** The process ended before the hold was over (memory then is its last sample). */
  exitedEarly: boolean;
}

const COMPILED_NODE_OPTIONS = flags["compiled-node-options"];
const AGENT_BINARIES: Record<Build, { bin: string; env: Record<string, string | undefined> }> = {
  compiled: { bin: join(ROOT, "dist", "bin", "berth.js"), env: { BERTH_FROM_SOURCE: undefined } },
  tsx: { bin: join(ROOT, "bin", "berth.js"), env: { BERTH_FROM_SOURCE: "1" } },
  ...(COMPILED_NODE_OPTIONS && {
    [`compiled NODE_OPTIONS=${COMPILED_NODE_OPTIONS}`]: { bin: join(ROOT, "dist", "bin", "berth.js"), env: { BERTH_FROM_SOURCE: undefined, NODE_OPTIONS: COMPILED_NODE_OPTIONS } },
  }),
};
const BUILDS = Object.keys(AGENT_BINARIES);

/** VmRSS and VmHWM (the peak) of a live process, in MB (Linux). */
function processMemory(pid: number): { rssMb: number; peakRssMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssMb: round(kb("VmRSS") / 1024), peakRssMb: round(kb("VmHWM") / 1024) };
}

interface AgentCli {
  child: ChildProcess;
  readyMs: number;
  firstClusterRequestMs: number;
  rssAtReadyMb: number;
}

/** Spawns `berth agent` and resolves once it printed its ready line and sent the cluster its first request. */
async function startAgentCli(build: Build, base: string, token: string, kubeconfig: string): Promise<AgentCli> {
  const { bin, env } = AGENT_BINARIES[build];
  const merged = Object.fromEntries(Object.entries({ ...process.env, LOG_LEVEL: "warn", ...env }).filter((entry): entry is [string, string] => entry[1] !== undefined));
  seen.log = [];
  const t0 = performance.now();
  const child = spawn(process.execPath, [bin, "agent", "--api", base, "--token", token, "--kubeconfig", kubeconfig], { cwd: ROOT, env: merged, stdio: ["ignore", "ignore", "pipe"] });
  let readyAt: number | undefined;
  let rssAtReadyMb = NaN;
  let errors = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    const text = String(chunk);
    if (readyAt === undefined && text.includes('"msg":"berth agent started"')) {
      readyAt = performance.now();
      rssAtReadyMb = processMemory(child.pid!).rssMb;
    } else if (errors.length < 10_000) errors += text;
  });
  const deadline = performance.now() + 60_000;
  while (readyAt === undefined || seen.log.length === 0) {
    if (child.exitCode !== null || performance.now() > deadline) {
      await stopChild(child, "SIGKILL");
      throw new Error(`berth agent (${build}) did not start:\n${errors}`);
    }
    await sleep(5);
  }
  return { child, readyMs: round(readyAt - t0), firstClusterRequestMs: round(seen.log[0]!.at - t0), rssAtReadyMb };
}

async function measureFootprint(base: string, token: string, kubeconfig: string): Promise<Footprint[]> {
  const starts: Record<Build, AgentCli[]> = Object.fromEntries(BUILDS.map((build) => [build, []]));
  for (let start = 0; start < FOOTPRINT_STARTS; start++) {
    for (const build of BUILDS) {
      const started = await startAgentCli(build, base, token, kubeconfig);
      await stopChild(started.child);
      starts[build].push(started);
      await quiet(1000);
    }
  }
  const results: Footprint[] = [];
  for (const build of BUILDS) {
    log(`  footprint: ${build} agent held for ${FOOTPRINT_HOLD_MS / 1000} s`);
    const held = await startAgentCli(build, base, token, kubeconfig);
    let memory = processMemory(held.child.pid!);
    let exitedEarly = false;
    for (const until = performance.now() + FOOTPRINT_HOLD_MS; performance.now() < until; await sleep(500)) {
      try {
        memory = processMemory(held.child.pid!);
      } catch {
        exitedEarly = true; // a heap limit below its live data ends it (--compiled-node-options)
        break;
      }
    }
    if (exitedEarly) log(`  ${build}: the agent exited during the held run (code ${held.child.exitCode}, signal ${held.child.signalCode})`);
    const clusterRequests = seen.log!.length;
    await stopChild(held.child);
    await quiet(1000);
    const readyMs = starts[build].map((s) => s.readyMs);
    const firstClusterRequestMs = starts[build].map((s) => s.firstClusterRequestMs);
    results.push({
      build,
      readyMs,
      readyMsMedian: round(median(readyMs)),
      firstClusterRequestMs,
      firstClusterRequestMsMedian: round(median(firstClusterRequestMs)),
      rssAtReadyMb: held.rssAtReadyMb,
      peakRssMb: memory.peakRssMb,
      rssMb: memory.rssMb,
      clusterRequests,
      exitedEarly,
    });
  }
  seen.log = undefined;
  return results;
}

function footprintVerdicts(footprint: Footprint[]): string[] {
  const compiled = footprint.find((f) => f.build === "compiled")!;
  return [
    `compiled agent peak RSS ≤ ${FOOTPRINT_TARGETS.peakRssMb} MB at ${DEPLOYMENTS} × ${REPLICAS}: ${compiled.peakRssMb <= FOOTPRINT_TARGETS.peakRssMb ? "met" : "NOT met"} (${compiled.peakRssMb} MB)`,
    `compiled \`berth agent\` ready < ${FOOTPRINT_TARGETS.readyMs} ms: ${compiled.readyMsMedian < FOOTPRINT_TARGETS.readyMs ? "met" : "NOT met"} (median ${compiled.readyMsMedian} ms)`,
  ];
}

function reportFootprint(footprint: Footprint[], verdicts: string[]): void {
  const tsx = footprint.find((f) => f.build === "tsx")!;
  const ratio = (value: number, baseline: number) => `${round(value / baseline, 2)}×`;
  console.log(`\nFootprint of \`berth agent\` at ${DEPLOYMENTS} deployments × ${REPLICAS} pods: compiled (dist/) against tsx (baseline); ${FOOTPRINT_STARTS} starts each, one run held ${FOOTPRINT_HOLD_MS / 1000} s`);
  printTable([
    ["build", "ready ms (median)", "first cluster request ms", "RSS at ready MB", "peak RSS MB", "RSS at end MB", "peak vs tsx", "ready vs tsx"],
    ...footprint.map((f) => [
      f.build,
      `${f.readyMsMedian} (${f.readyMs.join(", ")})`,
      String(f.firstClusterRequestMsMedian),
      String(f.rssAtReadyMb),
      String(f.peakRssMb),
      String(f.rssMb),
      ratio(f.peakRssMb, tsx.peakRssMb),
      ratio(f.readyMsMedian, tsx.readyMsMedian),
    ]),
  ]);
  console.log("\nfootprint targets:");
  for (const verdict of verdicts) console.log(`  ${verdict}`);
}

// ---------------------------------------------------------------------------------------------

function report(convergence: Convergence, cost: ReconcileCost, propagation: Propagation, verdicts: string[]): void {
  const d = (x: Distribution) => [String(x.n), x.p50.toFixed(1), x.p90.toFixed(1), x.p99.toFixed(1), x.max.toFixed(1)];
  console.log(`\nPropagation: ${propagation.changes} changes (replicas ${REPLICAS} ↔ ${REPLICAS + 1}) with ${DEPLOYMENTS} deployments in place, agent on its defaults`);
  const slow = propagation.slow;
  if (slow.length > 0) {
    console.log(
      `${slow.length} first writes came over 500 ms after the PATCH response; ${slow.filter((s) => s.resyncPassMeanwhile).length} of them during a resync pass, ` +
        `${slow.filter((s) => s.heartbeatMeanwhile).length} with a heartbeat meanwhile`,
    );
  }
  printTable([
    ["ms", "n", "p50", "p90", "p99", "max", "vs long-poll"],
    ["long-poll answer after the PATCH response (baseline)", ...d(propagation.longPoll), ""],
    ["first write to the cluster, from the PATCH response", ...d(propagation.fromResponse), `p50 ${propagation.ratioP50ToLongPoll}×, p99 ${propagation.ratioP99ToLongPoll}×`],
    ["first write to the cluster, from the PATCH sent (bound)", ...d(propagation.fromSend), ""],
    ["PATCH round trip", ...d(propagation.patchRoundTrip), ""],
  ]);
  console.log(`\nReconcile cost: ${DEPLOYMENTS} deployments × ${REPLICAS} pods, resync every ${cost.resyncSeconds} s, CPU of the agent's process`);
  const wall = (xs: number[]) => {
    xs = xs.filter(Number.isFinite);
    if (xs.length === 0) return "";
    const [low, high] = [Math.round(Math.min(...xs)), Math.round(Math.max(...xs))];
    return low === high ? String(low) : `${low}–${high}`;
  };
  const failed = (summary: ReadsSummary) => String(summary.rounds.reduce((sum, r) => sum + r.failed, 0));
  printTable([
    ["case", "CPU ms", "wall ms", "requests", "failed", "pass CPU ÷ this"],
    [
      `agent resync pass (median of ${cost.passes.length}; max ${cost.cpuMsPerPassMax.toFixed(0)})`,
      cost.cpuMsPerPass.toFixed(0),
      wall(cost.passes.map((p) => p.wallMs)),
      wall(cost.passes.map((p) => p.requests)),
      String(cost.agentWarningsInWindow),
      "",
    ],
    ["bare reads: readNamespace + 2 lists per deployment (baseline)", cost.bareReads.cpuMs.toFixed(0), cost.bareReads.wallMs.toFixed(0), String(DEPLOYMENTS * 3), failed(cost.bareReads), `${cost.ratioToBareReads}×`],
    ["the agent's observeDeployment per deployment (no router)", cost.observeOnly.cpuMs.toFixed(0), cost.observeOnly.wallMs.toFixed(0), "", failed(cost.observeOnly), `${cost.ratioToObserve}×`],
    ["heartbeat reads (nodes, every pod) + inventory", cost.heartbeatReads.cpuMs.toFixed(0), cost.heartbeatReads.wallMs.toFixed(0), "2", failed(cost.heartbeatReads), ""],
  ]);
  console.log(
    `\nagent RSS ${cost.rssMb} MB (peak ${cost.maxRssMb} MB, heap ${cost.heapUsedMb} MB, ${cost.rssAtStartMb} MB at start before any work); ` +
      `${convergence.deployments} deployments created in ${convergence.createSeconds} s, all Ready after ${convergence.allReadySeconds} s ` +
      `(agent CPU ${(convergence.agentCpuMs / 1000).toFixed(1)} s); ` +
      `agent warnings: ${convergence.agentWarnings} while converging, ${cost.agentWarningsInWindow} in the cost window, ${propagation.agentWarnings} during propagation`,
  );
  console.log("\ntargets:");
  for (const verdict of verdicts) console.log(`  ${verdict}`);
}

async function main(): Promise<void> {
  let serve: Serve | undefined;
  let cluster: SimCluster | undefined;
  let agent: AgentProcess | undefined;
  const loadStart = loadavg()[0]!;
  const cleanup = async () => {
    await agent?.stop().catch(() => stopChild(agent?.child, "SIGKILL"));
    await cluster?.stop({ now: true });
    await stopChild(serve?.child);
    if (serve) rmSync(serve.dataDir, { recursive: true, force: true });
  };
  process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));
  const scratch = mkdtempSync(join(tmpdir(), "berth-bench-agent-kube-"));
  const kubeconfig = join(scratch, "kubeconfig");
  try {
    // The compiled agent of the footprint phase is this checkout's source, built now: never a stale dist/.
    log("npm run build (the compiled agent of the footprint phase)");
    execFileSync("npm", ["run", "build"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
    log("starting berth serve and the simulated cluster");
    [serve, cluster] = await Promise.all([
      startServe(),
      startSimCluster({
        nodes: Array.from({ length: NODES }, (_, i) => ({ name: `gpu-${String(i).padStart(2, "0")}`, gpuType: "nvidia-h100-80gb", gpus: GPUS_PER_NODE })),
        programs: { ...berthPrograms({ routerImage: ROUTER_IMAGE }), noProcessImages: [ENGINE_IMAGE] },
        onRequest,
        kubeconfigPath: kubeconfig,
      }),
    ]);
    const base = serve.url;
    const project = await must(call(base, "POST", "/v1/projects", { name: PROJECT }), "create project");
    const registered = await must(call(base, "POST", "/v1/clusters", { name: "sim" }), "create cluster");
    const { token } = await registerAgent(base, registered.body.joinToken);
    const agentOptions = (config: Partial<AgentConfig>): AgentProcessOptions => ({ apiUrl: base, token, server: cluster!.url, config });

    // Setup and reconcile cost: resync every R s (the API marks a cluster silent for 30 s as
    // disconnected, so the heartbeat stays on; passes it runs into are left out).
    agent = await AgentProcess.start(agentOptions({ resyncMs: RESYNC_MS }));
    const { ids, names, convergence } = await createAll(base, project.body.id, agent);
    if (FOOTPRINT_ONLY) {
      await agent.stop();
      await quiet(3000);
      await writeFootprint(await measureFootprint(base, token, kubeconfig), convergence);
      return;
    }
    const cost = await measureReconcile(agent, ids);
    log(`pass ${cost.cpuMsPerPass} ms CPU; bare reads ${cost.bareReads.cpuMs} ms; RSS ${cost.rssMb} MB`);
    await agent.stop();

    // Propagation: a fresh agent process on the default configuration (resync 30 s, heartbeat 10 s).
    log("propagation: starting the agent on its defaults and waiting for it to settle");
    agent = await AgentProcess.start(agentOptions({}));
    await sleep(2000);
    await quiet(3000);
    await drainFeed(base, token, 0);
    await quiet(3000);
    const propagation = await measurePropagation(base, token, agent, ids, names);
    await agent.stop();
    log("footprint: berth agent compiled and through tsx");
    const footprint = await measureFootprint(base, token, kubeconfig);

    const passMet = cost.cpuMsPerPass < TARGETS.passCpuMs;
    const rssMet = cost.maxRssMb < TARGETS.rssMb;
    const p99Met = propagation.fromSend.p99 < TARGETS.propagationP99Ms && propagation.noWrite === 0;
    const verdicts = [
      `propagation p99 < ${TARGETS.propagationP99Ms} ms: ${p99Met ? "met" : "NOT met"} (${propagation.fromSend.p99} ms from the PATCH sent, ${propagation.fromResponse.p99} ms from its response; ${propagation.noWrite} changes with no write)`,
      `full resync pass < ${TARGETS.passCpuMs} ms CPU at ${DEPLOYMENTS} × ${REPLICAS}: ${passMet ? "met" : "NOT met"} (${cost.cpuMsPerPass} ms)`,
      `agent RSS < ${TARGETS.rssMb} MB: ${rssMet ? "met" : "NOT met"} (peak ${cost.maxRssMb} MB, now ${cost.rssMb} MB)`,
    ];
    report(convergence, cost, propagation, verdicts);
    if (DEPLOYMENTS !== 500 || CHANGES !== 100) {
      reportFootprint(footprint, footprintVerdicts(footprint));
      log(`--deployments ${DEPLOYMENTS} --changes ${CHANGES}: a quick run, ${RESULTS.pathname} left as it is`);
      return;
    }
    await writeFootprint(footprint, convergence);
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      RESULTS,
      JSON.stringify(
        {
          benchmark: "agent",
          date: new Date().toISOString(),
          machine: { node: process.version, cpus: availableParallelism(), cpu: cpus()[0]?.model.trim(), loadAverageAtStart: round(loadStart, 2) },
          settings: {
            deployments: DEPLOYMENTS,
            replicas: REPLICAS,
            pods: DEPLOYMENTS * REPLICAS,
            nodes: `${NODES} × ${GPUS_PER_NODE} GPUs (simulated; the engine image runs no process)`,
            api: "berth serve on PGlite (a fresh data directory)",
            agent: "createAgent in a child process of its own (bench/support/agent-process.ts), client-node 1.4 against the simulated API server",
            reconcile: `resync every ${RESYNC_MS / 1000} s, heartbeat every 10 s (default); the agent's CPU sampled just before a pass and just after it (passes the heartbeat ran into are left out), median of ${PASSES}; baselines in the agent's process between passes (a round the heartbeat ran into is done again), median of ${BASELINE_ROUNDS}`,
            propagation: `${CHANGES} merge PATCHes of replicas (${REPLICAS} ↔ ${REPLICAS + 1}), one at a time, each settled before the next; agent on its defaults (resync 30 s, heartbeat 10 s, long-poll 30 s); the API's long-poll checks every 250 ms`,
            latency: "to the first write request (POST/PATCH/PUT/DELETE) the simulated API server receives after the PATCH is sent; the commit lies between the PATCH sent and its response",
          },
          targets: TARGETS,
          convergence,
          reconcile: cost,
          propagation,
          verdicts,
        },
        null,
        2,
      ) + "\n",
    );
    log(`wrote ${RESULTS.pathname}`);
  } finally {
    await cleanup();
    rmSync(scratch, { recursive: true, force: true });
  }
}

function machine() {
  return { node: process.version, cpus: availableParallelism(), cpu: cpus()[0]?.model.trim(), loadAverage: round(loadavg()[0]!, 2) };
}

/** Prints the footprint table; a default run (500 deployments) also writes bench/results/agent-footprint.json. */
async function writeFootprint(footprint: Footprint[], convergence: Convergence): Promise<void> {
  const verdicts = footprintVerdicts(footprint);
  reportFootprint(footprint, verdicts);
  if (DEPLOYMENTS !== 500) {
    log(`--deployments ${DEPLOYMENTS}: a quick run, ${FOOTPRINT_RESULTS.pathname} left as it is`);
    return;
  }
  await mkdir(new URL("./results/", import.meta.url), { recursive: true });
  const tsx = footprint.find((f) => f.build === "tsx")!;
  const compiled = footprint.find((f) => f.build === "compiled")!;
  const document = {
    benchmark: "agent-footprint",
    date: new Date().toISOString(),
    machine: machine(),
    settings: {
      deployments: DEPLOYMENTS,
      pods: DEPLOYMENTS * REPLICAS,
      agent: "the real `berth agent --api --token --kubeconfig` CLI on its defaults (resync 30 s, heartbeat 10 s), one at a time against the converged cluster",
      builds: { compiled: "npm run build, then node dist/bin/berth.js agent", tsx: "BERTH_FROM_SOURCE=1 node bin/berth.js agent (tsx)" },
      ready: "spawn to the agent's \"berth agent started\" stderr line (modules loaded, loops started)",
      firstClusterRequest: "spawn to the first request the simulated API server receives",
      starts: FOOTPRINT_STARTS,
      holdSeconds: FOOTPRINT_HOLD_MS / 1000,
      peakRss: "VmHWM of /proc/<pid>/status at the end of the held run",
    },
    targets: FOOTPRINT_TARGETS,
    convergence,
    footprint,
    ratios: { peakRss: round(compiled.peakRssMb / tsx.peakRssMb, 2), ready: round(compiled.readyMsMedian / tsx.readyMsMedian, 2) },
    verdicts,
  };
  await writeFile(FOOTPRINT_RESULTS, JSON.stringify(document, null, 2) + "\n");
  log(`wrote ${FOOTPRINT_RESULTS.pathname}`);
}

await main();

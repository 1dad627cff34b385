// Router benchmark: `npm run bench:router`. Everything runs here, over loopback, as child
// processes: two `berth sim-engine` vLLM servers and, in front of the same two, the berth
// router (round_robin), nginx (Debian package, round robin, keep-alive, no buffering) as a
// reference proxy, and Portkey's AI gateway (@portkey-ai/gateway, its loadbalance config)
// as a gateway users pick today. Baseline: the load generator talking to the two engines
// directly (half the connections, or every other request, to each), in the same run.
//
// A fourth proxy, bench/router-floor.ts, is the least a node:http proxy can do (pipe through
// a keep-alive agent, nothing else): the share of berth's cost that is Node's own.
//
// Part 1, overhead (engines in --zero-latency mode, so every millisecond is the path's):
// chat completions non-streaming and streaming, each (a) closed-loop with autocannon for
// throughput, as a ratio to direct, and (b) open-loop paced at 500 rps (see paced()) for the
// latency a proxy adds at that rate (its p50/p99 minus direct's), streaming with the time to
// the first SSE byte as well as to the end. Each case reports the CPU that the load
// generator, the proxy and the engines spent per request (from /proc) and how busy the rest
// of the machine was (other work shares these two cores).
//
// A case is ceil(BENCH_DURATION / 3.5) rounds, and within a kind round r of every target runs
// before round r + 1 of any, so bursts of other work are spread over all targets. Before each
// round the engines are replaced by fresh processes (same ports), and a round (1 s warm-up +
// at most 3.5 s measured) stays inside 5 s: the simulator keeps a 5 s window of generation
// steps in an array trimmed with shift(), O(window) per step once entries expire (tens of µs
// per step at thousands of steps per second, seconds of stall when a large window drains), so
// an engine older than 5 s would be measured instead of the path.
//
// Part 2, cache_aware against round_robin (engines with the latency model on, default
// profile): a shared-prefix workload (8 long system prompts × distinct user turns, seeded),
// paced, once with KV caches that hold fewer than half of the 8 prompts per engine and once
// with roomy caches; TTFT (first SSE byte) p50 as a ratio, and the engines' prefix-cache hit rate.
//
// Prints tables and writes bench/results/router.json. Env: BENCH_DURATION (s per overhead
// case, default 8), BENCH_CONNECTIONS (closed-loop connections, default 10, even),
// BENCH_CACHE_DURATION (s per cache case, default 20), BENCH_ONLY (regex on case names; then
// no results file).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { spawnBerth, type BerthProcess } from "../test/router/support/processes.ts";
import { printTable } from "./support/table.ts";

const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
/** Per round of an overhead case (see the header): warm-up, then at most ROUND_MAX_S measured. */
const WARMUP_S = 1;
const ROUND_MAX_S = 3.5;
const ROUNDS = Math.max(1, Math.ceil(DURATION_S / ROUND_MAX_S));
const ROUND_S = DURATION_S / ROUNDS;
const CONNECTIONS = Math.max(2, Math.round(Number(process.env.BENCH_CONNECTIONS ?? 10) / 2) * 2);
const CACHE_DURATION_S = Number(process.env.BENCH_CACHE_DURATION ?? 20);
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY, "i") : undefined;
const RESULTS = new URL("./results/router.json", import.meta.url);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MODEL = "Qwen/Qwen3-8B";
const ADMIN_TOKEN = "bench-router-admin-token-0123456789";
/** Any request still open this long is given up (counted as an error): every wait is bounded. */
const REQUEST_TIMEOUT_MS = 10_000;
const NGINX_CANDIDATES = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"];
const PORTKEY_ENTRY = join(ROOT, "node_modules/@portkey-ai/gateway/build/start-server.js");

const TARGETS = { rate: 500, addedP99Ms: 2, throughputRatio: 0.7 };

/** The shared-prefix workload of part 2. */
const CACHE = {
  prompts: 8,
  promptWords: 1500,
  rate: 10,
  warmupS: 4,
  maxTokens: 8,
  seed: 20260,
  latencyProfile: "default",
  /** vLLM --gpu-memory-utilization per cache size; 0.22 leaves an 8B model on an H100 5,264 KV tokens. */
  sizes: [
    { name: "tight", gpuMemoryUtilization: "0.22", about: "each engine's KV cache holds fewer than half of the 8 prompts (about 3.4)" },
    { name: "roomy", gpuMemoryUtilization: "0.9", about: "each engine's KV cache holds every prompt (vLLM's default 0.9)" },
  ],
} as const;

type TargetName = "direct" | "berth" | "node-floor" | "nginx" | "portkey";

interface Target {
  name: TargetName;
  label: string;
  /** One URL per connection group (direct: both engines). */
  urls: string[];
  headers: Record<string, string>;
  /** The proxy's processes now (nginx: master and workers); none for direct. */
  pids(): number[];
}

interface CpuMsPerRequest {
  loadGenerator: number;
  proxy: number;
  /** Both engines together. */
  engines: number;
}

interface CaseResult {
  name: string;
  target: TargetName;
  mode: "closed-loop" | "paced";
  stream: boolean;
  targetRps?: number;
  rps: number;
  /** Milliseconds to the end of the answer (from when it was due, for paced cases). */
  p50: number;
  p99: number;
  /** Streaming, paced: milliseconds to the first byte of the SSE body. */
  firstByteP50?: number;
  firstByteP99?: number;
  requests: number;
  errors: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  /** This case minus direct's in the same kind (ms). */
  addedP50?: number;
  addedP99?: number;
  addedFirstByteP50?: number;
  addedFirstByteP99?: number;
  /** rps ÷ direct's rps in the same kind. */
  throughputRatio?: number;
  cpuMsPerRequest?: CpuMsPerRequest;
  /** Requests each engine completed during the case (from its vllm:request_success_total). */
  engineSplit?: [number, number];
  /** Cores' worth of CPU that processes outside this benchmark used meanwhile (from /proc/stat). */
  otherCores?: number;
  /** p99 of each round on its own (rounds of different targets are interleaved in time). */
  roundP99s?: number[];
}

interface CacheResult {
  name: string;
  size: string;
  policy: "round_robin" | "cache_aware";
  kvCacheTokensPerEngine: number;
  requests: number;
  errors: number;
  non2xx: number;
  rps: number;
  ttftP50: number;
  ttftP90: number;
  ttftP99: number;
  ttftMean: number;
  totalP50: number;
  /** Mean prompt length the engines counted (vllm:prompt_tokens_total ÷ requests). */
  promptTokensMean: number;
  /** Σ vllm:prefix_cache_hits_total ÷ Σ vllm:prefix_cache_queries_total over both engines, measured part. */
  prefixCacheHitRate: number;
  engineSplit: [number, number];
  /** cache_aware's TTFT p50 ÷ round_robin's, on the cache_aware row. */
  ttftP50Ratio?: number;
}

// ---------------------------------------------------------------- helpers

function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls until `check` resolves true, every 50 ms for at most `timeoutMs`. */
async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>, child?: ChildProcess): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`${what} exited (${child.exitCode ?? child.signalCode})`);
    if (await check().catch(() => false)) return;
    await sleep(50);
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms`);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------- CPU accounting (Linux /proc)

const CLOCK_TICKS_PER_S = 100; // USER_HZ on Linux x86-64 and arm64

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" "); // fields from #3 (state) on
  } catch {
    return undefined;
  }
}

/** utime + stime of a process in ms, or 0 when it is gone or /proc is absent. */
function processCpuMs(pid: number): number {
  const fields = statFields(pid);
  return fields ? ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S : 0;
}

/** A process and its direct children (nginx's workers), read fresh. */
function withChildren(pid: number): number[] {
  try {
    const children = readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .filter((name) => Number(statFields(Number(name))?.[1]) === pid)
      .map(Number);
    return [pid, ...children];
  } catch {
    return [pid];
  }
}

/** Busy CPU ms of the whole machine (all cores) since boot, from /proc/stat. */
function machineBusyMs(): number {
  try {
    const [, ...values] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
    const [user, nice, system, , , irq, softirq, steal] = values.map(Number);
    return ((user! + nice! + system! + irq! + softirq! + steal!) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return 0;
  }
}

/** CPU ms spent by the load generator (this process), a proxy and the engines between start() and stop(). */
interface CpuSpent {
  loadGenerator: number;
  proxy: number;
  engines: number;
  /** Busy ms of the whole machine minus the above. */
  other: number;
  elapsed: number;
}

function cpuMeter(enginePids: number[], proxyPids: () => number[]): { stop(): CpuSpent } {
  const snapshot = (pids: number[]) => new Map(pids.map((pid) => [pid, processCpuMs(pid)]));
  const delta = (before: Map<number, number>, pids: number[]) =>
    pids.reduce((sum, pid) => sum + Math.max(0, processCpuMs(pid) - (before.get(pid) ?? 0)), 0);
  const engines = snapshot(enginePids);
  const proxy = snapshot(proxyPids());
  const self = process.cpuUsage();
  const machine = machineBusyMs();
  const startedAt = performance.now();
  return {
    stop() {
      const enginesMs = delta(engines, enginePids);
      const proxyMs = delta(proxy, proxyPids());
      const used = process.cpuUsage(self);
      const selfMs = (used.user + used.system) / 1000;
      return {
        loadGenerator: selfMs,
        proxy: proxyMs,
        engines: enginesMs,
        other: Math.max(0, machineBusyMs() - machine - enginesMs - proxyMs - selfMs),
        elapsed: performance.now() - startedAt,
      };
    },
  };
}

// ---------------------------------------------------------------- engines and proxies

const running = new Set<{ stop(): Promise<unknown> }>();

async function startSim(own: string[], engineFlags: string[] = [], port = 0): Promise<BerthProcess> {
  const sim = await spawnBerth(
    ["sim-engine", ...own, "--", "vllm", "serve", MODEL, "--host", "127.0.0.1", "--port", String(port), ...engineFlags],
    { ready: /listening on/ },
  );
  running.add(sim);
  return sim;
}

async function stopAll(processes: Iterable<{ stop(): Promise<unknown> }>): Promise<void> {
  const list = [...processes];
  await Promise.all(list.map((p) => p.stop()));
  for (const p of list) running.delete(p);
}

/** Two zero-latency engines on fixed ports, so they can be replaced by fresh processes under the proxies. */
class EnginePair {
  processes: BerthProcess[] = [];
  private constructor(readonly ports: number[]) {}

  static async start(): Promise<EnginePair> {
    const pair = new EnginePair([await freePort(), await freePort()]);
    await pair.restart();
    return pair;
  }

  get urls(): string[] {
    return this.ports.map((port) => `http://127.0.0.1:${port}`);
  }

  get pids(): number[] {
    return this.processes.map((p) => p.child.pid!);
  }

  async restart(): Promise<void> {
    await stopAll(this.processes);
    this.processes = await Promise.all(this.ports.map((port) => startSim(["--zero-latency"], [], port)));
  }
}

function kvTokens(sim: BerthProcess): number {
  return Number(/"kvCacheTokens":(\d+)/.exec(sim.stdout())?.[1] ?? NaN);
}

async function startRouter(policy: string, engineUrls: string[]): Promise<BerthProcess> {
  const router = await spawnBerth(["router", "--port", "0", "--admin-token", ADMIN_TOKEN, "--policy", policy]);
  running.add(router);
  const put = await fetch(`${router.url}/admin/endpoints`, {
    method: "PUT",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      endpoints: engineUrls.map((url, i) => ({ id: `e${i}`, url, role: "server", state: "eligible" })),
    }),
  });
  if (put.status !== 200) throw new Error(`router PUT /admin/endpoints → ${put.status}: ${await put.text()}`);
  return router;
}

interface Proxy {
  url: string;
  pids(): number[];
  stop(): Promise<void>;
  version: string;
}

function nginxConfig(dir: string, port: number, engineUrls: string[]): string {
  const servers = engineUrls.map((url) => `    server ${new URL(url).host};`).join("\n");
  return `# generated by bench/router.ts
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_body_buffer_size 1m;
  keepalive_requests 1000000;
  upstream engines {
${servers}
    keepalive 128;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://engines;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 60s;
    }
  }
}
`;
}

/** nginx as a child with a generated config in a temp dir, or the reason it cannot run. */
async function startNginx(engineUrls: string[]): Promise<Proxy | string> {
  const binary = NGINX_CANDIDATES.find((path) => existsSync(path));
  if (!binary) return `no nginx binary (looked for ${NGINX_CANDIDATES.join(", ")}; \`apt-get install -y nginx-light\` provides one)`;
  const version = await new Promise<string>((resolve) => {
    const child = spawn(binary, ["-v"], { stdio: ["ignore", "ignore", "pipe"] });
    let text = "";
    child.stderr!.on("data", (chunk) => (text += chunk));
    child.once("exit", () => resolve(text.trim().replace(/^nginx version: /, "")));
    child.once("error", () => resolve("unknown"));
  });
  const dir = await mkdtemp(join(tmpdir(), "berth-bench-nginx-"));
  const port = await freePort();
  await writeFile(join(dir, "nginx.conf"), nginxConfig(dir, port, engineUrls));
  const child = spawn(binary, ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log"), "-g", "daemon off;"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  child.once("error", (error) => (output += String(error)));
  const stop = async () => {
    await stopChild(child, "SIGQUIT"); // graceful: the workers exit with the master
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitFor("nginx", 10_000, () => portOpen(port), child);
  } catch (error) {
    await stop();
    const log = existsSync(join(dir, "error.log")) ? readFileSync(join(dir, "error.log"), "utf8") : "";
    return `nginx did not start: ${(error as Error).message} ${output} ${log}`.trim().slice(0, 500);
  }
  const proxy = { url: `http://127.0.0.1:${port}`, pids: () => withChildren(child.pid!), stop, version };
  running.add(proxy);
  return proxy;
}

/** The Portkey gateway's own Node entry (what `npx @portkey-ai/gateway` runs), or the reason it cannot run. */
async function startPortkey(): Promise<Proxy | string> {
  if (!existsSync(PORTKEY_ENTRY)) return "@portkey-ai/gateway is not installed (npm ci installs it as a dev dependency)";
  const version = JSON.parse(readFileSync(join(ROOT, "node_modules/@portkey-ai/gateway/package.json"), "utf8")).version as string;
  const port = await freePort();
  // --headless and NODE_ENV=production: no console UI and no log stream kept for it.
  const child = spawn(process.execPath, [PORTKEY_ENTRY, `--port=${port}`, "--headless"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NODE_ENV: "production" },
  });
  let output = "";
  child.stdout!.on("data", (chunk) => (output = (output + chunk).slice(-4000)));
  child.stderr!.on("data", (chunk) => (output = (output + chunk).slice(-4000)));
  const stop = () => stopChild(child);
  try {
    await waitFor("portkey", 20_000, () => portOpen(port), child);
  } catch (error) {
    await stop();
    return `the Portkey gateway did not start: ${(error as Error).message} ${output}`.trim().slice(0, 500);
  }
  const proxy = { url: `http://127.0.0.1:${port}`, pids: () => [child.pid!], stop, version };
  running.add(proxy);
  return proxy;
}

/** bench/router-floor.ts: the least a node:http proxy does per request. */
async function startFloor(engineUrls: string[]): Promise<Proxy> {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/router-floor.ts", ...engineUrls], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stderr!.on("data", (chunk) => (output += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    let line = "";
    child.stdout!.on("data", (chunk) => {
      line += chunk;
      const match = /"url":"([^"]+)"/.exec(line);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`bench/router-floor.ts exited (${code}): ${output}`)));
  });
  const proxy = { url, pids: () => [child.pid!], stop: () => stopChild(child), version: process.version };
  running.add(proxy);
  return proxy;
}

/** Portkey's loadbalance config over the two engines as OpenAI-compatible custom hosts. */
function portkeyConfig(engineUrls: string[]): string {
  return JSON.stringify({
    strategy: { mode: "loadbalance" },
    targets: engineUrls.map((url) => ({ provider: "openai", custom_host: `${url}/v1`, api_key: "unused", weight: 1 })),
  });
}

// ---------------------------------------------------------------- requests

function chatBody(stream: boolean): string {
  return JSON.stringify({
    model: MODEL,
    messages: [{ role: "user", content: "Describe the harbour at dawn in one sentence." }],
    max_tokens: 16,
    temperature: 0,
    stream,
  });
}

/** One request through a target; checks the status and the shape of the answer. */
async function smoke(target: Target): Promise<string | undefined> {
  for (const stream of [false, true]) {
    try {
      const { status, text } = await request(
        `${target.urls[0]}/v1/chat/completions`,
        "POST",
        { "content-type": "application/json", ...target.headers },
        chatBody(stream),
      );
      const ok = stream ? /data: \[DONE\]\s*$/.test(text) : /"chat\.completion"/.test(text);
      if (status !== 200 || !ok) return `${stream ? "streaming" : "non-streaming"} request → ${status}: ${text.slice(0, 300)}`;
    } catch (error) {
      return `${stream ? "streaming" : "non-streaming"} request failed: ${(error as Error).message}`;
    }
  }
  return undefined;
}

/**
 * One request on a connection of its own (fetch's keep-alive pool can hand out a socket that
 * the server closed while this process was busy driving load).
 */
function request(url: string, method = "GET", headers: Record<string, string> = {}, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, text }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

async function successCounts(urls: string[]): Promise<number[]> {
  return Promise.all(urls.map(async (url) => (await engineMetrics(url))["vllm:request_success_total"] ?? 0));
}

/** Sums of each `vllm:` counter over its label sets. */
async function engineMetrics(url: string): Promise<Record<string, number>> {
  const { text } = await request(`${url}/metrics`);
  const sums: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith("vllm:")) continue;
    const name = line.slice(0, line.search(/[{ ]/));
    sums[name] = (sums[name] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sums;
}

// ---------------------------------------------------------------- load

interface Sample {
  latencies: number[];
  firstBytes: number[];
  statusCodes: Record<string, number>;
  errors: number;
  elapsedS: number;
}

/** Closed loop: autocannon with CONNECTIONS connections spread over the target's URLs; latency per response as measured by autocannon. */
function closedLoop(target: Target, stream: boolean, durationS: number): Promise<Sample> {
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const instance = autocannon(
      {
        // autocannon spreads connections over an array of URLs (its types say string only).
        url: target.urls.map((url) => `${url}/v1/chat/completions`) as unknown as string,
        connections: CONNECTIONS,
        duration: durationS,
        timeout: REQUEST_TIMEOUT_MS / 1000,
        method: "POST",
        headers: { "content-type": "application/json", ...target.headers },
        body: chatBody(stream),
      },
      (error, result) => {
        if (error) return reject(error);
        resolve({
          latencies,
          firstBytes: [],
          statusCodes,
          errors: result.errors + result.timeouts,
          elapsedS: (performance.now() - started) / 1000,
        });
      },
    );
    // The emitted arguments are (client, statusCode, bytes, ms), not what @types/autocannon says.
    (instance as unknown as NodeJS.EventEmitter).on("response", (_client: unknown, status: number, _bytes: number, ms: number) => {
      statusCodes[status] = (statusCodes[status] ?? 0) + 1;
      if (status >= 200 && status < 300) latencies.push(ms);
    });
  });
}

interface PacedRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * An open-loop client at a steady rate, as in bench/api.ts: request i is due at start + i/rate,
 * whatever the earlier ones are doing, and its latencies count from when it was due (so a
 * stalled server is charged for the wait). Records the time to the first body byte (the first
 * SSE chunk when streaming) and to the end. Bounded: `rate × durationS` requests, each given
 * up after REQUEST_TIMEOUT_MS.
 */
async function paced(rate: number, durationS: number, next: (i: number) => PacedRequest): Promise<Sample> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const latencies: number[] = [];
  const firstBytes: number[] = [];
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  const send = (i: number, due: number) =>
    new Promise<void>((resolve) => {
      const { url, headers, body } = next(i);
      const { hostname, port, pathname } = new URL(url);
      let first: number | undefined;
      const req = http.request(
        { agent, hostname, port, method: "POST", path: pathname, headers: { "content-type": "application/json", ...headers } },
        (res) => {
          res.on("data", () => (first ??= performance.now() - due));
          res.on("end", () => {
            const status = res.statusCode!;
            statusCodes[status] = (statusCodes[status] ?? 0) + 1;
            if (status >= 200 && status < 300) {
              latencies.push(performance.now() - due);
              if (first !== undefined) firstBytes.push(first);
            }
            resolve();
          });
          res.on("error", () => {
            errors++;
            resolve();
          });
        },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error("timeout")));
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  const total = Math.floor(rate * durationS);
  const inFlight: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const ahead = due - performance.now();
    if (ahead >= 1) await sleep(ahead);
    inFlight.push(send(i, due));
  }
  await Promise.all(inFlight);
  const elapsedS = (performance.now() - start) / 1000;
  agent.destroy();
  return { latencies, firstBytes, statusCodes, errors, elapsedS };
}

function summarize(name: string, target: Target, mode: CaseResult["mode"], stream: boolean, sample: Sample): CaseResult {
  const latencies = [...sample.latencies].sort((a, b) => a - b);
  const firstBytes = [...sample.firstBytes].sort((a, b) => a - b);
  const requests = Object.values(sample.statusCodes).reduce((a, b) => a + b, 0);
  const non2xx = Object.entries(sample.statusCodes).reduce((n, [code, count]) => (code.startsWith("2") ? n : n + count), 0);
  return {
    name,
    target: target.name,
    mode,
    stream,
    ...(mode === "paced" ? { targetRps: TARGETS.rate } : {}),
    rps: Math.round(requests / sample.elapsedS),
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    ...(mode === "paced" && stream ? { firstByteP50: quantile(firstBytes, 0.5), firstByteP99: quantile(firstBytes, 0.99) } : {}),
    requests,
    errors: sample.errors,
    non2xx,
    statusCodes: sample.statusCodes,
  };
}

// ---------------------------------------------------------------- part 1: overhead

interface OverheadSetup {
  engines: EnginePair;
  targets: Target[];
  skipped: Record<string, string>;
  versions: Record<string, string>;
}

async function overheadSetup(): Promise<OverheadSetup> {
  const engines = await EnginePair.start();
  const urls = engines.urls;
  log(`zero-latency engines ${urls.join(", ")}`);
  const router = await startRouter("round_robin", urls);
  log(`berth router ${router.url} (round_robin)`);
  const targets: Target[] = [
    { name: "direct", label: "direct (both engines)", urls, headers: {}, pids: () => [] },
    { name: "berth", label: "berth router (round_robin)", urls: [router.url], headers: {}, pids: () => [router.child.pid!] },
  ];
  const floor = await startFloor(urls);
  log(`node:http floor proxy ${floor.url}`);
  targets.push({ name: "node-floor", label: "node:http floor proxy", urls: [floor.url], headers: {}, pids: floor.pids });
  const skipped: Record<string, string> = {};
  const versions: Record<string, string> = { node: process.version };
  const nginx = await startNginx(urls);
  if (typeof nginx === "string") skipped.nginx = nginx;
  else {
    versions.nginx = nginx.version;
    log(`nginx ${nginx.version} ${nginx.url}`);
    targets.push({ name: "nginx", label: "nginx (round robin)", urls: [nginx.url], headers: {}, pids: nginx.pids });
  }
  const portkey = await startPortkey();
  if (typeof portkey === "string") skipped.portkey = portkey;
  else {
    versions.portkey = portkey.version;
    log(`Portkey gateway ${portkey.version} ${portkey.url}`);
    targets.push({
      name: "portkey",
      label: "Portkey gateway (loadbalance)",
      urls: [portkey.url],
      headers: { "x-portkey-config": portkeyConfig(urls) },
      pids: portkey.pids,
    });
  }
  for (const target of [...targets]) {
    const problem = await smoke(target);
    if (problem === undefined) continue;
    if (target.name === "direct" || target.name === "berth" || target.name === "node-floor") throw new Error(`${target.label}: ${problem}`);
    skipped[target.name] = problem;
    targets.splice(targets.indexOf(target), 1);
  }
  for (const [name, reason] of Object.entries(skipped)) log(`skipping ${name}: ${reason}`);
  return { engines, targets, skipped, versions };
}

function caseName(target: TargetName, mode: CaseResult["mode"], stream: boolean): string {
  return `${stream ? "stream" : "non-stream"} ${mode === "paced" ? `${TARGETS.rate} rps paced` : "closed-loop"}: ${target}`;
}

/** One case's rounds, pooled. */
class CaseAccumulator {
  readonly sample: Sample = { latencies: [], firstBytes: [], statusCodes: {}, errors: 0, elapsedS: 0 };
  readonly spent: CpuSpent = { loadGenerator: 0, proxy: 0, engines: 0, other: 0, elapsed: 0 };
  readonly split: [number, number] = [0, 0];
  readonly roundP99s: number[] = [];

  constructor(
    readonly target: Target,
    readonly mode: CaseResult["mode"],
    readonly stream: boolean,
  ) {}

  get name(): string {
    return caseName(this.target.name, this.mode, this.stream);
  }

  /** Fresh engines, WARMUP_S unrecorded, then ROUND_S recorded. */
  async round(engines: EnginePair): Promise<void> {
    const body = chatBody(this.stream);
    const run = (durationS: number) =>
      this.mode === "paced"
        ? paced(TARGETS.rate, durationS, (i) => ({
            url: `${this.target.urls[i % this.target.urls.length]}/v1/chat/completions`,
            headers: this.target.headers,
            body,
          }))
        : closedLoop(this.target, this.stream, durationS);
    await engines.restart();
    await run(WARMUP_S);
    const before = await successCounts(engines.urls);
    const meter = cpuMeter(engines.pids, this.target.pids);
    const sample = await run(ROUND_S);
    const cpu = meter.stop();
    const after = await successCounts(engines.urls);
    this.sample.latencies.push(...sample.latencies);
    this.sample.firstBytes.push(...sample.firstBytes);
    for (const [code, count] of Object.entries(sample.statusCodes)) this.sample.statusCodes[code] = (this.sample.statusCodes[code] ?? 0) + count;
    this.sample.errors += sample.errors;
    this.sample.elapsedS += sample.elapsedS;
    for (const key of Object.keys(this.spent) as (keyof CpuSpent)[]) this.spent[key] += cpu[key];
    this.split[0] += after[0]! - before[0]!;
    this.split[1] += after[1]! - before[1]!;
    this.roundP99s.push(quantile([...sample.latencies].sort((a, b) => a - b), 0.99));
    const requests = Object.values(sample.statusCodes).reduce((a, b) => a + b, 0);
    log(`  ${this.name}: round ${this.roundP99s.length}: ${Math.round(requests / sample.elapsedS)} rps, p99 ${this.roundP99s.at(-1)} ms`);
  }

  result(): CaseResult {
    const result = summarize(this.name, this.target, this.mode, this.stream, this.sample);
    const per = (ms: number) => round(ms / Math.max(result.requests, 1), 3);
    result.cpuMsPerRequest = { loadGenerator: per(this.spent.loadGenerator), proxy: per(this.spent.proxy), engines: per(this.spent.engines) };
    result.otherCores = round(this.spent.other / Math.max(this.spent.elapsed, 1), 2);
    result.engineSplit = this.split;
    result.roundP99s = this.roundP99s;
    const c = result.cpuMsPerRequest;
    log(
      `${this.name}: ${result.rps} rps, p50 ${result.p50} ms, p99 ${result.p99} ms` +
        (result.firstByteP50 !== undefined ? `, first byte p50 ${result.firstByteP50} p99 ${result.firstByteP99} ms` : "") +
        `, non-2xx ${result.non2xx}, errors ${result.errors}, split ${this.split.join("/")}; CPU ms/req gen ${c.loadGenerator} proxy ${c.proxy} engines ${c.engines}; other load ${result.otherCores} cores`,
    );
    return result;
  }
}

function compareToDirect(cases: CaseResult[]): void {
  for (const c of cases) {
    const direct = cases.find((d) => d.target === "direct" && d.mode === c.mode && d.stream === c.stream);
    if (!direct || c.target === "direct") continue;
    c.addedP50 = round(c.p50 - direct.p50);
    c.addedP99 = round(c.p99 - direct.p99);
    if (c.firstByteP50 !== undefined && direct.firstByteP50 !== undefined) {
      c.addedFirstByteP50 = round(c.firstByteP50 - direct.firstByteP50);
      c.addedFirstByteP99 = round(c.firstByteP99! - direct.firstByteP99!);
    }
    if (c.mode === "closed-loop") c.throughputRatio = round(c.rps / direct.rps, 3);
  }
}

// ---------------------------------------------------------------- part 2: cache_aware vs round_robin

/** mulberry32: a small seeded PRNG, so every run (and both policies) sends the same requests. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "harbour gull net tide boat rope anchor sail mast deck keel hull pier dock crane cargo wave reef shore dune cliff " +
  "light lamp fog bell buoy chart map compass star moon sun dawn dusk storm wind rain calm swell current drift " +
  "salt fish crab shell stone sand pebble bay cove inlet river delta marsh reed heron tern seal whale dolphin"
).split(" ");

interface Workload {
  systems: string[];
  requests: { system: number; user: string }[];
}

function cacheWorkload(total: number): Workload {
  const random = prng(CACHE.seed);
  const word = () => WORDS[Math.floor(random() * WORDS.length)]!;
  const systems = Array.from(
    { length: CACHE.prompts },
    (_, i) => `You are the assistant of harbour office ${i + 1}. ` + Array.from({ length: CACHE.promptWords }, word).join(" "),
  );
  const requests = Array.from({ length: total }, (_, n) => ({
    system: Math.floor(random() * CACHE.prompts),
    user: `Question ${n + 1}: ${Array.from({ length: 12 }, word).join(" ")}?`,
  }));
  return { systems, requests };
}

async function cacheCase(size: (typeof CACHE.sizes)[number], policy: CacheResult["policy"]): Promise<CacheResult | undefined> {
  const name = `cache ${size.name}: ${policy}`;
  if (ONLY && !ONLY.test(name)) return undefined;
  const own = ["--latency-profile", CACHE.latencyProfile, "--seed", "7"];
  const flags = ["--gpu-memory-utilization", size.gpuMemoryUtilization];
  const engines = await Promise.all([startSim(own, flags), startSim(own, flags)]);
  const router = await startRouter(policy, engines.map((e) => e.url));
  try {
    const warmup = Math.round(CACHE.rate * CACHE.warmupS);
    const measured = Math.round(CACHE.rate * CACHE_DURATION_S);
    const workload = cacheWorkload(warmup + measured);
    const request = (offset: number) => (i: number) => {
      const { system, user } = workload.requests[offset + i]!;
      return {
        url: `${router.url}/v1/chat/completions`,
        headers: {},
        body: JSON.stringify({
          model: MODEL,
          messages: [
            { role: "system", content: workload.systems[system] },
            { role: "user", content: user },
          ],
          max_tokens: CACHE.maxTokens,
          temperature: 0,
          stream: true,
        }),
      };
    };
    log(`${name}: ${CACHE.warmupS} s warm-up, then ${CACHE_DURATION_S} s at ${CACHE.rate} rps (KV ${kvTokens(engines[0]!)} tokens per engine)`);
    await paced(CACHE.rate, CACHE.warmupS, request(0));
    const before = await Promise.all(engines.map((e) => engineMetrics(e.url)));
    const sample = await paced(CACHE.rate, CACHE_DURATION_S, request(warmup));
    const after = await Promise.all(engines.map((e) => engineMetrics(e.url)));
    const diff = (metric: string, i: number) => (after[i]![metric] ?? 0) - (before[i]![metric] ?? 0);
    const sum = (metric: string) => diff(metric, 0) + diff(metric, 1);
    const ttft = [...sample.firstBytes].sort((a, b) => a - b);
    const totals = [...sample.latencies].sort((a, b) => a - b);
    const requests = Object.values(sample.statusCodes).reduce((a, b) => a + b, 0);
    const result: CacheResult = {
      name,
      size: size.name,
      policy,
      kvCacheTokensPerEngine: kvTokens(engines[0]!),
      requests,
      errors: sample.errors,
      non2xx: Object.entries(sample.statusCodes).reduce((n, [code, count]) => (code.startsWith("2") ? n : n + count), 0),
      rps: round(requests / sample.elapsedS, 1),
      ttftP50: quantile(ttft, 0.5),
      ttftP90: quantile(ttft, 0.9),
      ttftP99: quantile(ttft, 0.99),
      ttftMean: round(ttft.reduce((a, b) => a + b, 0) / Math.max(ttft.length, 1)),
      totalP50: quantile(totals, 0.5),
      promptTokensMean: Math.round(sum("vllm:prompt_tokens_total") / Math.max(1, sum("vllm:request_success_total"))),
      prefixCacheHitRate: round(sum("vllm:prefix_cache_hits_total") / Math.max(1, sum("vllm:prefix_cache_queries_total")), 3),
      engineSplit: [diff("vllm:request_success_total", 0), diff("vllm:request_success_total", 1)],
    };
    log(
      `${name}: TTFT p50 ${result.ttftP50} ms, p90 ${result.ttftP90} ms, p99 ${result.ttftP99} ms, mean ${result.ttftMean} ms; prefix cache hit rate ${result.prefixCacheHitRate}; split ${result.engineSplit.join("/")}; non-2xx ${result.non2xx}, errors ${result.errors}`,
    );
    return result;
  } finally {
    await stopAll([router, ...engines]);
  }
}

// ---------------------------------------------------------------- report


const fmt = (value: number | undefined, digits = 2) => (value === undefined || Number.isNaN(value) ? "" : value.toFixed(digits));
const signed = (value: number | undefined) => (value === undefined ? "" : `${value >= 0 ? "+" : ""}${value.toFixed(2)}`);

function printOverhead(cases: CaseResult[]): void {
  printTable([
    ["case", "rps", "p50 ms", "p99 ms", "+p50", "+p99", "1st byte p50/p99", "+1st p99", "vs direct", "err", "CPU ms/req gen/proxy/engines", "other cores"],
    ...cases.map((c) => [
      c.name,
      String(c.rps),
      fmt(c.p50),
      fmt(c.p99),
      signed(c.addedP50),
      signed(c.addedP99),
      c.firstByteP50 === undefined ? "" : `${fmt(c.firstByteP50)} / ${fmt(c.firstByteP99)}`,
      signed(c.addedFirstByteP99),
      c.throughputRatio === undefined ? "" : `${(c.throughputRatio * 100).toFixed(1)}%`,
      String(c.errors + c.non2xx),
      c.cpuMsPerRequest ? `${fmt(c.cpuMsPerRequest.loadGenerator, 3)} / ${fmt(c.cpuMsPerRequest.proxy, 3)} / ${fmt(c.cpuMsPerRequest.engines, 3)}` : "",
      fmt(c.otherCores),
    ]),
  ]);
}

function printCache(cases: CacheResult[]): void {
  printTable([
    ["case", "KV tokens/engine", "requests", "TTFT p50", "p90", "p99", "mean", "hit rate", "split", "p50 ratio", "err"],
    ...cases.map((c) => [
      c.name,
      String(c.kvCacheTokensPerEngine),
      String(c.requests),
      fmt(c.ttftP50),
      fmt(c.ttftP90),
      fmt(c.ttftP99),
      fmt(c.ttftMean),
      `${(c.prefixCacheHitRate * 100).toFixed(1)}%`,
      c.engineSplit.join("/"),
      c.ttftP50Ratio === undefined ? "" : fmt(c.ttftP50Ratio, 3),
      String(c.errors + c.non2xx),
    ]),
  ]);
}

interface Verdict {
  name: string;
  measured: string;
  /** null: inconclusive (see `reason`). */
  pass: boolean | null;
  status: "pass" | "fail" | "inconclusive";
  reason?: string;
}

/**
 * A p99 difference can only be judged against a 2 ms margin when the baseline itself was
 * measurable: it held the rate and its own p99 stayed within 10× the margin. On a shared
 * machine that is often not so, and a negative "added" p99 is then noise, not a pass.
 */
function baselineTooNoisy(direct: CaseResult | undefined, p99: number | undefined): string | undefined {
  if (!direct || p99 === undefined) return "no direct baseline in this run";
  if (direct.rps < 0.98 * TARGETS.rate) return `the direct baseline itself fell behind (${direct.rps} of ${TARGETS.rate} rps)`;
  if (p99 > 10 * TARGETS.addedP99Ms) {
    return `the direct baseline's own p99 was ${p99} ms (rounds: ${direct.roundP99s?.join(", ")} ms): other work on the machine, not the path, sets the tail`;
  }
  return undefined;
}

function verdicts(cases: CaseResult[]): Verdict[] {
  const out: Verdict[] = [];
  const find = (target: TargetName, mode: CaseResult["mode"], stream: boolean) =>
    cases.find((c) => c.target === target && c.mode === mode && c.stream === stream);
  const clean = (c: CaseResult) => c.errors === 0 && c.non2xx === 0;
  const latency = (name: string, c: CaseResult, added: number, p99: number, directP99: number | undefined, addedP50: number | undefined) => {
    const noisy = baselineTooNoisy(find("direct", c.mode, c.stream), directP99);
    const pass = added < TARGETS.addedP99Ms && clean(c);
    out.push({
      name,
      measured: `${signed(added)} ms (p99 ${p99} ms against direct's ${directP99} ms; added p50 ${signed(addedP50)} ms; ${c.rps} rps; round p99s ${c.roundP99s?.join(", ")} ms)`,
      pass: noisy ? null : pass,
      status: noisy ? "inconclusive" : pass ? "pass" : "fail",
      ...(noisy ? { reason: noisy } : {}),
    });
  };
  for (const stream of [false, true]) {
    const kind = stream ? "streaming" : "non-streaming";
    const p = find("berth", "paced", stream);
    const direct = find("direct", "paced", stream);
    if (p?.addedP99 !== undefined) {
      latency(`${kind}: added p99 < ${TARGETS.addedP99Ms} ms at ${TARGETS.rate} rps (to the end of the answer)`, p, p.addedP99, p.p99, direct?.p99, p.addedP50);
    }
    if (stream && p?.addedFirstByteP99 !== undefined) {
      latency(
        `${kind}: added p99 < ${TARGETS.addedP99Ms} ms at ${TARGETS.rate} rps (to the first SSE byte)`,
        p,
        p.addedFirstByteP99,
        p.firstByteP99!,
        direct?.firstByteP99,
        p.addedFirstByteP50,
      );
    }
    const closed = find("berth", "closed-loop", stream);
    if (closed?.throughputRatio !== undefined) {
      const pass = closed.throughputRatio >= TARGETS.throughputRatio && clean(closed);
      out.push({
        name: `${kind}: throughput >= ${TARGETS.throughputRatio * 100}% of direct (closed loop, ${CONNECTIONS} connections)`,
        measured: `${(closed.throughputRatio * 100).toFixed(1)}% (${closed.rps} rps; proxy CPU ${closed.cpuMsPerRequest?.proxy} ms/request)`,
        pass,
        status: pass ? "pass" : "fail",
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const loadAtStart = loadavg().map((v) => round(v, 2));
  log(`load average at start: ${loadAtStart.join(", ")} (${availableParallelism()} cores)`);
  const cases: CaseResult[] = [];
  const cacheCases: CacheResult[] = [];
  const failures: { target: string; reason: string }[] = [];
  let setup: OverheadSetup | undefined;
  const overheadWanted =
    !ONLY ||
    (["direct", "berth", "node-floor", "nginx", "portkey"] as const).some((target) =>
      (["closed-loop", "paced"] as const).some((mode) => [false, true].some((stream) => ONLY.test(caseName(target, mode, stream)))),
    );
  try {
    if (overheadWanted) setup = await overheadSetup();
    // Round r of every target, then round r + 1: noise from other work is spread over all of them.
    for (const mode of ["closed-loop", "paced"] as const) {
      for (const stream of [false, true]) {
        if (!setup) continue;
        const kind = setup.targets
          .filter((target) => !ONLY || ONLY.test(caseName(target.name, mode, stream)))
          .map((target) => new CaseAccumulator(target, mode, stream));
        if (kind.length === 0) continue;
        log(`${stream ? "stream" : "non-stream"} ${mode}: ${ROUNDS} rounds × (fresh engines, ${WARMUP_S} s warm-up, ${round(ROUND_S)} s) per target`);
        const failed = new Set<CaseAccumulator>();
        for (let r = 0; r < ROUNDS; r++) {
          for (const acc of kind) {
            if (failed.has(acc)) continue;
            try {
              await acc.round(setup.engines);
            } catch (error) {
              // One failing proxy must not cost the others their results; the direct baseline must work.
              if (acc.target.name === "direct") throw error;
              const reason = `${acc.name}: ${(error as Error).message}`;
              log(`failed: ${reason}`);
              failures.push({ target: acc.target.name, reason });
              failed.add(acc);
            }
          }
        }
        for (const acc of kind) if (!failed.has(acc)) cases.push(acc.result());
      }
    }
    compareToDirect(cases);
    await stopAll(running);

    for (const size of CACHE.sizes) {
      const pair: CacheResult[] = [];
      for (const policy of ["round_robin", "cache_aware"] as const) {
        const result = await cacheCase(size, policy);
        if (result) pair.push(result);
      }
      const rr = pair.find((c) => c.policy === "round_robin");
      const ca = pair.find((c) => c.policy === "cache_aware");
      if (rr && ca) ca.ttftP50Ratio = round(ca.ttftP50 / rr.ttftP50, 3);
      cacheCases.push(...pair);
    }
  } finally {
    await stopAll(running);
  }
  const loadAtEnd = loadavg().map((v) => round(v, 2));

  const targets = verdicts(cases);
  if (cases.length > 0) printOverhead(cases);
  if (cacheCases.length > 0) printCache(cacheCases);
  console.log(`\nload average at start ${loadAtStart.join(", ")}, at end ${loadAtEnd.join(", ")} (${availableParallelism()} cores)`);
  for (const [name, reason] of Object.entries(setup?.skipped ?? {})) console.log(`skipped ${name}: ${reason}`);
  for (const failure of failures) console.log(`failed ${failure.target}: ${failure.reason}`);
  if (targets.length > 0) {
    console.log("\ntargets (berth router):");
    for (const t of targets) console.log(`  ${t.status.toUpperCase()}  ${t.name}: ${t.measured}${t.reason ? ` — ${t.reason}` : ""}`);
  }
  for (const c of cacheCases) {
    if (c.ttftP50Ratio !== undefined) console.log(`  cache_aware ÷ round_robin TTFT p50, ${c.size} caches: ${c.ttftP50Ratio}`);
  }

  if (ONLY) {
    log("BENCH_ONLY set: results file not written");
    return;
  }
  await mkdir(new URL("./results/", import.meta.url), { recursive: true });
  await writeFile(
    RESULTS,
    JSON.stringify(
      {
        benchmark: "router",
        date: new Date().toISOString(),
        machine: {
          node: process.version,
          cpus: availableParallelism(),
          cpu: cpus()[0]?.model ?? "unknown",
          loadAverageAtStart: loadAtStart,
          loadAverageAtEnd: loadAtEnd,
          note: "shared machine: the load generator, the proxies and the engines share its cores with whatever else runs (see otherCores per case)",
        },
        versions: setup?.versions ?? {},
        settings: {
          durationSeconds: DURATION_S,
          rounds: ROUNDS,
          roundSeconds: round(ROUND_S),
          warmupSecondsPerRound: WARMUP_S,
          freshEnginesPerRound:
            "the engines are replaced by fresh processes (same ports) before every round, and warm-up plus round stay under 5 s: the simulator trims its 5 s window of generation steps with Array.shift(), O(window) per step once entries expire (see bench/router.ts)",
          closedLoopConnections: CONNECTIONS,
          pacedRate: TARGETS.rate,
          requestTimeoutMs: REQUEST_TIMEOUT_MS,
          model: MODEL,
          overheadRequest: "POST /v1/chat/completions, one short user message, max_tokens 16, temperature 0; stream false or true",
          engines: "two `berth sim-engine --zero-latency -- vllm serve Qwen/Qwen3-8B` processes",
          direct:
            "the load generator talks to both engines itself: closed loop, half the connections to each (autocannon's URL list); paced, every other request",
          berth: "`berth router --policy round_robin` over the two engines (log level info: no per-request lines)",
          "node-floor":
            "bench/router-floor.ts: node:http server piping to node:http requests through a keep-alive agent, round robin, nothing else — the floor of any Node proxy",
          nginx:
            "worker_processes 1 (one core, like the single-threaded Node proxies), upstream round robin over the two engines, keepalive 128, proxy_http_version 1.1, proxy_buffering off, access_log off",
          portkey:
            "@portkey-ai/gateway's Node server (`build/start-server.js --headless`, NODE_ENV=production), x-portkey-config {strategy: loadbalance, targets: provider openai with custom_host per engine, weight 1}; its @hono/node-server is pinned to 1.13.5 (the version in Portkey's own lockfile) by an npm override, because with the 1.19.x that its ^1.3.3 range resolves to (and with 1.14.2) every streaming answer fails with `TypeError: immutable` (the bug of Portkey-AI/gateway#1389); it holds back the first chunk of every stream for 25 ms (src/handlers/streamHandler.ts); it listens on all interfaces (it takes no host option), and only loopback is used",
          modes:
            "closed-loop: autocannon, latency per response from its own timer; paced: an open-loop client sending one request every 1/rate s, latency counted from when each was due; firstByte = the first body chunk (for SSE, the first event)",
          addedLatency: "a proxy's p50 (p99) minus direct's p50 (p99) in the same kind of case",
          cache: {
            ...CACHE,
            durationSeconds: CACHE_DURATION_S,
            engines: "two `berth sim-engine --latency-profile default -- vllm serve Qwen/Qwen3-8B --gpu-memory-utilization X` processes, fresh for each policy",
            requests: "streaming chat: one of the 8 system prompts (about 1,500 tokens each, chosen at random, seeded) and a distinct 14-word user turn",
            ttft: "time to the first SSE byte, which the engine sends with its first token",
          },
        },
        skipped: setup?.skipped ?? {},
        failures,
        cases,
        cacheCases,
        targets,
      },
      null,
      2,
    ) + "\n",
  );
  log(`wrote ${fileURLToPath(RESULTS)}`);
}

await main();

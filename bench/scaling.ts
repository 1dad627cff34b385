// Scaling benchmark (docs/design.md §7): `npm run bench:scaling [-- --compression C --quick --only NAME]`. Replays a
// seeded, bursty 30-minute trace (quiet → ramp → spike → plateau → fall) against the simulated
// cluster (2 nodes × 8 H100, Qwen3-8B on vLLM sim engines, 1 GPU per replica, builtin router
// least_load), once per strategy: static peak, static mean, an HPA-like rule the bench runs as a
// user would (PATCH replicas), berth queue_depth and berth sla (agent in active mode).
//
// Time compression C (default 15, so that the 1 s wall interval is berth's default 15 s): the
// engines run `--latency-profile 1/C`; every duration of the strategies is divided by C
// (autoscaler interval and stabilization window, retirement budgets, the HPA rule's 15 s sync and
// 300 s window, the kubelet's probe periods) and the trace plays in 1800/C s of wall time. The
// engines run through bench/support/model-time-engine.ts, which multiplies the latencies they
// report by C, and the agent runs with `metricsTimeScale: C`, so the rates it computes are per
// model second: TTFT and ITL below are the simulator's own model-time values (TTFT from the
// request's arrival at the engine to its first token; ITL between consecutive tokens), not
// client-side wall clocks, judged in 10 model-s windows. GPU-seconds integrate the Running engine
// pods (1 GPU each) listed from the cluster's API every 250 ms wall, in model seconds. Baseline:
// static peak (ratios). `--only "berth sla"` runs one strategy and prints its scaling events, the
// windows that missed and the pod timeline (nothing written).
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { berthPrograms, type SimCluster, startSimCluster } from "../k8s/sim/index.ts";
import { registerAgent } from "../src/agent/api-client.ts";
import { largestConcurrency, roleShape } from "../src/domain/scaling-sla.ts";
import { estimateAggregated } from "../src/domain/serving-estimate.ts";
import { type BerthServer, startBerthServer } from "../test/support/berth-process.ts";
import type { AgentProcessOptions } from "./support/agent-process.ts";
import { renderPanelsSvg, type Series, svgToPng } from "./support/line-plot.ts";
import { ITL_BUCKET_BASE, sampleWindowMs, WINDOW_MODEL_SECONDS } from "./support/model-time-engine.ts";
import { printTable } from "./support/table.ts";

const { values: flags } = parseArgs({
  options: { compression: { type: "string", default: "15" }, quick: { type: "boolean", default: false }, only: { type: "string", multiple: true } },
});
const C = Number(flags.compression);
/** --quick: the first 600 model-seconds only; --only NAME (repeatable): those strategies. Either way results are not written. */
const TRACE_SECONDS = flags.quick ? 600 : 1800;
if (!(C >= 5 && C <= 60)) throw new Error("--compression takes a number in [5, 60]");

const MODEL = "Qwen/Qwen3-8B";
const GPU = "nvidia-h100-80gb";
const ENGINE_IMAGE = "vllm/vllm-openai:v0.11.0";
const ROUTER_IMAGE = "ghcr.io/berth/berth:0.1.0";
const NAMESPACE = "berth-scaling";
const MAX_NUM_SEQS = 32;
const MAX_REPLICAS = 8;
/** Model time: the SLA every strategy is judged by (and berth sla is given). */
const TARGETS = { ttftP95Ms: 400, itlMs: 10, attainment: 0.99, gpuSecondsRatio: 0.7 };
/** queue_depth target per replica, for the HPA-like rule and berth queue_depth alike. */
const QUEUE_TARGET = 16;
const SAMPLE_WINDOW_MS = sampleWindowMs(C);
const SEED = 20240605;
const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Engines start in their pod sandbox directory: tsx by absolute URL. */
const TSX_LOADER = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

// ---------------------------------------------------------------------------------------------
// The trace (model time): piecewise request rate, Poisson arrivals, seeded request sizes.

const TRACE = [
  { phase: "quiet", from: 0, to: 300, rps: [0.6, 0.6] },
  { phase: "ramp", from: 300, to: 600, rps: [0.6, 3] },
  { phase: "spike", from: 600, to: 780, rps: [6, 6] },
  { phase: "plateau", from: 780, to: 1380, rps: [3, 3] },
  { phase: "fall", from: 1380, to: 1800, rps: [3, 0.6] },
] as const;
const WORKLOAD = { inputTokens: [600, 1400], outputTokens: [600, 1400] } as const;

function rateAt(t: number): number {
  const p = TRACE.find((s) => t >= s.from && t < s.to) ?? TRACE.at(-1)!;
  return p.rps[0] + ((p.rps[1] - p.rps[0]) * (t - p.from)) / (p.to - p.from);
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Arrival {
  at: number;
  inputTokens: number;
  outputTokens: number;
}

/** Non-homogeneous Poisson by thinning at the peak rate; the same list for every strategy. */
function arrivals(): Arrival[] {
  const rnd = mulberry32(SEED);
  const peak = Math.max(...TRACE.flatMap((s) => s.rps));
  const out: Arrival[] = [];
  const between = (r: readonly [number, number]) => Math.round(r[0] + rnd() * (r[1] - r[0]));
  for (let t = 0; ; ) {
    t += -Math.log(1 - rnd()) / peak;
    if (t >= TRACE_SECONDS) break;
    if (rnd() < rateAt(t) / peak) out.push({ at: t, inputTokens: between(WORKLOAD.inputTokens), outputTokens: between(WORKLOAD.outputTokens) });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Sizing the static strategies with the perf model (what berth's planner would say)

const MEAN_WORKLOAD = { inputTokens: 1000, outputTokens: 1000 };
const shape = roleShape(MODEL, "vllm", { name: "main", kind: "aggregated", replicas: 1, resources: { gpus: 1 }, parallelism: { tensor: 1, pipeline: 1, data: 1 } } as never);
const estimate = (c: number) => estimateAggregated(shape.perf, MEAN_WORKLOAD, c, shape.limits, "vllm");
const perReplica = largestConcurrency(MAX_NUM_SEQS, (c) => estimate(c).ttftMs <= TARGETS.ttftP95Ms && estimate(c).itlMs <= TARGETS.itlMs);
/** Little's law at the per-replica concurrency that meets the targets. */
const replicasFor = (rps: number) => Math.max(1, Math.ceil((rps * estimate(perReplica).e2eMs) / 1000 / perReplica));
const meanRps = TRACE.reduce((sum, s) => sum + ((s.rps[0] + s.rps[1]) / 2) * (s.to - s.from), 0) / 1800;
const STATIC_PEAK = replicasFor(Math.max(...TRACE.flatMap((s) => s.rps)));
const STATIC_MEAN = replicasFor(meanRps);

// ---------------------------------------------------------------------------------------------
// Strategies

type StrategyName = "static peak" | "static mean" | "HPA-like" | "berth queue_depth" | "berth sla";
interface Strategy {
  name: StrategyName;
  replicas: number;
  scaling?: object;
  hpa?: boolean;
}

const berthScaling = (algorithm: object) => ({
  mode: "active",
  intervalSeconds: Math.max(1, Math.round(15 / C)),
  scaleDownStabilizationSeconds: Math.round(300 / C),
  roles: [{ name: "main", minReplicas: 1, maxReplicas: MAX_REPLICAS }],
  algorithm,
  retirement: { withdrawSeconds: Math.ceil(30 / C), drainSeconds: Math.ceil(240 / C), settleSeconds: Math.ceil(30 / C) },
});

const STRATEGIES: Strategy[] = [
  { name: "static peak", replicas: STATIC_PEAK },
  { name: "static mean", replicas: STATIC_MEAN },
  { name: "HPA-like", replicas: 1, hpa: true },
  { name: "berth queue_depth", replicas: 1, scaling: berthScaling({ type: "queue_depth", targetPerReplica: QUEUE_TARGET, tolerance: 0.1 }) },
  { name: "berth sla", replicas: 1, scaling: berthScaling({ type: "sla", ttftMs: TARGETS.ttftP95Ms, itlMs: TARGETS.itlMs }) },
];

// ---------------------------------------------------------------------------------------------
// API and cluster reads

let server: BerthServer | undefined;
async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server!.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${server!.adminToken}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

interface EnginePod {
  name: string;
  uid: string;
  running: boolean;
  ready: boolean;
  url?: string;
}

let cluster: SimCluster | undefined;
async function enginePods(deploymentId: string): Promise<EnginePod[]> {
  const selector = encodeURIComponent(`berth.dev/deployment-id=${deploymentId}`);
  const res = await fetch(`${cluster!.url}/api/v1/namespaces/${NAMESPACE}/pods?labelSelector=${selector}`, { signal: AbortSignal.timeout(10_000) });
  const list = (await res.json()) as { items: any[] };
  return list.items
    .filter((p) => String(p.spec?.containers?.[0]?.image ?? "").startsWith("vllm/"))
    .map((p) => {
      const container = p.spec.containers[0];
      const argv: string[] = [...(container.command ?? []), ...(container.args ?? [])];
      const portArg = argv.indexOf("--port");
      const port = container.ports?.[0]?.containerPort ?? (portArg >= 0 ? Number(argv[portArg + 1]) : 8000);
      const ready = !p.metadata.deletionTimestamp && (p.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True");
      return { name: p.metadata.name, uid: p.metadata.uid, running: p.status?.phase === "Running", ready, ...(p.status?.podIP && { url: `http://${p.status.podIP}:${port}` }) };
    });
}

// ---------------------------------------------------------------------------------------------
// The HPA-like rule: desired = ⌈Σ(running + waiting) ÷ target⌉ over Ready engine pods, HPA's 10 %
// tolerance, synced every 15 s, scale-up at once, scale-down to the highest recommendation of the
// last 300 s (HPA's default behaviour), applied by PATCHing replicas as a user would.

function startHpa(deploymentId: string, roleInput: object): { stop: () => Promise<{ patches: number; skipped: number }> } {
  let running = true;
  let patches = 0;
  let skipped = 0;
  const history: Array<{ at: number; replicas: number }> = [];
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const deployment = (await call("GET", `/v1/deployments/${deploymentId}`)).body;
        const current: number = deployment.spec.roles[0].replicas;
        const pods = (await enginePods(deploymentId)).filter((p) => p.ready && p.url);
        const loads = await Promise.all(
          pods.map(async (p) => {
            const text = await (await fetch(`${p.url}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
            let sum = 0;
            for (const line of text.split("\n")) if (/^vllm:num_requests_(running|waiting)\{/.test(line)) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
            return sum;
          }),
        );
        if (pods.length === 0) skipped++;
        else {
          const load = loads.reduce((a, b) => a + b, 0);
          const ratio = load / (QUEUE_TARGET * pods.length);
          const raw = Math.abs(ratio - 1) <= 0.1 ? current : Math.ceil(load / QUEUE_TARGET);
          const recommended = Math.min(MAX_REPLICAS, Math.max(1, raw));
          const now = performance.now();
          history.push({ at: now, replicas: recommended });
          while (history.length && history[0]!.at < now - (300 / C) * 1000) history.shift();
          const desired = recommended >= current ? recommended : Math.max(...history.map((h) => h.replicas));
          if (desired !== current) {
            const res = await call("PATCH", `/v1/deployments/${deploymentId}`, { spec: { roles: [{ ...roleInput, replicas: desired }] } });
            if (res.status < 300) patches++;
            else log(`HPA PATCH ${current} → ${desired}: ${res.status} ${JSON.stringify(res.body)}`);
          }
        }
      } catch {
        skipped++; // a missing read: no decision this sync, as the HPA does
      }
      await sleep(Math.max(0, (15 / C) * 1000 - (performance.now() - started)));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { patches, skipped };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// One run

interface Sample {
  t: number;
  running: number;
  ready: number;
}

interface RunResult {
  strategy: StrategyName;
  initialReplicas: number;
  sent: number;
  completed: number;
  failed: number;
  failures: Record<string, number>;
  windows: number;
  windowsMet: number;
  attainment: number;
  ttftP95Ms: number;
  itlP95Ms: number;
  itlMeanMs: number;
  gpuSeconds: number;
  gpuSecondsRatioToStaticPeak?: number;
  maxReplicas: number;
  hpa?: { patches: number; skipped: number };
  scalingEvents?: number;
  samples: Sample[];
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function waitReady(id: string, replicas: number, limitMs = 120_000): Promise<any> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const body = (await call("GET", `/v1/deployments/${id}`)).body;
    const ready = (await enginePods(id)).filter((p) => p.ready).length;
    if (body.status?.phase === "Ready" && body.status.observedGeneration === body.generation && body.status.endpoint && ready === replicas) return body;
    if (Date.now() > deadline) throw new Error(`${id} not Ready with ${replicas} replicas: ${JSON.stringify(body.status)}`);
    await sleep(500);
  }
}

async function runStrategy(strategy: Strategy, projectId: string, trace: Arrival[], samplesDir: string): Promise<RunResult> {
  const name = strategy.name.replace(/[^a-z]+/gi, "-").toLowerCase();
  const roleInput = { name: "main", resources: { gpus: 1 }, extraArgs: ["--max-num-seqs", String(MAX_NUM_SEQS)] };
  const spec = {
    model: { name: MODEL },
    engine: { name: "vllm", image: ENGINE_IMAGE },
    router: { kind: "builtin", policy: "least_load" },
    roles: [{ ...roleInput, replicas: strategy.replicas }],
    ...(strategy.scaling && { scaling: strategy.scaling }),
  };
  const created = await call("POST", "/v1/deployments", { name, projectId, spec });
  if (created.status !== 201) throw new Error(`create ${name}: ${created.status} ${JSON.stringify(created.body)}`);
  const id: string = created.body.id;
  const ready = await waitReady(id, strategy.replicas);
  const endpoint: string = ready.status.endpoint;
  log(`${strategy.name}: Ready with ${strategy.replicas} replicas at ${endpoint}; playing ${trace.length} requests over ${TRACE_SECONDS / C} s`);

  // Start on a sample-window boundary so the engines' windows line up with the trace's.
  await sleep(SAMPLE_WINDOW_MS - (Date.now() % SAMPLE_WINDOW_MS));
  const t0 = Date.now();
  const modelNow = () => ((Date.now() - t0) / 1000) * C;
  const hpa = strategy.hpa ? startHpa(id, roleInput) : undefined;

  const samples: Sample[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const at = modelNow();
      try {
        const pods = await enginePods(id);
        samples.push({ t: at, running: pods.filter((p) => p.running).length, ready: pods.filter((p) => p.ready).length });
      } catch {
        /* the next sample covers it */
      }
      await sleep(250);
    }
  })();

  let completed = 0;
  const failures: Record<string, number> = {};
  const fail = (why: string) => void (failures[why] = (failures[why] ?? 0) + 1);
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < trace.length; i++) {
    const a = trace[i]!;
    const due = t0 + (a.at / C) * 1000;
    if (due > Date.now()) await sleep(due - Date.now());
    inflight.push(
      (async () => {
        try {
          const res = await fetch(`${endpoint}/v1/chat/completions`, {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({
              model: MODEL,
              // A unique first word: no prefix-cache hits between requests.
              messages: [{ role: "user", content: `r${i}-${strategy.name.length} ` + "lorem ".repeat(a.inputTokens - 1) }],
              max_tokens: a.outputTokens,
              ignore_eos: true,
            }),
            signal: AbortSignal.timeout(120_000),
          });
          const text = await res.text();
          if (res.status !== 200) return fail(`http ${res.status}`);
          const body = JSON.parse(text);
          if (body.choices?.[0]?.finish_reason !== "length" || body.usage?.completion_tokens !== a.outputTokens) return fail(`incomplete (${body.choices?.[0]?.finish_reason})`);
          completed++;
        } catch (error) {
          fail((error as Error).name === "TimeoutError" ? "timeout" : `network: ${(error as Error).message}`);
        }
      })(),
    );
  }
  await sleep(Math.max(0, t0 + (TRACE_SECONDS / C) * 1000 - Date.now()));
  sampling = false;
  await sampler;
  const hpaStats = await hpa?.stop();
  const settled = await Promise.race([Promise.all(inflight).then(() => true), sleep(130_000).then(() => false)]);
  if (!settled) log(`${strategy.name}: requests still in flight after 130 s`);
  const failed = Object.values(failures).reduce((a, b) => a + b, 0);
  const scaled: any[] | undefined = strategy.scaling || strategy.hpa ? (await call("GET", `/v1/deployments/${id}/scaling-events?limit=100`)).body?.items : undefined;
  const events = scaled?.length;
  for (const e of [...(scaled ?? [])].reverse()) {
    log(`${strategy.name}: ${round(((Date.parse(e.occurredAt) - t0) / 1000) * C)} s ${e.data?.from} → ${e.data?.to} ${e.data?.reason}: ${e.data?.message}`);
  }

  // GPU-seconds: each sample's Running engine pods held until the next sample, in model seconds.
  let gpuSeconds = 0;
  for (let k = 0; k < samples.length; k++) {
    const end = Math.min(TRACE_SECONDS, samples[k + 1]?.t ?? TRACE_SECONDS);
    gpuSeconds += samples[k]!.running * Math.max(0, end - samples[k]!.t);
  }

  // Latency: the engines' model-time samples, per WINDOW_MODEL_SECONDS (10 model-s) window.
  const lastWindow = Math.floor((t0 + (TRACE_SECONDS / C) * 1000) / SAMPLE_WINDOW_MS);
  const firstWindow = t0 / SAMPLE_WINDOW_MS;
  await sleep(1500); // the engines flush finished windows every second
  const ttftByWindow = new Map<number, number[]>();
  const allTtft: number[] = [];
  const itl = new Map<number, number>();
  for (const file of readdirSync(samplesDir)) {
    for (const line of readFileSync(join(samplesDir, file), "utf8").split("\n")) {
      if (!line) continue;
      const w = JSON.parse(line) as { window: number; ttftMs: number[]; itl: Array<[number, number]> };
      if (w.window < firstWindow || w.window >= lastWindow) continue;
      const list = ttftByWindow.get(w.window) ?? [];
      list.push(...w.ttftMs);
      allTtft.push(...w.ttftMs);
      ttftByWindow.set(w.window, list);
      for (const [bucket, count] of w.itl) itl.set(bucket, (itl.get(bucket) ?? 0) + count);
    }
  }
  // A window in which no request got its first token has no TTFT to judge (e.g. only ITL samples).
  for (const [w, list] of ttftByWindow) if (list.length === 0) ttftByWindow.delete(w);
  let windowsMet = 0;
  const misses: string[] = [];
  for (const [w, list] of [...ttftByWindow].sort((a, b) => a[0] - b[0])) {
    const p95 = percentile(list.sort((a, b) => a - b), 95);
    if (p95 <= TARGETS.ttftP95Ms) windowsMet++;
    else misses.push(`${round(((w * SAMPLE_WINDOW_MS - t0) / 1000) * C)} s: p95 ${round(p95)} ms of ${list.length}`);
  }
  if (misses.length) log(`${strategy.name}: windows missing TTFT p95 (model time): ${misses.join("; ")}`);
  const changes = samples.filter((x, k) => k === 0 || x.running !== samples[k - 1]!.running || x.ready !== samples[k - 1]!.ready);
  log(`${strategy.name}: pods (model s: running/ready): ${changes.map((x) => `${round(x.t)}: ${x.running}/${x.ready}`).join(", ")}`);
  const itlBuckets = [...itl].sort((a, b) => a[0] - b[0]);
  const itlTotal = itlBuckets.reduce((s, [, n]) => s + n, 0);
  let acc = 0;
  let itlP95 = NaN;
  let itlSum = 0;
  for (const [bucket, n] of itlBuckets) {
    const ms = ITL_BUCKET_BASE ** bucket;
    itlSum += ms * n;
    acc += n;
    if (Number.isNaN(itlP95) && acc >= 0.95 * itlTotal) itlP95 = ms;
  }

  // Leave the cluster empty for the next strategy.
  for (const file of readdirSync(samplesDir)) rmSync(join(samplesDir, file));
  await call("DELETE", `/v1/deployments/${id}`);
  const deadline = Date.now() + 90_000;
  while ((await enginePods(id).catch(() => [1])).length > 0 && Date.now() < deadline) await sleep(500);

  return {
    strategy: strategy.name,
    initialReplicas: strategy.replicas,
    sent: trace.length,
    completed,
    failed,
    failures,
    windows: ttftByWindow.size,
    windowsMet,
    attainment: ttftByWindow.size ? windowsMet / ttftByWindow.size : NaN,
    ttftP95Ms: round(percentile(allTtft.sort((a, b) => a - b), 95)),
    itlP95Ms: round(itlP95, 2),
    itlMeanMs: round(itlSum / itlTotal, 2),
    gpuSeconds: Math.round(gpuSeconds),
    maxReplicas: Math.max(0, ...samples.map((s) => s.running)),
    ...(hpaStats && { hpa: hpaStats }),
    ...(events !== undefined && { scalingEvents: events }),
    samples,
  };
}

// ---------------------------------------------------------------------------------------------

function plot(results: RunResult[], trace: Arrival[]): Buffer {
  const load: Array<[number, number]> = [];
  for (let t = 0; t < TRACE_SECONDS; t += WINDOW_MODEL_SECONDS * 3) {
    const n = trace.filter((a) => a.at >= t && a.at < t + WINDOW_MODEL_SECONDS * 3).length;
    load.push([t, n / (WINDOW_MODEL_SECONDS * 3)], [t + WINDOW_MODEL_SECONDS * 3, n / (WINDOW_MODEL_SECONDS * 3)]);
  }
  const peakRps = Math.max(...TRACE.flatMap((s) => s.rps));
  const rightMax = Math.ceil((peakRps * 1.4) / 2) * 2;
  const svg = renderPanelsSvg({
    title: `berth scaling bench: replicas (Running engine pods) and load, ${TRACE_SECONDS / 60}-min trace at ${C}× compression`,
    xLabel: "model time (s): quiet 0–300, ramp 300–600, spike 600–780, plateau 780–1380, fall 1380–1800",
    xMax: TRACE_SECONDS,
    xTicks: Array.from({ length: TRACE_SECONDS / 300 + 1 }, (_, i) => i * 300),
    panels: results.map((r) => ({
      title: `${r.strategy}: TTFT p95 met in ${round(r.attainment * 100)}% of windows, ${r.gpuSeconds} GPU-s, ${r.failed} failed`,
      leftLabel: "replicas",
      rightLabel: "requests/s",
      leftMax: MAX_REPLICAS,
      rightMax,
      series: [
        { label: "requests/s (30 s bins)", color: "#bbbbbb", points: load, right: true },
        { label: "Running engine pods", color: "#1f77b4", points: r.samples.map((s) => [Math.min(s.t, TRACE_SECONDS), s.running] as [number, number]), step: true },
        { label: "Ready", color: "#2ca02c", points: r.samples.map((s) => [Math.min(s.t, TRACE_SECONDS), s.ready] as [number, number]), step: true, dashed: true },
      ] satisfies Series[],
    })),
  });
  return svgToPng(svg);
}

async function main(): Promise<void> {
  const loadStart = loadavg();
  const samplesDir = mkdtempSync(join(tmpdir(), "berth-bench-scaling-"));
  let agent: ChildProcess | undefined;
  const cleanup = async () => {
    if (agent && agent.exitCode === null) {
      const exited = new Promise((r) => agent!.once("exit", r));
      agent.send({ id: 1, type: "stop" });
      const timer = setTimeout(() => agent!.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await cluster?.stop({ now: true }).catch(() => {});
    await server?.stop().catch(() => {});
    rmSync(samplesDir, { recursive: true, force: true });
  };
  process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));
  try {
    const trace = arrivals();
    log(`C = ${C}; ${trace.length} requests over ${TRACE_SECONDS} model-s; per replica ${perReplica} concurrent meet the targets (perf model); static peak ${STATIC_PEAK}, static mean ${STATIC_MEAN}`);
    const programs = berthPrograms({ routerImage: ROUTER_IMAGE });
    [server, cluster] = await Promise.all([
      startBerthServer(),
      startSimCluster({
        nodes: [0, 1].map((i) => ({ name: `gpu-${i}`, gpuType: GPU, gpus: 8 })),
        programs: {
          ...programs,
          engineCommand: [process.execPath, "--import", TSX_LOADER, fileURLToPath(new URL("./support/model-time-engine.ts", import.meta.url)), samplesDir, String(C), "--latency-profile", String(1 / C)],
        },
        // Probe periods, delays and backoffs in model time too (a 10 s readiness period is 10 model-s).
        timeScale: 1 / C,
      }),
    ]);
    const project = await call("POST", "/v1/projects", { name: "scaling" });
    const registered = await call("POST", "/v1/clusters", { name: "sim" });
    const { token } = await registerAgent(server.url, registered.body.joinToken);
    const options: AgentProcessOptions = {
      apiUrl: server.url,
      token,
      server: cluster.url,
      // Engine time runs C× faster than the wall clock: rates per model second (see model-time-engine.ts).
      config: { settleMs: 500, waitSeconds: 2, heartbeatMs: 2_000, resyncMs: 5_000, backoffBaseMs: 100, backoffCapMs: 2_000, metricsTimeScale: C },
    };
    agent = fork(fileURLToPath(new URL("./support/agent-process.ts", import.meta.url)), [JSON.stringify(options)], {
      cwd: ROOT,
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    await new Promise<void>((resolve, reject) => {
      agent!.once("message", () => resolve());
      agent!.once("exit", (code) => reject(new Error(`agent exited (${code})`)));
    });

    const results: RunResult[] = [];
    const only = flags.only;
    for (const strategy of only?.length ? STRATEGIES.filter((s) => only.includes(s.name)) : STRATEGIES) {
      const started = Date.now();
      const result = await runStrategy(strategy, project.body.id, trace, samplesDir);
      results.push(result);
      log(`${strategy.name}: attainment ${round(result.attainment * 100)}%, ${result.gpuSeconds} GPU-s, ${result.failed} failed (${round((Date.now() - started) / 1000)} s wall)`);
    }
    // Static peak holds its replicas the whole trace: its GPU-seconds are known when it did not run.
    const peak = results.find((r) => r.strategy === "static peak")?.gpuSeconds ?? STATIC_PEAK * TRACE_SECONDS;
    for (const r of results) r.gpuSecondsRatioToStaticPeak = round(r.gpuSeconds / peak, 3);

    printTable([
      ["strategy", "replicas", "TTFT p95 met", "TTFT p95 ms", "ITL p95 ms", "ITL mean ms", "failed", "sent/completed", "GPU-s", "vs static peak"],
      ...results.map((r) => [
        r.strategy,
        r.samples.length ? `${Math.min(...r.samples.map((s) => s.running))}–${r.maxReplicas}` : "?",
        `${round(r.attainment * 100)}% (${r.windowsMet}/${r.windows})`,
        String(r.ttftP95Ms),
        String(r.itlP95Ms),
        String(r.itlMeanMs),
        String(r.failed),
        `${r.sent}/${r.completed}`,
        String(r.gpuSeconds),
        `${r.gpuSecondsRatioToStaticPeak}×`,
      ]),
    ]);
    const sla = results.find((r) => r.strategy === "berth sla");
    const berthRuns = results.filter((r) => r.strategy.startsWith("berth"));
    const verdicts = !sla ? [] : [
      `berth sla TTFT p95 attainment ≥ ${TARGETS.attainment * 100}%: ${sla.attainment >= TARGETS.attainment ? "met" : "NOT met"} (${round(sla.attainment * 100)}%)`,
      `berth sla GPU-seconds ≤ ${TARGETS.gpuSecondsRatio} × static peak: ${sla.gpuSecondsRatioToStaticPeak! <= TARGETS.gpuSecondsRatio ? "met" : "NOT met"} (${sla.gpuSecondsRatioToStaticPeak}×)`,
      `zero failed requests in every berth run: ${berthRuns.every((r) => r.failed === 0) ? "met" : "NOT met"} (${berthRuns.map((r) => `${r.strategy} ${r.failed}`).join(", ")})`,
    ];
    console.log("\ntargets:");
    for (const v of verdicts) console.log(`  ${v}`);
    if (flags.quick || flags.only?.length) {
      log("--quick/--only: results not written");
      return;
    }
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(new URL("./results/scaling.png", import.meta.url), plot(results, trace));
    await writeFile(
      new URL("./results/scaling.json", import.meta.url),
      JSON.stringify(
        {
          benchmark: "scaling",
          date: new Date().toISOString(),
          machine: { node: process.version, cpus: availableParallelism(), cpu: cpus()[0]?.model.trim(), loadAverageAtStart: loadStart.map((l) => round(l, 2)), loadAverageAtEnd: loadavg().map((l) => round(l, 2)) },
          settings: {
            compression: C,
            model: MODEL,
            engine: `vllm (berth sim-engine --latency-profile ${1 / C} via bench/support/model-time-engine.ts), --max-num-seqs ${MAX_NUM_SEQS}, 1 × ${GPU} per replica`,
            cluster: `2 nodes × 8 ${GPU} (simulated), builtin router least_load, berth serve on PGlite, the agent in a child process; kubelet probe periods and backoffs × 1/${C} (model time)`,
            perfModelConcurrencyPerReplica: perReplica,
            staticPeakReplicas: STATIC_PEAK,
            staticMeanReplicas: STATIC_MEAN,
            staticSizing: `Little's law at the perf model's per-replica concurrency meeting TTFT ${TARGETS.ttftP95Ms} ms and ITL ${TARGETS.itlMs} ms for ${MEAN_WORKLOAD.inputTokens}/${MEAN_WORKLOAD.outputTokens} tokens: peak rate ${Math.max(...TRACE.flatMap((s) => s.rps))} rps, mean ${round(meanRps, 2)} rps`,
            hpa: `desired = ceil(Σ(running + waiting) over Ready engine pods ÷ ${QUEUE_TARGET}), tolerance 0.1, sync 15 model-s (${15 / C} s wall), scale-up at once, scale-down to the highest recommendation of the last 300 model-s (${300 / C} s wall), min 1 max ${MAX_REPLICAS}, PATCH /v1/deployments/{id} with the admin token`,
            berth: { ...berthScaling({ type: "<queue_depth targetPerReplica 16 tolerance 0.1 | sla>" }), note: `intervalSeconds is whole seconds: 1 s wall = ${C} model-s${C === 15 ? " (berth's default)" : ""}; the agent timestamps engine reads on a clock ${C}× fast (metricsTimeScale), so rates are per model second` },
            latency: "model-time values from the engines (model-time-engine.ts multiplies the simulator's latencies by C): TTFT from arrival at the engine to the first token (router time not included), ITL between consecutive tokens; attainment = fraction of 10 model-s windows (with ≥ 1 first token) whose TTFT p95 ≤ target; ITL p95/mean over the whole trace (1 % log buckets)",
            failures: "non-200, a response without finish_reason length and the requested completion tokens, a network error or a 120 s timeout",
            gpuSeconds: "Σ Running engine pods (1 GPU each, terminating pods included) × model time, listed from the simulated API server every 250 ms wall, over the trace",
          },
          trace: { seed: SEED, seconds: TRACE_SECONDS, phases: TRACE, workload: { ...WORKLOAD, note: "uniform, ignore_eos with max_tokens = output tokens, a unique first word per request (no prefix-cache hits)" }, requests: trace.length },
          targets: TARGETS,
          results: results.map(({ samples, ...r }) => ({ ...r, timeline: samples.filter((_, k) => k % 2 === 0).map((s) => [round(s.t), s.running, s.ready]) })),
          verdicts,
        },
        null,
        2,
      ) + "\n",
    );
    log("wrote bench/results/scaling.json and bench/results/scaling.png");
  } finally {
    await cleanup();
  }
}

await main();
// Everything is stopped by now; keep-alive sockets to the gone routers would hold the loop open.
process.exit(0);

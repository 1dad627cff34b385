// Prefill/decode disaggregation against aggregated serving on equal GPUs: `npm run bench:pd [-- --quick]`.
// SIMULATED figures: a real `berth serve`, the simulated cluster (one node, 16 × H100) whose pods are
// engine-simulator and router processes on loopback, and the agent in this process on its production
// defaults (test/agent/e2e-support.ts builds the world, as the agent's end-to-end tests do).
// Qwen3-32B on vLLM, TP2 everywhere, as in GPUStack Operator's PD benchmark (its "Benchmark headlines":
// H100 80GB SXM5, 1 prefill + 2 decode at TP2 on 6 GPUs against aggregated serving on 6 GPUs, TCP KV):
//   pd   1 prefill + 2 decode instances, TP2 each (6 GPUs), builtin router, NIXL over TCP
//   agg  3 server instances, TP2 each (6 GPUs), builtin router least_load
// Both Ready side by side; rounds alternate pd, agg, pd, agg so drift hits both. Workloads: long
// prompts (4096 and 8192 tokens in, 256 out) at concurrency 1, 4 and 16, and a mixed stream (prompts
// 256–8192 tokens log-uniform, outputs 64–512, seeded) at concurrency 16; closed loops of 3 ×
// concurrency requests (at least 8) after an uncounted warm-up wave, the clients' starts spread over
// one request's decode time so that prefills meet running decodes.
// Measured: at the client, TTFT (POST → first content chunk) and ITL (gaps between content chunks);
// at the engines, ITL in model time (bench/support/model-time-engine.ts at compression 1: exact samples
// in 1 % log buckets, free of this machine's scheduling delays, which the client figures include);
// output throughput = completion tokens ÷ the round's wall time. Ratios are agg ÷ pd within one run.
// Prints tables, writes bench/results/pd.json.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { berthPrograms } from "../k8s/sim/index.ts";
import { DEFAULT_AGENT_CONFIG } from "../src/agent/agent.ts";
import { type AgentWorld, eventually, ROUTER_IMAGE, startAgentWorld } from "../test/agent/e2e-support.ts";
import { ITL_BUCKET_BASE } from "./support/model-time-engine.ts";
import { percentile, round } from "./support/stats.ts";
import { closedLoop, promptOf, type StreamRecord } from "./support/stream-client.ts";
import { printTable } from "./support/table.ts";

const { values: flags } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
/** --quick: one round per case, concurrency 16 only; results not written. */
const QUICK = flags.quick;

const MODEL = "Qwen/Qwen3-32B";
const GPU = "nvidia-h100-80gb";
const NS = "berth-pd-bench";
const TSX_LOADER = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const ROUNDS = QUICK ? 1 : 2;
const LIMITS = { readyMs: 240_000, requestMs: 240_000, roundMs: 300_000, deleteMs: 120_000, wholeBenchMs: 40 * 60_000 };
/** The engines flush their samples once a 10 s window is over (model-time-engine.ts at compression 1). */
const SAMPLE_FLUSH_MS = 11_500;

interface Workload {
  name: string;
  concurrency: number;
  /** Prompt and output tokens of request n. */
  shape(n: number): { promptTokens: number; outputTokens: number };
}

/** A seeded generator (mulberry32), so the mixed stream is the same for both sides and every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MIXED = (() => {
  const random = seeded(20261202);
  return Array.from({ length: 256 }, () => ({
    promptTokens: Math.round(Math.exp(Math.log(256) + random() * (Math.log(8192) - Math.log(256)))),
    outputTokens: 64 + Math.floor(random() * 449),
  }));
})();

const fixed = (promptTokens: number, outputTokens: number) => () => ({ promptTokens, outputTokens });
const WORKLOADS: Workload[] = [
  ...(QUICK ? [16] : [1, 4, 16]).map((c) => ({ name: `long 4096/256, c=${c}`, concurrency: c, shape: fixed(4096, 256) })),
  { name: "long 8192/256, c=16", concurrency: 16, shape: fixed(8192, 256) },
  { name: "mixed 256–8192/64–512, c=16", concurrency: 16, shape: (n: number) => MIXED[n % MIXED.length]! },
];

/** GPUStack Operator's published PD figures (docs v0.9.2–v0.11.2, model-deployment benchmark pages, https://docs.gpustack.ai/gpustack-operator/). */
const GPUSTACK = {
  source: "GPUStack Operator docs v0.9.2–v0.11.2, Prefill/Decode benchmark page (https://docs.gpustack.ai/gpustack-operator/)",
  hardware: "H100 80GB SXM5, Kubernetes 1.35.7; Qwen3-32B; 1P + 2D at TP2 (6 GPUs) vs aggregated on 6 GPUs; TCP KV",
  longPromptItlP99Better: "25.6×–27.8× at concurrency 16",
  longPromptTtft: "substantially worse (PD)",
  mixedStream: "23.3× lower max ITL, no p99 improvement",
};

const engine = { name: "vllm", image: "vllm/vllm-openai:v0.11.0" };
const tp2 = { resources: { gpus: 2, gpuType: GPU }, parallelism: { tensor: 2 } };
const SPECS = {
  pd: {
    model: { name: MODEL },
    engine,
    router: { kind: "builtin", policy: "least_load" },
    kvTransfer: { connector: "nixl", protocol: "tcp" },
    roles: [
      { name: "prefill", kind: "prefill", replicas: 1, ...tp2 },
      { name: "decode", kind: "decode", replicas: 2, ...tp2 },
    ],
  },
  agg: { model: { name: MODEL }, engine, router: { kind: "builtin", policy: "least_load" }, roles: [{ name: "main", replicas: 3, ...tp2 }] },
};

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let world: AgentWorld;

async function routerEndpoint(id: string): Promise<string> {
  const pods = await world.kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/component=router` });
  const ips = pods.items.filter((p) => !p.metadata!.deletionTimestamp && p.status?.podIP).map((p) => p.status!.podIP!);
  if (ips.length !== 1) throw new Error(`${id}: ${ips.length} router pods, expected 1`);
  // The router pod itself, not status.endpoint: the simulated Service proxy is a userland proxy in this
  // very process and would add its work to the clock it is timed on (as bench/elastic.ts).
  return `http://${ips[0]}:8080`;
}

/** The engines' model-time ITL samples written since the directory was last cleared: ascending ms. */
function engineItl(samplesDir: string): number[] {
  const values: number[] = [];
  for (const file of readdirSync(samplesDir)) {
    for (const line of readFileSync(join(samplesDir, file), "utf8").split("\n")) {
      if (!line) continue;
      for (const [bucket, count] of JSON.parse(line).itl as Array<[number, number]>) {
        const ms = bucket === -1000 ? 0 : ITL_BUCKET_BASE ** bucket;
        for (let i = 0; i < count; i++) values.push(ms);
      }
    }
  }
  return values.sort((a, b) => a - b);
}

function clear(samplesDir: string): void {
  for (const file of readdirSync(samplesDir)) rmSync(join(samplesDir, file), { force: true });
}

interface Round {
  side: "pd" | "agg";
  workload: string;
  requests: number;
  failed: number;
  errors: string[];
  ttftMs: number[];
  clientItlMs: number[];
  engineItlMs: number[];
  outputTokens: number;
  wallMs: number;
}

async function runRound(side: "pd" | "agg", endpoint: string, workload: Workload, tag: string, samplesDir: string): Promise<Round> {
  const requests = Math.max(8, 3 * workload.concurrency);
  const request = (n: number, shape: { promptTokens: number; outputTokens: number }, prefix: string) => ({
    endpoint,
    model: MODEL,
    content: promptOf(`${prefix}-${n}`, shape.promptTokens),
    maxTokens: shape.outputTokens,
    timeoutMs: LIMITS.requestMs,
  });
  // Not counted: one short request per client, so the counted wave starts with its connections open.
  await closedLoop({ clients: workload.concurrency, requests: workload.concurrency, limitMs: LIMITS.roundMs, next: (n) => request(n, { promptTokens: 16, outputTokens: 4 }, `${tag}-warm`) });
  await sleep(SAMPLE_FLUSH_MS);
  clear(samplesDir);
  const started = performance.now();
  // Clients start spread over about one request's decode time (256 tokens at ~20 ms), so arrivals
  // interleave with decoding as they do under a steady stream.
  const staggerMs = (workload.shape(0).outputTokens * 20) / workload.concurrency;
  const records: StreamRecord[] = await closedLoop({ clients: workload.concurrency, requests, limitMs: LIMITS.roundMs, staggerMs, next: (n) => request(n, workload.shape(n), tag) });
  const wallMs = performance.now() - started;
  await sleep(SAMPLE_FLUSH_MS);
  const ok = records.filter((r) => r.ok);
  const result: Round = {
    side,
    workload: workload.name,
    requests: records.length,
    failed: records.length - ok.length,
    errors: [...new Set(records.filter((r) => !r.ok).map((r) => r.error!))].slice(0, 5),
    ttftMs: ok.map((r) => r.ttftMs!).sort((a, b) => a - b),
    clientItlMs: ok.flatMap((r) => r.gapsMs).sort((a, b) => a - b),
    engineItlMs: engineItl(samplesDir),
    outputTokens: ok.reduce((s, r) => s + r.completionTokens!, 0),
    wallMs,
  };
  log(
    `${side} ${workload.name}: ${ok.length}/${records.length} ok, TTFT p50 ${round(percentile(result.ttftMs, 50))} ms, ` +
      `ITL p99 client ${round(percentile(result.clientItlMs, 99))} / engine ${round(percentile(result.engineItlMs, 99))} ms, ${round(wallMs / 1000)} s`,
  );
  return result;
}

function pooled(rounds: Round[]) {
  const all = (pick: (r: Round) => number[]) => rounds.flatMap(pick).sort((a, b) => a - b);
  const ttft = all((r) => r.ttftMs);
  const client = all((r) => r.clientItlMs);
  const engineItl = all((r) => r.engineItlMs);
  const wall = rounds.reduce((s, r) => s + r.wallMs, 0);
  return {
    rounds: rounds.length,
    requests: rounds.reduce((s, r) => s + r.requests, 0),
    failed: rounds.reduce((s, r) => s + r.failed, 0),
    errors: [...new Set(rounds.flatMap((r) => r.errors))].slice(0, 5),
    ttftP50Ms: round(percentile(ttft, 50)),
    ttftP99Ms: round(percentile(ttft, 99)),
    clientItlP50Ms: round(percentile(client, 50), 2),
    clientItlP99Ms: round(percentile(client, 99), 2),
    clientItlMaxMs: round(client.at(-1) ?? NaN, 2),
    engineItlP50Ms: round(percentile(engineItl, 50), 2),
    engineItlP99Ms: round(percentile(engineItl, 99), 2),
    engineItlMaxMs: round(engineItl.at(-1) ?? NaN, 2),
    engineItlSamples: engineItl.length,
    outputTokensPerSecond: round(rounds.reduce((s, r) => s + r.outputTokens, 0) / (wall / 1000)),
  };
}

async function createReady(name: string, spec: object): Promise<{ id: string; endpoint: string }> {
  const id = await world.create(name, spec);
  await world.readyDeployment(id, { timeoutMs: LIMITS.readyMs, what: `${name} Ready` });
  return { id, endpoint: await routerEndpoint(id) };
}

async function remove(id: string): Promise<void> {
  const res = await world.call("DELETE", `/v1/deployments/${id}`);
  if (res.status >= 300) throw new Error(`delete ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  await eventually(`${id}'s pods gone`, async () => (await world.kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id}` })).items.length === 0, LIMITS.deleteMs, 500);
}

async function main(): Promise<void> {
  const loadStart = loadavg();
  const benchStarted = performance.now();
  const samplesDir = mkdtempSync(join(tmpdir(), "berth-bench-pd-"));
  const programs = berthPrograms({ routerImage: ROUTER_IMAGE });
  world = await startAgentWorld({
    gpus: 16,
    project: "pd-bench",
    sim: {
      programs: {
        ...programs,
        // Compression 1: model time is wall time; the wrapper only records exact ITL samples.
        engineCommand: [process.execPath, "--import", TSX_LOADER, fileURLToPath(new URL("./support/model-time-engine.ts", import.meta.url)), samplesDir, "1", "--latency-profile", "1"],
      },
    },
  });
  const abandon = (why: string, code: number) => {
    log(why);
    void world.stop().finally(() => process.exit(code));
  };
  const watchdog = setTimeout(() => abandon(`over ${LIMITS.wholeBenchMs / 60_000} min: giving up`, 2), LIMITS.wholeBenchMs);
  process.once("SIGINT", () => abandon("interrupted", 130));
  try {
    world.startAgent({ config: DEFAULT_AGENT_CONFIG });
    const [pd, agg] = await Promise.all([createReady("pd", SPECS.pd), createReady("agg", SPECS.agg)]);
    log(`both Ready (${round((performance.now() - benchStarted) / 1000)} s)`);
    const rounds: Round[] = [];
    for (const [w, workload] of WORKLOADS.entries()) {
      for (let k = 1; k <= ROUNDS; k++) {
        rounds.push(await runRound("pd", pd.endpoint, workload, `pd-${w}-${k}`, samplesDir));
        rounds.push(await runRound("agg", agg.endpoint, workload, `agg-${w}-${k}`, samplesDir));
      }
    }
    await Promise.all([remove(pd.id), remove(agg.id)]);

    const cases = WORKLOADS.map((workload) => {
      const of = (side: "pd" | "agg") => pooled(rounds.filter((r) => r.side === side && r.workload === workload.name));
      const p = of("pd");
      const a = of("agg");
      const ratio = (x: number, y: number) => round(x / y, 2);
      return {
        workload: workload.name,
        pd: p,
        agg: a,
        // "× better" for PD: aggregated's figure over PD's (above 1 = PD lower, i.e. better).
        aggOverPd: {
          ttftP50: ratio(a.ttftP50Ms, p.ttftP50Ms),
          clientItlP99: ratio(a.clientItlP99Ms, p.clientItlP99Ms),
          engineItlP99: ratio(a.engineItlP99Ms, p.engineItlP99Ms),
          engineItlMax: ratio(a.engineItlMaxMs, p.engineItlMaxMs),
          throughputPdOverAgg: ratio(p.outputTokensPerSecond, a.outputTokensPerSecond),
        },
      };
    });

    console.log(`\nSIMULATED figures (berth sim-engine, default latency profile; not GPU measurements). ${MODEL}, TP2, ${GPU} (simulated), 6 GPUs a side.`);
    printTable([
      ["workload", "side", "req", "failed", "TTFT p50", "TTFT p99", "ITL p50 (client)", "ITL p99 (client)", "ITL p50 (engine)", "ITL p99 (engine)", "ITL max (engine)", "out tok/s"],
      ...cases.flatMap((c) =>
        (["pd", "agg"] as const).map((side) => {
          const m = c[side];
          return [c.workload, side, String(m.requests), String(m.failed), String(m.ttftP50Ms), String(m.ttftP99Ms), String(m.clientItlP50Ms), String(m.clientItlP99Ms), String(m.engineItlP50Ms), String(m.engineItlP99Ms), String(m.engineItlMaxMs), String(m.outputTokensPerSecond)];
        }),
      ),
    ]);
    printTable([
      ["workload", "TTFT p50 agg÷pd", "ITL p99 agg÷pd (client)", "ITL p99 agg÷pd (engine)", "ITL max agg÷pd (engine)", "throughput pd÷agg"],
      ...cases.map((c) => [c.workload, String(c.aggOverPd.ttftP50), String(c.aggOverPd.clientItlP99), String(c.aggOverPd.engineItlP99), String(c.aggOverPd.engineItlMax), String(c.aggOverPd.throughputPdOverAgg)]),
    ]);
    console.log(`\nGPUStack Operator (published, H100): long-prompt ITL p99 ${GPUSTACK.longPromptItlP99Better} better with PD, TTFT ${GPUSTACK.longPromptTtft}; mixed stream: ${GPUSTACK.mixedStream}.`);
    if (QUICK) {
      log("--quick: results not written");
      return;
    }
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      new URL("./results/pd.json", import.meta.url),
      JSON.stringify(
        {
          benchmark: "pd",
          simulated: true,
          date: new Date().toISOString(),
          wallSeconds: round((performance.now() - benchStarted) / 1000),
          machine: { cpus: cpus().length, loadAverageAtStart: loadStart.map((l) => round(l, 2)), loadAverageAtEnd: loadavg().map((l) => round(l, 2)) },
          setup: { model: MODEL, gpu: GPU, specs: SPECS, roundsPerCase: ROUNDS, requestsPerRound: "max(8, 3 × concurrency)", engineItl: "model time, 1 % log buckets (bench/support/model-time-engine.ts, compression 1)" },
          gpustack: GPUSTACK,
          cases,
          rounds: rounds.map(({ ttftMs, clientItlMs, engineItlMs, ...r }) => ({ ...r, wallMs: Math.round(r.wallMs), ttftP50Ms: round(percentile(ttftMs, 50)), engineItlP99Ms: round(percentile(engineItlMs, 99), 2) })),
        },
        null,
        2,
      ) + "\n",
    );
    log("wrote bench/results/pd.json");
  } finally {
    clearTimeout(watchdog);
    await world.stop();
    rmSync(samplesDir, { recursive: true, force: true });
  }
}

await main();

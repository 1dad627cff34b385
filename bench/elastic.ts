// Elastic EP resize benchmark (docs/design.md §8): `npm run bench:elastic [-- --quick]`. Simulated figures:
// a real `berth serve`, the simulated cluster (one node, 16 × H100) whose pods are engine-simulator
// and router processes on loopback, and the agent in this process on its production defaults
// (test/agent/e2e-support.ts builds the world, as the agent's end-to-end tests do). Engines run the
// simulator's default latency profile (1×: model time is wall time). DeepSeek-V2-Lite on vLLM, the
// builtin router (least_load); clients talk to its pod (see createReady).
//
// 1. Resize under load: 16 streaming clients loop while the bench POSTs a resize 2 → 4 and, after
//    a TTFT round, 4 → 2; twice. A request belongs to a resize when its lifetime overlaps the window
//    from the POST to the poll that first sees the Operation Succeeded (polled every 100 ms);
//    failed = a non-200 answer, a stream without `data: [DONE]`, an error event, a short answer or
//    a network error. Step durations are the Operation's own steps[] timestamps.
// 2. TTFT p50 at concurrency 64, 1024 prompt / 256 output tokens, fixed (closed loop as `vllm bench
//    serve --max-concurrency 64` on its random dataset, whose default range ratio 0 fixes both
//    lengths: 64 workers, a fixed number of requests, the first wave included, after an uncounted
//    warm-up wave), at widths 2, 4, 2, 4, 2 around the resizes; each width pools its rounds, and
//    every width-4 round has a width-2 round on either side (against drift). TTFT = POST sent →
//    first chunk with content, at the client. Beside it the engines' own mean TTFT
//    (Δ vllm:time_to_first_token_seconds sum ÷ count over the round), which leaves out the router,
//    the client and this process's share of the two cores.
// 3. The same TTFT for external DP 4 × TP2 (4 pods, one rank each, 2 GPUs each) against one TP8
//    instance (8 GPUs), both Ready side by side, rounds interleaved (xDP, TP8, four times).
// Ratios are measured in the same run (the machine is shared: 2 cores). Prints tables, writes
// bench/results/elastic.json.
import { availableParallelism, cpus, loadavg } from "node:os";
import { mkdir, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { DEFAULT_AGENT_CONFIG } from "../src/agent/agent.ts";
import { renderChat, tokenize } from "../src/sim/tokens.ts";
import { type AgentWorld, eventually, startAgentWorld } from "../test/agent/e2e-support.ts";
import { percentile, round } from "./support/stats.ts";
import { printTable } from "./support/table.ts";

const { values: flags } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
/** --quick: fewer requests per TTFT round, results not written. */
const QUICK = flags.quick;

const MOE = "deepseek-ai/DeepSeek-V2-Lite";
const ENGINE_IMAGE = "vllm/vllm-openai:v0.29.0"; // elastic EP needs a release after 0.16.0
const GPU = "nvidia-h100-80gb";
const NS = "berth-elastic-bench";
/** Model seconds one simulated `/scale_elastic_ep` takes (the simulator's SIM_ELASTIC_SCALE_SECONDS). */
const SCALE_SECONDS = 20;
const STREAM = { clients: 16, promptTokens: 128, outputTokens: 64 };
const TTFT = { concurrency: 64, requests: QUICK ? 128 : 320, promptTokens: 1024, outputTokens: 256 };
/** Grow-then-shrink cycles on the elastic deployment, and interleaved rounds per external-DP comparison side. */
const CYCLES = QUICK ? 1 : 2;
const XDP_ROUNDS = QUICK ? 2 : 4;
/** Bounds on every wait, so the bench ends. */
const LIMITS = {
  readyMs: 180_000,
  operationMs: 240_000,
  requestMs: 180_000,
  roundMs: 240_000,
  streamWarmMs: 60_000,
  /** How long the stream keeps going after a resize succeeded. */
  streamAfterMs: 3_000,
  deleteMs: 90_000,
  wholeBenchMs: 15 * 60_000,
};
/** GPUStack Operator's published figures: its model-deployment benchmark pages (https://docs.gpustack.ai/gpustack-operator/, docs v0.9.2–v0.11.2). */
const GPUSTACK = {
  source: "GPUStack Operator docs v0.9.2–v0.11.2, model-deployment benchmark pages (https://docs.gpustack.ai/gpustack-operator/), rows Elastic EP and External DP",
  hardware: "H100 SXM5 × 8, DeepSeek-V2-Lite",
  growUnderLoad: { ok: 439, sent: 439, errors: 0, note: "live expansion TP2, DP 2 → 4, EP 4 → 8" },
  shrink: "not supported (width increase only, operator #741)",
  elasticTtftP50Ms: { width2: 6509.231, width4: 2598.867, ratio: 2.5, concurrency: 64, workload: "not published" },
  externalDpTtftP50Ms: { xdp4tp2: 1863.1, tp8: 4798.411, ratio: 2.58, concurrency: 64, workload: "1024 input / 256 output tokens; also 1.23× on 4096/128", router: "vllm-router round_robin" },
};

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const engine = { name: "vllm", image: ENGINE_IMAGE };
const router = { kind: "builtin", policy: "least_load" };
const SPECS = {
  elastic: {
    model: { name: MOE },
    engine,
    router,
    roles: [
      {
        name: "ep",
        resources: { gpus: 1, gpuType: GPU },
        parallelism: { expert: true },
        elastic: { width: 2, maxWidth: 4 },
        env: [{ name: "SIM_ELASTIC_SCALE_SECONDS", value: String(SCALE_SECONDS) }],
      },
    ],
  },
  xdp: {
    model: { name: MOE },
    engine,
    router,
    roles: [{ name: "main", size: 4, resources: { gpus: 2, gpuType: GPU }, parallelism: { tensor: 2, data: 4, externalDP: true } }],
  },
  tp8: { model: { name: MOE }, engine, router, roles: [{ name: "main", resources: { gpus: 8, gpuType: GPU }, parallelism: { tensor: 8 } }] },
};

// ---------------------------------------------------------------------------------------------
// One streaming request, and closed-loop clients

interface RequestRecord {
  startedAt: number;
  endedAt: number;
  /** POST sent → the first chunk carrying content. */
  ttftMs?: number;
  ok: boolean;
  error?: string;
  promptTokens?: number;
  completionTokens?: number;
}

/** A chat prompt of exactly `tokens` simulator tokens (template included), opening with a unique tag: no prefix-cache hits. */
function promptOf(tag: string, tokens: number): string {
  const overhead = tokenize(renderChat([{ role: "user", content: tag }])).count;
  return tag + " lorem".repeat(Math.max(0, tokens - overhead));
}

async function streamChat(endpoint: string, content: string, maxTokens: number): Promise<RequestRecord> {
  const startedAt = performance.now();
  const record = (ok: boolean, extra: Partial<RequestRecord> = {}): RequestRecord => ({ startedAt, endedAt: performance.now(), ok, ...extra });
  try {
    const res = await fetch(`${endpoint}/v1/chat/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        model: MOE,
        messages: [{ role: "user", content }],
        max_tokens: maxTokens,
        ignore_eos: true,
        stream: true,
        stream_options: { include_usage: true },
      }),
      signal: AbortSignal.timeout(LIMITS.requestMs),
    });
    if (res.status !== 200) return record(false, { error: `http ${res.status}: ${(await res.text()).slice(0, 160)}` });
    let ttftMs: number | undefined;
    let usage: { prompt_tokens?: number; completion_tokens?: number } | undefined;
    let done = false;
    let buffered = "";
    const decoder = new TextDecoder();
    const reader = res.body!.getReader();
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffered += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const event = buffered.slice(0, end).trim();
        buffered = buffered.slice(end + 2);
        if (!event.startsWith("data:")) continue;
        const data = event.slice(5).trim();
        if (data === "[DONE]") {
          done = true;
          continue;
        }
        // Only the chunks that can matter are parsed: 64 streams of 256 chunks share two cores with everything else.
        if (ttftMs !== undefined && !data.startsWith('{"error"') && !data.includes('"usage"')) continue;
        const chunk = JSON.parse(data);
        if (chunk.error) {
          await reader.cancel().catch(() => {});
          return record(false, { error: `stream error: ${JSON.stringify(chunk.error).slice(0, 160)}` });
        }
        if (ttftMs === undefined && chunk.choices?.[0]?.delta?.content) ttftMs = performance.now() - startedAt;
        if (chunk.usage) usage = chunk.usage;
      }
    }
    if (!done) return record(false, { error: "stream ended without [DONE]" });
    if (usage?.completion_tokens !== maxTokens) return record(false, { error: `${usage?.completion_tokens} of ${maxTokens} tokens` });
    return record(true, { ttftMs, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens });
  } catch (error) {
    return record(false, { error: (error as Error).name === "TimeoutError" ? "timeout" : `network: ${(error as Error).message}` });
  }
}

/**
 * `clients` workers, each sending the next request when its last one ended, until `requests` were
 * sent, `stop()` was called, or `limitMs` passed (no new request after that).
 */
function closedLoop(endpoint: string, options: { clients: number; requests: number; limitMs: number; promptTokens: number; outputTokens: number; tag: string }) {
  const records: RequestRecord[] = [];
  let stopped = false;
  let sent = 0;
  const deadline = performance.now() + options.limitMs;
  const worker = async () => {
    while (!stopped && sent < options.requests && performance.now() < deadline) {
      const n = sent++;
      records.push(await streamChat(endpoint, promptOf(`${options.tag}-${n}`, options.promptTokens), options.outputTokens));
    }
  };
  const done = Promise.all(Array.from({ length: options.clients }, worker)).then(() => records);
  return {
    records,
    done,
    stop() {
      stopped = true;
      return done;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Reads of the world: engine and router pods, their metrics

let world: AgentWorld;

async function podIps(deploymentId: string, component: "engine" | "router"): Promise<string[]> {
  const pods = await world.kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${deploymentId}` });
  return pods.items
    .filter((p) => !p.metadata!.deletionTimestamp && p.status?.podIP)
    .filter((p) => (p.metadata!.labels!["berth.dev/component"] === "router") === (component === "router"))
    .map((p) => p.status!.podIP!);
}

/** Σ of a metric's series (one line each) in a Prometheus text body whose name and labels match. */
function sumSeries(text: string, pattern: RegExp): number {
  let total = 0;
  for (const line of text.split("\n")) if (pattern.test(line)) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  return total;
}

async function scrape(url: string): Promise<string> {
  return (await fetch(url, { signal: AbortSignal.timeout(5_000) })).text();
}

/** The engines' TTFT histogram totals (every rank of every engine pod answering on :8000; the elastic followers answer nothing). */
async function engineTtft(deploymentId: string): Promise<{ sum: number; count: number }> {
  const bodies = await Promise.all((await podIps(deploymentId, "engine")).map((ip) => scrape(`http://${ip}:8000/metrics`).catch(() => "")));
  return {
    sum: bodies.reduce((s, b) => s + sumSeries(b, /^vllm:time_to_first_token_seconds_sum[{ ]/), 0),
    count: bodies.reduce((s, b) => s + sumSeries(b, /^vllm:time_to_first_token_seconds_count[{ ]/), 0),
  };
}

/**
 * Samples running + waiting per DP rank (each engine pod's `engine` label) every 500 ms until
 * stopped; returns the mean of each rank, ordered by pod address and rank: how evenly the load spread.
 */
function sampleRankLoad(deploymentId: string) {
  const sums = new Map<string, number>();
  let samples = 0;
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      const ips = await podIps(deploymentId, "engine").catch(() => []);
      const bodies = await Promise.all(ips.map(async (ip) => [ip, await scrape(`http://${ip}:8000/metrics`).catch(() => "")] as const));
      for (const [ip, body] of bodies) {
        for (const m of body.matchAll(/^vllm:num_requests_(?:running|waiting)\{[^}]*engine="(\d+)"[^}]*\} (\S+)/gm)) {
          const key = `${ip.padStart(15)}#${m[1]!.padStart(3)}`;
          sums.set(key, (sums.get(key) ?? 0) + Number(m[2]));
        }
      }
      samples++;
      await sleep(500);
    }
  })();
  return async () => {
    sampling = false;
    await loop;
    return [...sums].sort((a, b) => a[0].localeCompare(b[0])).map(([, sum]) => round(sum / Math.max(1, samples)));
  };
}

/** The router's retries of vLLM's "currently scaling" 503, over the deployment's router pods. */
async function scalingRetries(deploymentId: string): Promise<number> {
  const bodies = await Promise.all((await podIps(deploymentId, "router")).map((ip) => scrape(`http://${ip}:8080/metrics`)));
  return bodies.reduce((s, b) => s + sumSeries(b, /^berth_router_upstream_errors_total\{[^}]*reason="scaling"/), 0);
}

// ---------------------------------------------------------------------------------------------
// Part 2 and 3: a TTFT round at concurrency 64

interface TtftRound {
  label: string;
  requests: number;
  ok: number;
  failed: number;
  errors: string[];
  ttftMs: number[];
  wallMs: number;
  promptTokens: number[];
  engineTtftMeanMs: number;
  /** Mean running + waiting per DP rank over the round. */
  rankLoad: number[];
}

async function ttftRound(label: string, deploymentId: string, endpoint: string, tag: string): Promise<TtftRound> {
  // Not counted: one short request per client, so every round starts with its connections open
  // (a first round that opens them staggers its burst and shows a lower TTFT than the rounds after).
  await closedLoop(endpoint, { clients: TTFT.concurrency, requests: TTFT.concurrency, limitMs: LIMITS.roundMs, promptTokens: 16, outputTokens: 4, tag: `${tag}-warm` }).done;
  const before = await engineTtft(deploymentId);
  const started = performance.now();
  const stopSampling = sampleRankLoad(deploymentId);
  const loop = closedLoop(endpoint, { clients: TTFT.concurrency, requests: TTFT.requests, limitMs: LIMITS.roundMs, promptTokens: TTFT.promptTokens, outputTokens: TTFT.outputTokens, tag });
  const records = await loop.done;
  const wallMs = performance.now() - started;
  const rankLoad = await stopSampling();
  await sleep(1_000); // the engines' histograms take the last requests in
  const after = await engineTtft(deploymentId);
  const ok = records.filter((r) => r.ok);
  const result: TtftRound = {
    label,
    requests: records.length,
    ok: ok.length,
    failed: records.length - ok.length,
    errors: [...new Set(records.filter((r) => !r.ok).map((r) => r.error!))].slice(0, 5),
    ttftMs: ok.map((r) => r.ttftMs!).sort((a, b) => a - b),
    wallMs,
    promptTokens: [...new Set(ok.map((r) => r.promptTokens!))],
    engineTtftMeanMs: after.count > before.count ? ((after.sum - before.sum) / (after.count - before.count)) * 1000 : NaN,
    rankLoad,
  };
  log(
    `${label}: ${result.ok}/${result.requests} ok, TTFT p50 ${round(percentile(result.ttftMs, 50))} ms, engine mean ${round(result.engineTtftMeanMs)} ms, ` +
      `load per rank ${rankLoad.join(" / ")}, ${round(wallMs / 1000)} s`,
  );
  return result;
}

type Summary = ReturnType<typeof summary>;

function summary(rounds: TtftRound[]) {
  const all = rounds.flatMap((r) => r.ttftMs).sort((a, b) => a - b);
  const counted = rounds.reduce((s, r) => s + r.ok, 0);
  return {
    rounds: rounds.length,
    requests: rounds.reduce((s, r) => s + r.requests, 0),
    failed: rounds.reduce((s, r) => s + r.failed, 0),
    p50Ms: round(percentile(all, 50)),
    p90Ms: round(percentile(all, 90)),
    perRoundP50Ms: rounds.map((r) => round(percentile(r.ttftMs, 50))),
    engineTtftMeanMs: round(rounds.reduce((s, r) => s + r.engineTtftMeanMs * r.ok, 0) / counted),
  };
}

// ---------------------------------------------------------------------------------------------
// Part 1: a resize under a live stream

interface OperationView {
  id: string;
  phase: string;
  step: string;
  message: string;
  startedAt: string;
  finishedAt?: string;
  steps: Array<{ name: string; startedAt: string; finishedAt?: string }>;
  result?: { calls?: Array<Record<string, unknown>>; proven?: Record<string, number> };
  error?: { reason: string; message: string };
}

interface ResizeResult {
  from: number;
  to: number;
  operationId: string;
  phase: string;
  /** POST sent → the first poll that saw Succeeded. */
  postToSucceededMs: number;
  /** The operation's own startedAt → finishedAt (server clock). */
  operationMs: number;
  steps: Array<{ name: string; ms: number }>;
  calls: Array<Record<string, unknown>>;
  proven: Record<string, number>;
  /** Requests whose lifetime overlaps the window. */
  window: { sent: number; ok: number; failed: number; errors: string[]; longestRequestMs: number; routerScalingRetries: number };
  stream: { sent: number; ok: number; failed: number; seconds: number };
  message: string;
}

const ms = (a: string, b?: string) => (b ? Date.parse(b) - Date.parse(a) : NaN);

async function resizeUnderStream(deploymentId: string, endpoint: string, from: number, to: number): Promise<ResizeResult> {
  const stream = closedLoop(endpoint, { clients: STREAM.clients, requests: 1_000_000, limitMs: LIMITS.operationMs + LIMITS.streamWarmMs + 30_000, promptTokens: STREAM.promptTokens, outputTokens: STREAM.outputTokens, tag: `stream-${from}-${to}` });
  const streamStarted = performance.now();
  try {
    await eventually("the stream flowing", async () => stream.records.length >= 2 * STREAM.clients, LIMITS.streamWarmMs);
    const retriesBefore = await scalingRetries(deploymentId);
    const postAt = performance.now();
    const posted = await world.call("POST", `/v1/deployments/${deploymentId}/roles/ep/resize`, { width: to });
    if (posted.status !== 202) throw new Error(`resize ${from} → ${to}: ${posted.status} ${JSON.stringify(posted.body)}`);
    const opId: string = posted.body.id;
    const op = await eventually<OperationView>(
      `operation ${opId} (${from} → ${to}) to end`,
      async () => {
        const { body } = await world.call("GET", `/v1/operations/${opId}`);
        return ["Succeeded", "Failed", "Aborted"].includes(body?.phase) ? body : undefined;
      },
      LIMITS.operationMs,
      100,
    );
    const endAt = performance.now();
    await sleep(LIMITS.streamAfterMs);
    const records = await stream.stop();
    const retries = (await scalingRetries(deploymentId)) - retriesBefore;
    const inWindow = records.filter((r) => r.startedAt < endAt && r.endedAt > postAt);
    const failed = inWindow.filter((r) => !r.ok);
    const result: ResizeResult = {
      from,
      to,
      operationId: opId,
      phase: op.phase,
      postToSucceededMs: Math.round(endAt - postAt),
      operationMs: ms(op.startedAt, op.finishedAt),
      steps: op.steps.map((s) => ({ name: s.name, ms: ms(s.startedAt, s.finishedAt) })),
      calls: op.result?.calls ?? [],
      proven: op.result?.proven ?? {},
      window: {
        sent: inWindow.length,
        ok: inWindow.length - failed.length,
        failed: failed.length,
        errors: [...new Set(failed.map((r) => r.error!))].slice(0, 5),
        longestRequestMs: Math.round(Math.max(0, ...inWindow.map((r) => r.endedAt - r.startedAt))),
        routerScalingRetries: retries,
      },
      stream: { sent: records.length, ok: records.filter((r) => r.ok).length, failed: records.filter((r) => !r.ok).length, seconds: round((performance.now() - streamStarted) / 1000) },
      message: op.error ? `${op.error.reason}: ${op.error.message}` : op.message,
    };
    log(`resize ${from} → ${to}: ${op.phase} in ${result.postToSucceededMs} ms; ${result.window.ok}/${result.window.sent} requests ok in the window`);
    return result;
  } finally {
    await stream.stop();
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * Ready, and the address of its router pod. Clients go to the router pod itself rather than to
 * status.endpoint: the simulated cluster's Service proxy is a userland TCP proxy in this very
 * process (a real cluster's is in the kernel), and it would add its work to the clock it is timed on.
 */
async function createReady(name: string, spec: object, check: (body: any) => boolean = () => true): Promise<{ id: string; endpoint: string }> {
  const id = await world.create(name, spec);
  await world.readyDeployment(id, { check, timeoutMs: LIMITS.readyMs, what: `${name} Ready` });
  const routers = await podIps(id, "router");
  if (routers.length !== 1) throw new Error(`${name}: ${routers.length} router pods, expected 1`);
  return { id, endpoint: `http://${routers[0]}:8080` };
}

async function remove(id: string): Promise<void> {
  const res = await world.call("DELETE", `/v1/deployments/${id}`);
  if (res.status >= 300) throw new Error(`delete ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  await eventually(`${id}'s pods gone`, async () => (await world.kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id}` })).items.length === 0, LIMITS.deleteMs, 500);
}

const servingRanks = (width: number) => (body: any) => body.status.roles[0].ranks?.serving === width;

async function main(): Promise<void> {
  const loadStart = loadavg();
  const benchStarted = performance.now();
  world = await startAgentWorld({ gpus: 16, simEngineFlags: null, project: "elastic-bench" });
  // Every wait is bounded; this bounds their sum, and stops the world's processes on the way out.
  const abandon = (why: string, code: number) => {
    log(why);
    void world.stop().finally(() => process.exit(code));
  };
  const watchdog = setTimeout(() => abandon(`over ${LIMITS.wholeBenchMs / 60_000} min: giving up`, 2), LIMITS.wholeBenchMs);
  process.once("SIGINT", () => abandon("interrupted", 130));
  const agentWarnings: string[] = [];
  try {
    world.startAgent({
      config: DEFAULT_AGENT_CONFIG,
      logger: { info: () => {}, warn: (msg, data) => void agentWarnings.push(`${msg} ${JSON.stringify(data ?? {})}`.slice(0, 300)) },
    });

    // Parts 1 and 2 on one elastic deployment, CYCLES times: TTFT at 2, grow, TTFT at 4, shrink,
    // … TTFT at 2 (so every width-4 round has a width-2 round on either side).
    const elastic = await createReady("dsv2", SPECS.elastic, servingRanks(2));
    log(`elastic deployment Ready at width 2 (${round((performance.now() - benchStarted) / 1000)} s)`);
    const width2: TtftRound[] = [await ttftRound("width 2, round 1", elastic.id, elastic.endpoint, "w2-1")];
    const width4: TtftRound[] = [];
    const resizes: ResizeResult[] = [];
    const resizeTo = async (from: number, to: number) => {
      const result = await resizeUnderStream(elastic.id, elastic.endpoint, from, to);
      resizes.push(result);
      if (result.phase !== "Succeeded") throw new Error(`the resize ${from} → ${to} ended ${result.phase}: ${result.message}`);
      await world.readyDeployment(elastic.id, { check: servingRanks(to), timeoutMs: LIMITS.readyMs, what: `serving ${to} ranks` });
    };
    for (let k = 1; k <= CYCLES; k++) {
      await resizeTo(2, 4);
      width4.push(await ttftRound(`width 4, round ${k}`, elastic.id, elastic.endpoint, `w4-${k}`));
      await resizeTo(4, 2);
      width2.push(await ttftRound(`width 2, round ${k + 1}`, elastic.id, elastic.endpoint, `w2-${k + 1}`));
    }
    await remove(elastic.id);

    // Part 3: external DP 4 × TP2 against one TP8 instance, side by side, rounds interleaved.
    const [xdp, tp8] = await Promise.all([createReady("xdp", SPECS.xdp, servingRanks(4)), createReady("tp8", SPECS.tp8)]);
    const xdpRounds: TtftRound[] = [];
    const tp8Rounds: TtftRound[] = [];
    for (let k = 1; k <= XDP_ROUNDS; k++) {
      xdpRounds.push(await ttftRound(`external DP 4 × TP2, round ${k}`, xdp.id, xdp.endpoint, `xdp${k}`));
      tp8Rounds.push(await ttftRound(`TP8, round ${k}`, tp8.id, tp8.endpoint, `tp8${k}`));
    }
    await Promise.all([remove(xdp.id), remove(tp8.id)]);

    const w2 = summary(width2);
    const w4 = summary(width4);
    const x = summary(xdpRounds);
    const t = summary(tp8Rounds);
    // "× lower": the baseline's figure over the other's (width 2 over width 4, TP8 over external DP).
    const ratios = (base: Summary, other: Summary) => ({ p50: round(base.p50Ms / other.p50Ms, 2), engineMean: round(base.engineTtftMeanMs / other.engineTtftMeanMs, 2) });
    const elasticRatio = ratios(w2, w4);
    const xdpRatio = ratios(t, x);
    const promptTokens = [...new Set([...width2, ...width4, ...xdpRounds, ...tp8Rounds].flatMap((r) => r.promptTokens))];
    const seconds = (n: number) => `${round(n / 1000, 1)} s`;

    console.log(`\nSIMULATED figures (berth sim-engine, default latency profile; not GPU measurements). ${MOE}, ${GPU} (simulated).`);
    printTable([
      ["resize under 16 streaming clients", "ok / sent in window", "failed", "POST → Succeeded", "steps other than Scaling", "router 503 retries", "longest request", "ok / sent, whole stream"],
      ...resizes.map((r) => [
        `${r.from} → ${r.to}`,
        `${r.window.ok}/${r.window.sent}`,
        String(r.window.failed),
        seconds(r.postToSucceededMs),
        seconds(r.steps.filter((step) => step.name !== "Scaling").reduce((sum, step) => sum + step.ms, 0)),
        String(r.window.routerScalingRetries),
        seconds(r.window.longestRequestMs),
        `${r.stream.ok}/${r.stream.sent} in ${r.stream.seconds} s`,
      ]),
      ["GPUStack Operator 2 → 4 (published)", `${GPUSTACK.growUnderLoad.ok}/${GPUSTACK.growUnderLoad.sent}`, "0", "not published", "", "", "", ""],
    ]);
    for (const r of resizes) {
      printTable([[`steps ${r.from} → ${r.to}`, "ms"], ...r.steps.map((s) => [s.name, String(s.ms)])]);
    }
    const ttftRow = (name: string, m: Summary, ratio?: { p50: number; engineMean: number }, gpustack: [number, string?] = [NaN]) => [
      name,
      String(m.requests),
      String(m.failed),
      String(m.p50Ms),
      String(m.p90Ms),
      m.perRoundP50Ms.join(" / "),
      String(m.engineTtftMeanMs),
      ratio ? `${ratio.p50}× lower` : "",
      ratio ? `${ratio.engineMean}× lower` : "",
      String(gpustack[0]),
      gpustack[1] ?? "",
    ];
    printTable([
      [`TTFT at concurrency ${TTFT.concurrency}, ${TTFT.promptTokens} in / ${TTFT.outputTokens} out`, "requests", "failed", "p50 ms", "p90 ms", "per-round p50", "engine mean ms", "ratio p50", "ratio engine mean", "GPUStack p50 ms", "GPUStack ratio"],
      ttftRow(`elastic width 2 (${w2.rounds} rounds)`, w2, undefined, [GPUSTACK.elasticTtftP50Ms.width2]),
      ttftRow(`elastic width 4 (${w4.rounds} rounds)`, w4, elasticRatio, [GPUSTACK.elasticTtftP50Ms.width4, "2.50× lower"]),
      ttftRow(`TP8, one instance (${t.rounds} rounds)`, t, undefined, [GPUSTACK.externalDpTtftP50Ms.tp8]),
      ttftRow(`external DP 4 × TP2 (${x.rounds} rounds)`, x, xdpRatio, [GPUSTACK.externalDpTtftP50Ms.xdp4tp2, "2.58× lower"]),
    ]);
    console.log(`\nprompt tokens seen: ${promptTokens.join(", ")}; agent warnings: ${agentWarnings.length}`);
    if (QUICK) {
      log("--quick: results not written");
      return;
    }
    const rounds = (list: TtftRound[]) => list.map(({ ttftMs, promptTokens: _, ...r }) => ({ ...r, wallMs: Math.round(r.wallMs), p50Ms: round(percentile(ttftMs, 50)), p90Ms: round(percentile(ttftMs, 90)), engineTtftMeanMs: round(r.engineTtftMeanMs) }));
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      new URL("./results/elastic.json", import.meta.url),
      JSON.stringify(
        {
          benchmark: "elastic",
          simulated: true,
          date: new Date().toISOString(),
          wallSeconds: round((performance.now() - benchStarted) / 1000),
          machine: { node: process.version, cpus: availableParallelism(), cpu: cpus()[0]?.model.trim(), loadAverageAtStart: loadStart.map((l) => round(l, 2)), loadAverageAtEnd: loadavg().map((l) => round(l, 2)) },
          settings: {
            model: MOE,
            engine: `vllm (berth sim-engine, default latency profile 1×), image ${ENGINE_IMAGE}, engine defaults (max-num-seqs 1024, max-num-batched-tokens 8192 on H100)`,
            cluster: `one simulated node, 16 × ${GPU}, time scale 0.1 (probes and backoffs), berth serve on PGlite, the agent in the bench process on DEFAULT_AGENT_CONFIG and the default resize config`,
            router: "builtin, least_load, one pod; clients send to the router pod's address (the simulated Service proxy is a userland TCP proxy inside the bench process, timed on the same clock)",
            specs: SPECS,
            simElasticScaleSeconds: SCALE_SECONDS,
            stream: { ...STREAM, note: "closed loop, streaming, ignore_eos; a request counts for a resize when its lifetime overlaps POST → the poll that saw Succeeded (100 ms polls); failed = non-200, no [DONE], an error event, a short answer or a network error" },
            ttft: { ...TTFT, note: "closed loop as vllm bench serve --max-concurrency: every request counted, the first wave included, after an uncounted warm-up of one short request (16 in / 4 out) per client; TTFT = POST sent → first chunk with content, at the client; engine mean = Δvllm:time_to_first_token_seconds sum ÷ count over the round" },
          },
          gpustack: GPUSTACK,
          resize: resizes,
          ttft: {
            elastic: { width2: w2, width4: w4, ratio: elasticRatio, rounds: rounds([...width2, ...width4]) },
            externalDp: { xdp4tp2: x, tp8: t, ratio: xdpRatio, rounds: rounds([...xdpRounds, ...tp8Rounds]) },
            promptTokens,
          },
          agentWarnings: { count: agentWarnings.length, first: agentWarnings.slice(0, 10) },
        },
        null,
        2,
      ) + "\n",
    );
    log("wrote bench/results/elastic.json");
  } finally {
    clearTimeout(watchdog);
    await world.stop().catch((error) => log(`stopping: ${error}`));
  }
}

await main();
// Keep-alive sockets to the stopped routers would hold the loop open.
process.exit(0);

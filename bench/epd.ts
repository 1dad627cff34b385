// Encode/prefill/decode against aggregated serving on a multimodal workload: `npm run bench:epd [-- --quick]`.
// Simulated figures: a real `berth serve`, the simulated cluster (one node, 8 × H100) whose pods are
// engine-simulator and router processes on loopback, and the agent in this process
// (test/agent/e2e-support.ts builds the world, as the agent's end-to-end tests do). Engines run the
// simulator's default latency profile (1×: model time is wall time). Qwen2.5-VL-7B on vLLM; both
// deployments behind the builtin router, Ready side by side: "agg" one server pod (1 GPU), "epd" one
// encode, one prefill and one decode pod (3 GPUs) sharing the claim `<dep>-ec-cache`.
//
// Workloads, each at concurrency 8 (closed loop, streaming, ignore_eos, 128 output tokens), rounds
// interleaved agg, epd, agg, epd:
//   large-4k / large-8k  every request a new image of ≈ 4096 / 8100 placeholder tokens: TTFT p50, ITL p99
//   repeated             every request the same ≈ 4096-token image: TTFT p50
//   small                a new 224 × 224 image (64 tokens) per request: TTFT p50
// ITL = gaps between content chunks at the client (the first token excluded). Ratios agg ÷ epd are
// measured in the same run; the machine is shared (2 cores) and its load is recorded. GPUStack's
// published H100 figures stand beside them. Prints a table, writes bench/results/epd.json.
import { availableParallelism, cpus, loadavg } from "node:os";
import { mkdir, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { type AgentWorld, eventually, startAgentWorld } from "../test/agent/e2e-support.ts";
import { percentile, round } from "./support/stats.ts";
import { printTable } from "./support/table.ts";
import { pngDataUrl } from "../test/support/images.ts";

const { values: flags } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
const QUICK = flags.quick;

const MODEL = "Qwen/Qwen2.5-VL-7B-Instruct";
const NS = "berth-epd-bench";
const CONCURRENCY = 8;
const OUTPUT_TOKENS = 128;
const REQUESTS_PER_ROUND = QUICK ? 8 : 24;
const ROUNDS = QUICK ? 1 : 2;
const LIMITS = { readyMs: 180_000, requestMs: 120_000, wholeBenchMs: 20 * 60_000 };

/** GPUStack Operator's EPD walkthrough (v0.11.2), which reports its H100 benchmark. */
const GPUSTACK = {
  source: "https://docs.gpustack.ai/gpustack-operator/v0.11.2/docs/walkthroughs/model-deployment/encode-prefill-decode/",
  hardware: "H100; Qwen2.5-VL-7B; aggregated 1 GPU vs EPD 3 GPUs; NIXL encoder transfer",
  itlP99Better: "15.1×–21.8× at 4k/8k, concurrency 8",
  repeatedImageTtftP50Better: "5.9× at concurrency 8",
  smallPrompt: "small-prompt TTFT often favoured aggregated",
};

const engine = { name: "vllm", image: "vllm/vllm-openai:v0.11.0" };
const router = { kind: "builtin", policy: "least_load" };
const SPECS = {
  agg: { model: { name: MODEL }, engine, router, roles: [{ name: "main", resources: { gpus: 1 } }] },
  epd: {
    model: { name: MODEL },
    engine,
    router,
    roles: [
      { name: "encode", kind: "encode", resources: { gpus: 1 } },
      { name: "prefill", kind: "prefill", resources: { gpus: 1 } },
      { name: "decode", kind: "decode", resources: { gpus: 1 } },
    ],
  },
};
const WORKLOADS = [
  { name: "large-4k", side: 1792, repeated: false },
  { name: "large-8k", side: 2520, repeated: false },
  { name: "repeated", side: 1792, repeated: true },
  { name: "small", side: 224, repeated: false },
] as const;

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

const png = (side: number, salt: number) => pngDataUrl(side, side, salt);

interface Sample {
  ttftMs: number;
  gapsMs: number[];
}

async function streamOne(endpoint: string, image: string): Promise<Sample> {
  const sent = performance.now();
  const res = await fetch(`${endpoint}/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: [{ type: "text", text: "Describe the picture." }, { type: "image_url", image_url: { url: image } }] }],
      max_tokens: OUTPUT_TOKENS,
      ignore_eos: true,
      stream: true,
    }),
    signal: AbortSignal.timeout(LIMITS.requestMs),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let last: number | undefined;
  let ttftMs = Number.NaN;
  const gapsMs: number[] = [];
  let done = false;
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) break;
    buffer += decoder.decode(chunk.value, { stream: true });
    let split: number;
    while ((split = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, split);
      buffer = buffer.slice(split + 2);
      if (event === "data: [DONE]") done = true;
      else if (/"content":"[^"]/.test(event)) {
        const now = performance.now();
        if (last === undefined) ttftMs = now - sent;
        else gapsMs.push(now - last);
        last = now;
      }
    }
  }
  if (!done) throw new Error("stream ended without [DONE]");
  return { ttftMs, gapsMs };
}

/** `REQUESTS_PER_ROUND` requests, `CONCURRENCY` at a time. */
async function runRound(endpoint: string, images: () => string): Promise<Sample[]> {
  const samples: Sample[] = [];
  let left = REQUESTS_PER_ROUND;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) samples.push(await streamOne(endpoint, images()));
    }),
  );
  return samples;
}

async function routerAddress(world: AgentWorld, id: string): Promise<string> {
  return eventually(`${id}'s router pod`, async () => {
    const pods = await world.kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/component=router` });
    const pod = pods.items.find((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    return pod ? `http://${pod.status!.podIP}:8080` : undefined;
  });
}

async function main(): Promise<void> {
  const started = performance.now();
  const loadStart = loadavg();
  const world = await startAgentWorld({ project: "epd-bench", simEngineFlags: null });
  const guard = setTimeout(() => {
    log("the whole bench ran past its bound; stopping");
    void world.stop().finally(() => process.exit(1));
  }, LIMITS.wholeBenchMs);
  try {
    world.startAgent();
    const ids = { agg: await world.create("agg", SPECS.agg), epd: await world.create("epd", SPECS.epd) };
    await Promise.all(Object.values(ids).map((id) => world.readyDeployment(id, { timeoutMs: LIMITS.readyMs })));
    const endpoints = { agg: await routerAddress(world, ids.agg), epd: await routerAddress(world, ids.epd) };
    log(`ready: ${JSON.stringify(endpoints)}`);
    let salt = 1;
    // One warm-up request each, not counted.
    for (const side of ["agg", "epd"] as const) await streamOne(endpoints[side], png(224, salt++));

    const results: Record<string, Record<"agg" | "epd", Sample[]>> = {};
    for (const workload of WORKLOADS) {
      results[workload.name] = { agg: [], epd: [] };
      const fixed = png(workload.side, 999_000 + workload.side);
      for (let r = 0; r < ROUNDS; r++) {
        for (const side of ["agg", "epd"] as const) {
          const images = workload.repeated ? () => fixed : () => png(workload.side, salt++);
          if (workload.repeated && r === 0) await streamOne(endpoints[side], fixed); // the image seen once before
          results[workload.name]![side].push(...(await runRound(endpoints[side], images)));
          log(`${workload.name} ${side} round ${r + 1}/${ROUNDS} done`);
        }
      }
    }

    const summary = WORKLOADS.map(({ name }) => {
      const of = (side: "agg" | "epd") => {
        const samples = results[name]![side];
        const ttft = samples.map((s) => s.ttftMs).sort((a, b) => a - b);
        const gaps = samples.flatMap((s) => s.gapsMs).sort((a, b) => a - b);
        return { requests: samples.length, ttftP50Ms: round(percentile(ttft, 50)), ttftP90Ms: round(percentile(ttft, 90)), itlP50Ms: round(percentile(gaps, 50), 2), itlP99Ms: round(percentile(gaps, 99), 2) };
      };
      const agg = of("agg");
      const epd = of("epd");
      return { workload: name, agg, epd, ttftP50AggOverEpd: round(agg.ttftP50Ms / epd.ttftP50Ms, 2), itlP99AggOverEpd: round(agg.itlP99Ms / epd.itlP99Ms, 2) };
    });
    const published: Record<string, string> = {
      "large-4k": `ITL p99 ${GPUSTACK.itlP99Better}`,
      "large-8k": `ITL p99 ${GPUSTACK.itlP99Better}`,
      repeated: `TTFT p50 ${GPUSTACK.repeatedImageTtftP50Better}`,
      small: GPUSTACK.smallPrompt,
    };
    console.log(`\nEPD (3 GPUs) vs aggregated (1 GPU), ${MODEL}, concurrency ${CONCURRENCY}, ${OUTPUT_TOKENS} output tokens (simulated)`);
    printTable([
      ["workload", "agg TTFT p50", "epd TTFT p50", "TTFT agg/epd", "agg ITL p99", "epd ITL p99", "ITL p99 agg/epd", "GPUStack (H100)"],
      ...summary.map((s) => [s.workload, `${s.agg.ttftP50Ms} ms`, `${s.epd.ttftP50Ms} ms`, `${s.ttftP50AggOverEpd}×`, `${s.agg.itlP99Ms} ms`, `${s.epd.itlP99Ms} ms`, `${s.itlP99AggOverEpd}×`, published[s.workload]!]),
    ]);
    const loadEnd = loadavg();
    console.log(`load average ${loadStart.map((l) => round(l, 2)).join(" ")} at start, ${loadEnd.map((l) => round(l, 2)).join(" ")} at the end; ${availableParallelism()} CPUs`);
    if (QUICK) {
      log("--quick: results not written");
      return;
    }
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      new URL("./results/epd.json", import.meta.url),
      JSON.stringify(
        {
          benchmark: "epd",
          simulated: true,
          date: new Date().toISOString(),
          wallSeconds: round((performance.now() - started) / 1000),
          machine: { node: process.version, cpus: availableParallelism(), cpu: cpus()[0]?.model.trim(), loadAverageAtStart: loadStart.map((l) => round(l, 2)), loadAverageAtEnd: loadEnd.map((l) => round(l, 2)) },
          settings: {
            model: MODEL,
            engine: "vllm (berth sim-engine, default latency profile 1×), engine defaults on H100",
            cluster: "one simulated node, 8 × nvidia-h100-80gb, berth serve on PGlite, the agent in the bench process",
            router: "builtin, least_load; clients send to the router pod's address",
            specs: SPECS,
            workloads: WORKLOADS,
            concurrency: CONCURRENCY,
            outputTokens: OUTPUT_TOKENS,
            requestsPerRound: REQUESTS_PER_ROUND,
            rounds: ROUNDS,
            note: "closed loop, streaming, ignore_eos; TTFT = POST sent → first content chunk; ITL = gaps between content chunks at the client",
          },
          gpustack: GPUSTACK,
          results: summary,
        },
        null,
        2,
      ) + "\n",
    );
    log("wrote bench/results/epd.json");
  } finally {
    clearTimeout(guard);
    await world.stop();
  }
}

await main();
process.exit(0);

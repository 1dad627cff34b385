// Steady-state serving predictions built on the step-time model of perf-model.ts: TTFT, ITL and
// throughput of one engine instance at a given concurrency, aggregated (prefill and decode share
// the continuous batch) or disaggregated (prefill instances hand the KV cache to decode instances).
// Pure arithmetic; the planner and the accuracy benchmark both call it, so they cannot disagree.
import type { GpuFacts } from "./gpu-profiles.ts";
import { attendedPairs, EMPTY_STEP, kvBytesPerToken, stepTimeMs, type PerfModel } from "./perf-model.ts";

export type ServingEngine = "vllm" | "sglang";

export interface Workload {
  inputTokens: number;
  outputTokens: number;
}

export interface BatchLimits {
  /** Prompt tokens one step may compute (vLLM `--max-num-batched-tokens`, SGLang `--chunked-prefill-size`). */
  maxBatchedTokens: number;
  /** Sequences one step may hold (vLLM `--max-num-seqs`, SGLang `--max-running-requests`). */
  maxRunning: number;
}

/**
 * The engines' own defaults, as the simulator uses them (src/sim/runtime.ts): vLLM's API server takes
 * 8192 tokens / 1024 sequences on ≥ 70 GiB GPUs other than A100, else 2048 / 256
 * (vllm/engine/arg_utils.py get_batch_defaults); SGLang 16384 / 256.
 */
export function engineBatchLimits(engine: ServingEngine, gpu: GpuFacts): BatchLimits {
  if (engine === "sglang") return { maxBatchedTokens: 16384, maxRunning: 256 };
  const big = gpu.memoryGb >= 70 && !gpu.id.includes("a100");
  return big ? { maxBatchedTokens: 8192, maxRunning: 1024 } : { maxBatchedTokens: 2048, maxRunning: 256 };
}

export interface ServingEstimate {
  concurrency: number;
  ttftMs: number;
  itlMs: number;
  /** TTFT + (output − 1) × ITL. */
  e2eMs: number;
  /** Output tokens per second of the whole instance (concurrency × 1000 / ITL, less prefill stalls). */
  outputTokensPerSecond: number;
  /** Requests per second the instance completes at this concurrency (Little's law: c ÷ E2E). */
  requestsPerSecond: number;
  /** KV tokens the concurrency needs (every sequence at its full length) against what the cache holds. */
  kvTokensNeeded: number;
  kvFits: boolean;
}

/** Mean context a decoding sequence attends to over its life: the prompt plus half the output. */
function meanDecodeContext(w: Workload): number {
  return w.inputTokens + w.outputTokens / 2;
}

/** Prefill steps one prompt needs under a token budget (chunked prefill). */
function chunksFor(w: Workload, limits: BatchLimits): number {
  return Math.max(1, Math.ceil(w.inputTokens / limits.maxBatchedTokens));
}

/**
 * How many other prompts a new one finds ahead of it, per concurrent request. Fixed-length
 * benchmarks (every request I in, O out) keep requests partly in step: they finish together and
 * their replacements arrive together, so the queue ahead of a prompt grows with concurrency rather
 * than with utilisation as in a Poisson queue. Fitted once (bench/planner.ts, calibration set).
 */
export interface ServingTuning {
  /** Prompts found queued ahead, per concurrent request (see above). */
  queueFactor: number;
  /** What a first token costs beyond the engine's steps: HTTP, tokenization, scheduling, detokenization. */
  ttftOverheadMs: number;
  /**
   * Host time per model layer of a step that carries a prompt chunk, by engine. Decode steps
   * replay CUDA graphs; prompt chunks do not (their token count varies), so every layer's kernels
   * are launched from Python one by one. SGLang runs that forward eagerly; vLLM V1 runs a
   * torch.compile'd model whose fused kernels leave this cost inside `ttftOverheadMs` (0 here,
   * the Llama calibration cannot separate the two).
   */
  prefillLayerDispatchMs: Readonly<Record<ServingEngine, number>>;
}

/**
 * Fitted once, by grid search with computeEfficiency, to NVIDIA AIConfigurator's silicon sweep of
 * vLLM 0.x serving Llama-3.1-70B FP8 on H100 (TP 2/4/8, concurrency 4–64, 1k/8k prompts; 45 rows;
 * bench/planner.ts "calibration"): median error 4.5% there, the held-out table is in README.
 */
export const DEFAULT_SERVING_TUNING: Readonly<ServingTuning> = { queueFactor: 0.05, ttftOverheadMs: 30, prefillLayerDispatchMs: { vllm: 0, sglang: 2 } };

/** The host-side launch cost of one prompt-carrying step (see ServingTuning). */
export function prefillDispatchMs(perf: PerfModel, engine: ServingEngine, tuning: ServingTuning = DEFAULT_SERVING_TUNING): number {
  return perf.model.layers * (tuning.prefillLayerDispatchMs?.[engine] ?? 0);
}

/**
 * Aggregated serving at concurrency c (a closed loop: a finished request is replaced at once).
 *
 * ITL is the mean gap between tokens over a request's life. Every step decodes the c running
 * sequences (mean context I + O/2). During one life of O steps the c − 1 other requests each bring
 * their prompt once, in chunks of at most the token budget: vLLM runs those chunks inside decode
 * steps (chunked prefill), so a fraction f of steps is a mixed step; SGLang by default runs a
 * prefill batch on its own while decodes wait, so those steps add their whole length. Treating
 * the prefill as whole chunks, not a few tokens per step, matters for MoE models: a chunk touches
 * every expert, a decode step of a small batch only some.
 *
 * TTFT: half a running step, then the prompt's own chunks (each beside the c − 1 decodes), after
 * the prompts queued ahead of it: `queueFactor` × (c − 1) of them on average; plus the serving
 * stack's fixed cost of a first token.
 */
export function estimateAggregated(
  perf: PerfModel,
  w: Workload,
  concurrency: number,
  limits: BatchLimits,
  engine: ServingEngine = "vllm",
  tuning: ServingTuning = DEFAULT_SERVING_TUNING,
): ServingEstimate {
  const c = Math.max(1, concurrency);
  const chunks = chunksFor(w, limits);
  const context = meanDecodeContext(w);
  const lifeSteps = w.outputTokens + chunks;
  const decodeStep = stepTimeMs(perf, { ...EMPTY_STEP, decodeSequences: c, decodeContextTokens: c * context });
  // Prompt tokens per prefill-carrying step: one chunk, or more when prompts outnumber steps.
  const chunkTokens = Math.min(limits.maxBatchedTokens, Math.max(Math.min(w.inputTokens, limits.maxBatchedTokens), ((c - 1) * w.inputTokens) / lifeSteps));
  const prefillSteps = ((c - 1) * w.inputTokens) / chunkTokens;
  const share = Math.min(1, prefillSteps / lifeSteps);
  const chunkWork = {
    prefillTokens: chunkTokens,
    prefillSequences: Math.max(1, chunkTokens / w.inputTokens),
    prefillAttention: (chunkTokens * Math.min(w.inputTokens, chunkTokens)) / 2,
    prefillContextTokens: 0,
  };
  const dispatch = prefillDispatchMs(perf, engine, tuning);
  const itlMs =
    engine === "sglang"
      ? decodeStep + (prefillSteps / lifeSteps) * (stepTimeMs(perf, { ...EMPTY_STEP, ...chunkWork }) + dispatch)
      : (1 - share) * decodeStep + share * (stepTimeMs(perf, { ...chunkWork, decodeSequences: c, decodeContextTokens: c * context }) + dispatch);
  const chunk = Math.min(w.inputTokens, limits.maxBatchedTokens);
  let ownPrefill = 0;
  for (let done = 0; done < w.inputTokens; done += chunk) {
    const size = Math.min(chunk, w.inputTokens - done);
    const others = engine === "sglang" ? 0 : c - 1;
    ownPrefill += dispatch + stepTimeMs(perf, {
      prefillTokens: size,
      prefillSequences: 1,
      prefillAttention: attendedPairs(done, size),
      prefillContextTokens: done,
      decodeSequences: others,
      decodeContextTokens: others * context,
    });
  }
  const ttftMs = tuning.ttftOverheadMs + decodeStep / 2 + ownPrefill * (1 + tuning.queueFactor * (c - 1));
  const e2eMs = ttftMs + (w.outputTokens - 1) * itlMs;
  const kvTokensNeeded = c * (w.inputTokens + w.outputTokens);
  return {
    concurrency: c,
    ttftMs,
    itlMs,
    e2eMs,
    outputTokensPerSecond: (c * w.outputTokens * 1000) / e2eMs,
    requestsPerSecond: (c * 1000) / e2eMs,
    kvTokensNeeded,
    kvFits: kvTokensNeeded <= perf.kvCapacityTokens,
  };
}

/** One prompt prefilled alone on a prefill instance, ms (chunked under the budget). */
export function isolatedPrefillMs(perf: PerfModel, w: Workload, limits: BatchLimits): number {
  const chunk = Math.min(w.inputTokens, limits.maxBatchedTokens);
  let total = 0;
  for (let done = 0; done < w.inputTokens; done += chunk) {
    const size = Math.min(chunk, w.inputTokens - done);
    total += stepTimeMs(perf, { ...EMPTY_STEP, prefillTokens: size, prefillSequences: 1, prefillAttention: attendedPairs(done, size), prefillContextTokens: done });
  }
  return total;
}

export interface PrefillEstimate {
  /** Service time of one prompt, ms. */
  serviceMs: number;
  /** KV handoff to the decode instance, ms. */
  transferMs: number;
  /** TTFT at utilisation u: M/D/1 wait u / (2(1 − u)) service times, plus service and handoff. */
  ttftAt(utilisation: number): number;
  /** Prompts per second one instance completes at full utilisation. */
  capacityRps: number;
}

/**
 * A prefill-only instance. Short prompts are batched up to the token budget per step, so its
 * capacity is budget-sized steps; the KV cache of the prompt then crosses the network to a decode
 * instance at `transferGBs` (one RDMA NIC per GPU group: an assumption, stated in the planner).
 */
export function estimatePrefill(perf: PerfModel, w: Workload, limits: BatchLimits, transferGBs: number): PrefillEstimate {
  const serviceMs = isolatedPrefillMs(perf, w, limits);
  const perStep = Math.max(1, Math.floor(limits.maxBatchedTokens / w.inputTokens));
  const batchedMs = perStep > 1
    ? stepTimeMs(perf, { ...EMPTY_STEP, prefillTokens: perStep * w.inputTokens, prefillSequences: perStep, prefillAttention: perStep * attendedPairs(0, w.inputTokens) })
    : serviceMs;
  const transferMs = ((w.inputTokens * kvBytesPerToken(perf.model)) / (transferGBs * 1e9)) * 1e3;
  return {
    serviceMs,
    transferMs,
    ttftAt: (u) => serviceMs * (1 + Math.min(u, 0.99) / (2 * (1 - Math.min(u, 0.99)))) + transferMs,
    capacityRps: (perStep * 1000) / batchedMs,
  };
}

/** A decode-only instance at concurrency c: every step decodes c sequences at mean context, no prefill tax. */
export function estimateDecode(perf: PerfModel, w: Workload, concurrency: number): { itlMs: number; outputTokensPerSecond: number; kvFits: boolean } {
  const c = Math.max(1, concurrency);
  const itlMs = stepTimeMs(perf, { ...EMPTY_STEP, decodeSequences: c, decodeContextTokens: c * meanDecodeContext(w) });
  return { itlMs, outputTokensPerSecond: (c * 1000) / itlMs, kvFits: c * (w.inputTokens + w.outputTokens) <= perf.kvCapacityTokens };
}

// A roofline latency model of one LLM serving engine (one data-parallel rank = one TP×PP group of
// GPUs): KV-cache capacity from memory, and the duration of one continuous-batching step from the
// work in it. Pure arithmetic on model facts (model-sizes.ts) and GPU facts (gpu-profiles.ts), so the
// engine simulator and deployment sizing compute the same numbers.
import type { GpuFacts } from "./gpu-profiles.ts";
import type { ModelFacts } from "./model-sizes.ts";

/**
 * The factors that turn peak hardware numbers into what vLLM achieves. One set for every GPU:
 * they were fitted to vLLM's own CI figures on three GPUs (below) and extrapolate to the others
 * through each GPU's bandwidth and FLOPS alone.
 *
 * Evidence (vLLM, Llama-3.1-8B BF16 unless noted):
 * | figure | published | this model |
 * |---|---|---|
 * | `latency_llama8B_tp1`, H100, batch 8, 32 in / 128 out, mean latency | 997.5 ms — vLLM CI "Performance Benchmark" build 9555, https://buildkite.com/vllm/performance-benchmark/builds/9555 | ≈ 974 ms (−2%) |
 * | same test, A100-SXM4-80GB | 1579.3 ms — build 9523, https://buildkite.com/vllm/performance-benchmark/builds/9523 | ≈ 1517 ms (−4%) |
 * | same test, H200 | 833.4 ms — build 9515, https://buildkite.com/vllm/performance-benchmark/builds/9515 | ≈ 727 ms (−13%) |
 * | `latency_llama70B_tp4`, H100 (Llama-3-70B, TP 4) | 2444.5 ms — build 9555 | ≈ 2262 ms (−7%) |
 * | `latency_mixtral8x7B_tp2`, H100 (MoE, TP 2) | 2327.0 ms — build 9555 | ≈ 2475 ms (+6%) |
 * | decode at concurrency 1, A100 40GB, 1024 in / 128 out | ≈ 75 tok/s, "about 77% of the memory-bandwidth ceiling" — J. Musgrave, "vLLM throughput-latency sweep on NVIDIA A100", https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on | ≈ 67 tok/s (−11%) |
 * | TPOT p50 at concurrency 1, H100 (vLLM 0.21) | 6.48 ms — InferenceBench "Recipe: concurrency sweep", https://yobitelcomm.github.io/bench/recipes/concurrency-sweep/ | ≈ 7.4 ms (+15%) |
 *
 * - `memoryEfficiency` 0.75: the fraction of peak HBM bandwidth a decode step streams weights and
 *   KV at (Musgrave measures 77% at batch 1 on A100).
 * - `stepOverheadMs` 1.0: the per-step fixed cost (scheduling, sampling, kernel launches) that makes
 *   the fast GPUs land above a pure bandwidth roofline (H200 would otherwise be 25% too fast).
 * - `perSequenceOverheadMs` 0.02: per-sequence bookkeeping in a step, so a step always grows with
 *   the batch even before KV reads or compute show it.
 * - `computeEfficiency` 0.5: model-FLOPs utilisation of prefill (compute-bound matmuls with
 *   FlashAttention). Confirmed by a grid fit (0.25…0.5) against NVIDIA's AIConfigurator silicon
 *   sweep of vLLM Llama-3.1-70B FP8 on H100 (45 TTFT/TPOT rows, bench/planner.ts "calibration"),
 *   which 0.5 fits best; it sets TTFT of long prompts.
 * - `tpAllReduceUs` 15: two all-reduces per layer under tensor parallelism (fitted with the 70B TP4
 *   figure above; NVLink latency-bound). Their volume is added on top at the GPU's link bandwidth
 *   (a ring all-reduce moves 2 × (tp − 1) / tp of the activations per GPU), which only matters
 *   for prefill chunks and for PCIe-only GPUs.
 * - `activationReserveGb` 2: memory the profiler keeps for activations and CUDA graphs per GPU.
 * - `moeComputeEfficiency` 0.1: the fraction of peak FP8 routed experts' grouped GEMMs reach. A
 *   prompt of n tokens gives each of E experts only about n·k/E rows (DeepSeek: 1024 tokens → 32
 *   rows per expert), with FP8 block scales, token permutation and per-expert tiles that stay
 *   mostly empty, so these GEMMs run far below a dense GEMM's rate. Fitted once in bench/planner.ts
 *   on AIConfigurator silicon rows of MoE models that the held-out set does not contain (SGLang
 *   DeepSeek-R1 1k/8k and Qwen3-235B, vLLM Qwen3-235B; all FP8 with 128×128 block scales); the
 *   bench re-runs the fit. Experts in other formats (BF16 Mixtral, MXFP4 gpt-oss) keep
 *   `computeEfficiency`: the calibration set says nothing about their kernels.
 */
export interface Calibration {
  memoryEfficiency: number;
  computeEfficiency: number;
  stepOverheadMs: number;
  perSequenceOverheadMs: number;
  tpAllReduceUs: number;
  activationReserveGb: number;
  moeComputeEfficiency: number;
}

export const DEFAULT_CALIBRATION: Readonly<Calibration> = {
  memoryEfficiency: 0.75,
  computeEfficiency: 0.5,
  stepOverheadMs: 1.0,
  perSequenceOverheadMs: 0.02,
  tpAllReduceUs: 15,
  activationReserveGb: 2,
  moeComputeEfficiency: 0.1,
};

export interface EngineShape {
  tensorParallel: number;
  pipelineParallel: number;
  /** Fraction of each GPU's memory the engine may use (vLLM `--gpu-memory-utilization`, SGLang `--mem-fraction-static`). */
  gpuMemoryUtilization: number;
  /** Tokens per KV block (vLLM `--block-size`, default 16). */
  blockSize: number;
}

export const DEFAULT_ENGINE_SHAPE: Readonly<EngineShape> = {
  tensorParallel: 1,
  pipelineParallel: 1,
  gpuMemoryUtilization: 0.9,
  blockSize: 16,
};

export interface PerfModel {
  model: ModelFacts;
  gpu: GpuFacts;
  shape: EngineShape;
  calibration: Calibration;
  /** Weight bytes each GPU holds. */
  weightBytesPerGpu: number;
  /** KV-cache bytes one token occupies on each GPU (its layers and its share of KV heads). */
  kvBytesPerTokenPerGpu: number;
  /** KV-cache bytes one token costs a step to read across the whole model, per TP rank. */
  kvBytesPerTokenRead: number;
  /** Tokens the KV cache holds (0 when the weights do not fit). */
  kvCapacityTokens: number;
  /** The same in blocks of `shape.blockSize`. */
  kvBlocks: number;
  /** Whether weights, activations and at least one block fit in memory. */
  fits: boolean;
  /** Compute-bound prefill rate of the whole TP group, tokens/s (long prompts approach it). */
  prefillTokensPerSecond: number;
}

const GIB = 1024 ** 3;

export function weightBytes(model: ModelFacts): number {
  return model.totalParamsB * 1e9 * model.dtypeBytes;
}

/**
 * KV bytes per token for the whole model. MHA/GQA: K and V for every layer and KV head. MLA
 * (DeepSeek): one compressed latent of `mlaLatentDim` (kv_lora_rank + rope dims) per layer, which
 * is why a 671B model caches less per token than an 8B one.
 */
export function kvBytesPerToken(model: ModelFacts): number {
  if (model.mlaLatentDim !== undefined) return model.layers * model.mlaLatentDim * model.kvDtypeBytes;
  return 2 * model.layers * model.kvHeads * model.headDim * model.kvDtypeBytes;
}

/** Peak dense matmul rate the model runs at on this GPU: FP8 for FP8 weights where the GPU has FP8 tensor cores. */
export function peakTflops(model: ModelFacts, gpu: GpuFacts): number {
  return model.computeDtype === "fp8" && gpu.fp8Tflops !== null ? gpu.fp8Tflops : gpu.bf16Tflops;
}

export function createPerfModel(input: {
  model: ModelFacts;
  gpu: GpuFacts;
  shape?: Partial<EngineShape>;
  calibration?: Partial<Calibration>;
}): PerfModel {
  const shape: EngineShape = { ...DEFAULT_ENGINE_SHAPE, ...input.shape };
  const calibration: Calibration = { ...DEFAULT_CALIBRATION, ...input.calibration };
  const { model, gpu } = input;
  const tp = Math.max(1, shape.tensorParallel);
  const pp = Math.max(1, shape.pipelineParallel);
  // Under TP each GPU holds ceil(kvHeads / tp) heads (heads are replicated once tp > kvHeads);
  // under PP each GPU holds layers / pp of them.
  // An MLA latent is not split by heads: every TP rank caches the whole latent.
  const headsPerGpu = Math.ceil(model.kvHeads / tp);
  const kvBytesPerTokenRead =
    model.mlaLatentDim !== undefined ? kvBytesPerToken(model) : 2 * model.layers * headsPerGpu * model.headDim * model.kvDtypeBytes;
  const kvBytesPerTokenPerGpu = kvBytesPerTokenRead / pp;
  const weightBytesPerGpu = weightBytes(model) / (tp * pp);
  const usable = gpu.memoryGb * GIB * shape.gpuMemoryUtilization;
  const free = usable - weightBytesPerGpu - calibration.activationReserveGb * GIB;
  const rawTokens = free > 0 ? Math.floor(free / kvBytesPerTokenPerGpu) : 0;
  const kvBlocks = Math.floor(rawTokens / shape.blockSize);
  return {
    model,
    gpu,
    shape,
    calibration,
    weightBytesPerGpu,
    kvBytesPerTokenPerGpu,
    kvBytesPerTokenRead,
    kvCapacityTokens: kvBlocks * shape.blockSize,
    kvBlocks,
    fits: kvBlocks > 0,
    prefillTokensPerSecond: (peakTflops(model, gpu) * 1e12 * tp * calibration.computeEfficiency) / (2 * model.activeParamsB * 1e9),
  };
}

/** The work in one continuous-batching step. */
export interface StepShape {
  /** New prompt tokens computed this step (prefill chunks). */
  prefillTokens: number;
  /** Requests with a prefill chunk in this step. */
  prefillSequences: number;
  /** Σ over the new prompt tokens of the positions they attend to (see attendedPairs). */
  prefillAttention: number;
  /** Tokens already in the cache that this step's prefill chunks read (cached prefixes, earlier chunks). */
  prefillContextTokens: number;
  /** Requests generating one token this step. */
  decodeSequences: number;
  /** Σ of the decoding requests' context lengths (KV read, and attention FLOPs, per step). */
  decodeContextTokens: number;
}

export const EMPTY_STEP: Readonly<StepShape> = {
  prefillTokens: 0,
  prefillSequences: 0,
  prefillAttention: 0,
  prefillContextTokens: 0,
  decodeSequences: 0,
  decodeContextTokens: 0,
};

/** Attention pairs of a prefill chunk of `chunk` tokens placed after `context` cached tokens. */
export function attendedPairs(context: number, chunk: number): number {
  return chunk * context + (chunk * (chunk + 1)) / 2;
}

/**
 * Fraction of a model's weights one step reads. Dense: all of them. MoE: with n tokens each
 * touching an active share a = active/total independently, 1 − (1 − a)^n — one token reads the
 * active parameters, a large batch reads nearly every expert.
 */
export function weightFractionRead(model: ModelFacts, tokens: number): number {
  if (model.activeParamsB >= model.totalParamsB) return 1;
  const share = model.activeParamsB / model.totalParamsB;
  return 1 - (1 - share) ** Math.max(1, tokens);
}

/**
 * qk_rope_head_dim of every MLA model in the catalogue (DeepSeek-V2/V3/R1 and Kimi-K2 config.json:
 * 64): the rotary part of each query/key head, beside its `headDim` (qk_nope_head_dim = v_head_dim).
 */
export const MLA_ROPE_DIM = 64;

/**
 * Routed-expert parameters, billions: `active` the ones one token uses, `total` all of them. With E
 * experts of p parameters each (all layers together) and k per token, total = dense + E·p and
 * active = dense + k·p, so p = (total − active) / (E − k). Dense models, and MoE models whose
 * expert counts are unknown (sized from a name only), have none: all their work is dense.
 */
export function routedParamsB(model: ModelFacts): { active: number; total: number } {
  const { experts, expertsPerToken: k } = model;
  if (experts === undefined || k === undefined || experts <= k || model.activeParamsB >= model.totalParamsB) return { active: 0, total: 0 };
  const perExpert = (model.totalParamsB - model.activeParamsB) / (experts - k);
  return { active: k * perExpert, total: experts * perExpert };
}

/**
 * Attention FLOPs of a step. Per layer, query head and attended (query, key) pair: QKᵀ is 2 × the
 * QK width, AV 2 × the V width. GQA/MHA: both are `headDim`. MLA decode runs absorbed in the latent
 * space (both ≈ the latent width). MLA prefill runs as ordinary multi-head attention on keys and
 * values decompressed from the latent (QK width headDim + rope, V width headDim), and cached context
 * tokens a prefill chunk reads must be decompressed first: kv_b_proj, 2 × rank × heads × 2·headDim
 * FLOPs per token and layer (the fresh tokens' up-projection is among the active parameters).
 */
function attentionFlops(model: ModelFacts, step: StepShape): number {
  const perPair = 2 * model.layers * model.queryHeads;
  if (model.mlaLatentDim === undefined) return perPair * 2 * model.headDim * (step.prefillAttention + step.decodeContextTokens);
  const rank = model.mlaLatentDim - MLA_ROPE_DIM;
  const prefill = perPair * (model.headDim + MLA_ROPE_DIM + model.headDim) * step.prefillAttention;
  const decompress = 2 * rank * model.queryHeads * 2 * model.headDim * model.layers * step.prefillContextTokens;
  const decode = perPair * 2 * model.mlaLatentDim * step.decodeContextTokens;
  return prefill + decompress + decode;
}

/**
 * Duration of one step, ms: a fixed overhead, per-sequence bookkeeping, then a roofline per kind of
 * work, each the slower of its compute and its memory traffic, plus tensor-parallel all-reduces.
 * - Dense work (attention projections, shared experts, dense MLPs, embeddings): 2 × its parameters
 *   FLOPs per token at `computeEfficiency` of the weights' matmul peak, and attention FLOPs at the
 *   same efficiency of the BF16 peak (attention kernels run in BF16 whatever the weights' dtype),
 *   against the dense weights and every KV byte attended to at `memoryEfficiency` of HBM bandwidth.
 * - Routed experts (MoE): 2 × the routed active parameters per token at `moeComputeEfficiency` (FP8)
 *   (grouped GEMMs of a few rows per expert), against the expert weights the step touches. A decode
 *   step of a small batch reads few experts and is bandwidth-bound; a prompt touches every expert
 *   and, at a low grouped-GEMM rate, becomes compute-bound.
 * The fraction of weights a step reads is weightFractionRead's; the dense share is always read.
 * Pipeline stages run one after another, so PP divides memory, not step time.
 */
export function stepTimeMs(perf: PerfModel, step: StepShape): number {
  const tokens = step.prefillTokens + step.decodeSequences;
  if (tokens === 0) return 0;
  const { model, gpu, calibration } = perf;
  const tp = Math.max(1, perf.shape.tensorParallel);
  const routed = routedParamsB(model);
  const peak = peakTflops(model, gpu) * 1e12 * tp;
  const denseComputeMs =
    ((2 * (model.activeParamsB - routed.active) * 1e9 * tokens) / (peak * calibration.computeEfficiency) +
      attentionFlops(model, step) / (gpu.bf16Tflops * 1e12 * tp * calibration.computeEfficiency)) * 1e3;
  // The fitted grouped-GEMM rate is that of block-scaled FP8 experts, the only expert format in its
  // calibration set; experts in other formats (BF16, MXFP4) keep the dense rate for want of evidence.
  const expertEfficiency = model.computeDtype === "fp8" ? calibration.moeComputeEfficiency : calibration.computeEfficiency;
  const expertComputeMs = ((2 * routed.active * 1e9 * tokens) / (peak * expertEfficiency)) * 1e3;
  const weightsRead = (weightBytes(model) * weightFractionRead(model, tokens)) / tp;
  const denseWeights = Math.min(weightsRead, ((model.totalParamsB - routed.total) * 1e9 * model.dtypeBytes) / tp);
  const kvRead = perf.kvBytesPerTokenRead * (step.decodeContextTokens + step.prefillContextTokens);
  const bandwidth = gpu.hbmBandwidthGBs * 1e9 * calibration.memoryEfficiency;
  const denseMemoryMs = ((denseWeights + kvRead) / bandwidth) * 1e3;
  const expertMemoryMs = ((weightsRead - denseWeights) / bandwidth) * 1e3;
  // Two all-reduces per layer (after attention and after the MLP) of tokens × hidden BF16 values.
  const hidden = model.hiddenSize ?? model.queryHeads * model.headDim;
  const allReduceBytes = ((2 * (tp - 1)) / tp) * tokens * hidden * 2;
  const allReduceMs =
    tp > 1 ? 2 * model.layers * (calibration.tpAllReduceUs / 1000 + (allReduceBytes / (gpu.interconnect.bandwidthGBs * 1e9)) * 1e3) : 0;
  const sequences = step.prefillSequences + step.decodeSequences;
  return (
    calibration.stepOverheadMs +
    calibration.perSequenceOverheadMs * sequences +
    Math.max(denseComputeMs, denseMemoryMs) +
    Math.max(expertComputeMs, expertMemoryMs) +
    allReduceMs
  );
}

/** One decode step for `batch` sequences of `contextPerSequence` tokens each. */
export function decodeStepMs(perf: PerfModel, batch: number, contextPerSequence: number): number {
  return stepTimeMs(perf, { ...EMPTY_STEP, decodeSequences: batch, decodeContextTokens: batch * contextPerSequence });
}

/** Time to first token of a lone request: its uncached prompt in one step after `cachedTokens` hits. */
export function prefillMs(perf: PerfModel, promptTokens: number, cachedTokens = 0): number {
  const fresh = Math.max(1, promptTokens - cachedTokens);
  return stepTimeMs(perf, {
    ...EMPTY_STEP,
    prefillTokens: fresh,
    prefillSequences: 1,
    prefillAttention: attendedPairs(cachedTokens, fresh),
    prefillContextTokens: cachedTokens,
  });
}

/**
 * What `vllm bench latency` measures: one batch of `batch` prompts of `inputLen` tokens,
 * prefilled in chunks of at most `maxBatchedTokens`, then `outputLen − 1` decode steps (the
 * first token comes out of the last prefill step).
 */
export function offlineBatchLatencyMs(
  perf: PerfModel,
  run: { batch: number; inputLen: number; outputLen: number; maxBatchedTokens?: number },
): number {
  const budget = run.maxBatchedTokens ?? 8192;
  let total = 0;
  let done = 0;
  const prompt = run.batch * run.inputLen;
  while (done < prompt) {
    const chunk = Math.min(budget, prompt - done);
    const perSequence = chunk / run.batch;
    total += stepTimeMs(perf, {
      prefillTokens: chunk,
      prefillSequences: run.batch,
      prefillAttention: run.batch * attendedPairs(done / run.batch, perSequence),
      prefillContextTokens: done,
      decodeSequences: 0,
      decodeContextTokens: 0,
    });
    done += chunk;
  }
  for (let generated = 1; generated < run.outputLen; generated++) {
    total += decodeStepMs(perf, run.batch, run.inputLen + generated);
  }
  return total;
}

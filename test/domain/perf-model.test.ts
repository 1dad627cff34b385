import { describe, expect, it } from "vitest";
import { GPU_PROFILES, GPU_TYPES, type GpuType } from "../../src/domain/gpu-profiles.ts";
import { modelFactsForName, sizeClassForModel } from "../../src/domain/model-sizes.ts";
import { createPerfModel, decodeStepMs, offlineBatchLatencyMs, prefillMs, routedParamsB, weightFractionRead } from "../../src/domain/perf-model.ts";
import { DEFAULT_SERVING_TUNING, estimateAggregated } from "../../src/domain/serving-estimate.ts";

function perf(model: string, gpu: GpuType = "nvidia-h100-80gb", tensorParallel = 1) {
  return createPerfModel({ model: modelFactsForName(model), gpu: GPU_PROFILES[gpu], shape: { tensorParallel } });
}

const LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct";

describe("time to first token", () => {
  it.each([
    [16, 256],
    [256, 1024],
    [1024, 4096],
    [4096, 16384],
  ])("a %i-token prompt is faster than a %i-token one", (short, long) => {
    const model = perf(LLAMA_8B);
    expect(prefillMs(model, short)).toBeLessThan(prefillMs(model, long));
  });

  it.each([
    ["nvidia-l4-24gb", "nvidia-a100-80gb"],
    ["nvidia-a100-80gb", "nvidia-h100-80gb"],
    ["nvidia-h100-80gb", "nvidia-b200-180gb"],
  ] as const)("a long prompt prefills faster on %s's successor %s", (slow, fast) => {
    expect(prefillMs(perf(LLAMA_8B, fast), 8192)).toBeLessThan(prefillMs(perf(LLAMA_8B, slow), 8192));
  });

  it.each([1, 2, 4, 8])("prefill rate grows with tensor parallel size (TP %i → %i×2)", (tp) => {
    const model = "meta-llama/Llama-3.1-70B";
    expect(perf(model, "nvidia-h100-80gb", tp * 2).prefillTokensPerSecond).toBeGreaterThan(perf(model, "nvidia-h100-80gb", tp).prefillTokensPerSecond);
  });

  it.each([
    [4096, 0],
    [4096, 2048],
    [4096, 4000],
  ])("cached prefix tokens cut it (%i tokens, %i cached)", (prompt, cached) => {
    const model = perf(LLAMA_8B, "nvidia-l4-24gb");
    if (cached === 0) expect(prefillMs(model, prompt, cached)).toBeGreaterThan(prefillMs(model, prompt, 2048));
    else expect(prefillMs(model, prompt, cached)).toBeLessThan(prefillMs(model, prompt, 0));
  });
});

describe("decode step time", () => {
  it.each([
    [1, 8],
    [8, 32],
    [32, 128],
    [128, 512],
  ])("grows with the batch: %i sequences < %i sequences", (small, large) => {
    const model = perf(LLAMA_8B);
    expect(decodeStepMs(model, small, 1024)).toBeLessThan(decodeStepMs(model, large, 1024));
  });

  it.each([
    [512, 4096],
    [4096, 32768],
  ])("grows with context: %i < %i tokens per sequence", (short, long) => {
    const model = perf(LLAMA_8B);
    expect(decodeStepMs(model, 16, short)).toBeLessThan(decodeStepMs(model, 16, long));
  });

  it("is bandwidth-bound at batch 1: about weights ÷ effective bandwidth", () => {
    const model = perf(LLAMA_8B);
    const rooflineMs = ((8.03e9 * 2) / (3350e9 * 0.75)) * 1e3;
    expect(decodeStepMs(model, 1, 128)).toBeGreaterThan(rooflineMs);
    expect(decodeStepMs(model, 1, 128)).toBeLessThan(rooflineMs + 2);
  });

  it.each([
    [1, 12.9 / 46.7],
    [8, 0.92],
    [64, 1],
  ])("an MoE step with %i tokens reads %f of the weights (only the active share at batch 1)", (tokens, fraction) => {
    const mixtral = modelFactsForName("mistralai/Mixtral-8x7B-v0.1");
    expect(weightFractionRead(mixtral, tokens)).toBeCloseTo(fraction, 2);
    expect(weightFractionRead(modelFactsForName(LLAMA_8B), tokens)).toBe(1);
  });
});

describe("KV cache capacity", () => {
  it.each([
    ["nvidia-l4-24gb", "nvidia-l40s-48gb"],
    ["nvidia-a100-40gb", "nvidia-a100-80gb"],
    ["nvidia-h100-80gb", "nvidia-h200-141gb"],
    ["nvidia-h200-141gb", "nvidia-b200-180gb"],
    ["nvidia-b200-180gb", "amd-mi300x-192gb"],
  ] as const)("grows with memory: %s < %s", (smaller, larger) => {
    expect(perf(LLAMA_8B, smaller).kvCapacityTokens).toBeLessThan(perf(LLAMA_8B, larger).kvCapacityTokens);
  });

  it.each([
    ["meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.1-8B"],
    ["meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-14B"],
    ["Qwen/Qwen2.5-14B", "Qwen/Qwen2.5-32B"],
  ])("shrinks with model size: %s holds more than %s", (small, large) => {
    expect(perf(small, "nvidia-h100-80gb").kvCapacityTokens).toBeGreaterThan(perf(large, "nvidia-h100-80gb").kvCapacityTokens);
  });

  it.each([
    ["meta-llama/Llama-3.1-70B", "nvidia-h100-80gb", 1, false],
    ["meta-llama/Llama-3.1-70B", "nvidia-h100-80gb", 2, true],
    ["meta-llama/Llama-3.1-8B", "nvidia-l4-24gb", 1, true],
    ["meta-llama/Llama-3.1-405B", "nvidia-h200-141gb", 8, true],
    ["Qwen/Qwen3-235B-A22B", "nvidia-h100-80gb", 4, false],
    ["Qwen/Qwen3-235B-A22B", "nvidia-h100-80gb", 8, true],
  ] as const)("%s on %s × TP %i fits: %s", (model, gpu, tp, fits) => {
    expect(perf(model, gpu, tp).fits).toBe(fits);
  });

  it("is about what vLLM reports for Llama-3.1-8B on an H100 at 0.9 utilisation (≈ 450k tokens)", () => {
    const capacity = perf(LLAMA_8B).kvCapacityTokens;
    expect(capacity).toBeGreaterThan(400_000);
    expect(capacity).toBeLessThan(500_000);
  });

  it("every GPU id has a profile with positive facts", () => {
    for (const id of GPU_TYPES) {
      const gpu = GPU_PROFILES[id];
      expect(gpu.id).toBe(id);
      expect(gpu.memoryGb * gpu.hbmBandwidthGBs * gpu.bf16Tflops).toBeGreaterThan(0);
      expect(gpu.source).toMatch(/^https:\/\//);
    }
  });
});

describe("model size classes from names", () => {
  it.each([
    ["meta-llama/Llama-3.1-8B-Instruct", "8b", 8.03, 8.03],
    ["Qwen/Qwen3-8B", "8b", 8.03, 8.03],
    ["meta-llama/Llama-3.3-70B-Instruct", "70b", 70.6, 70.6],
    ["Qwen/Qwen2.5-0.5B-Instruct", "1b", 0.5, 0.5],
    ["Qwen/Qwen3-30B-A3B", "30b-a3b", 30.5, 3.3],
    ["Qwen/Qwen3-235B-A22B-Instruct-2507", "235b-a22b", 235, 22],
    ["mistralai/Mixtral-8x7B-Instruct-v0.1", "8x7b", 46.7, 12.9],
    ["deepseek-ai/DeepSeek-V3", "671b-a37b", 671, 37],
    ["my-org/custom-model", "8b", 8.03, 8.03],
  ])("%s → class %s (%f B total, %f B active)", (name, sizeClass, total, active) => {
    const facts = sizeClassForModel(name);
    expect(facts.sizeClass).toBe(sizeClass);
    expect(facts.totalParamsB).toBe(total);
    expect(facts.activeParamsB).toBe(active);
  });
});

describe("calibration against published vLLM figures (within 25%)", () => {
  // vLLM CI "Performance Benchmark" latency tests: `vllm bench latency`, 32 input tokens,
  // 128 output tokens, batch 8, mean end-to-end latency (https://buildkite.com/vllm/performance-benchmark).
  it.each<[string, GpuType, number, number, string]>([
    ["meta-llama/Llama-3.1-8B", "nvidia-h100-80gb", 1, 997.5, "builds/9555 latency_llama8B_tp1 8xH100"],
    ["meta-llama/Llama-3.1-8B", "nvidia-a100-80gb", 1, 1579.3, "builds/9523 latency_llama8B_tp1 A100-SXM4-80GB"],
    ["meta-llama/Llama-3.1-8B", "nvidia-h200-141gb", 1, 833.4, "builds/9515 latency_llama8B_tp1 H200"],
    ["meta-llama/Meta-Llama-3-70B", "nvidia-h100-80gb", 4, 2444.5, "builds/9555 latency_llama70B_tp4 8xH100"],
    ["mistralai/Mixtral-8x7B-v0.1", "nvidia-h100-80gb", 2, 2327.0, "builds/9555 latency_mixtral8x7B_tp2 8xH100"],
  ])("%s on %s TP %i: %f ms (%s)", (model, gpu, tp, publishedMs) => {
    const modelled = offlineBatchLatencyMs(perf(model, gpu, tp), { batch: 8, inputLen: 32, outputLen: 128 });
    expect(Math.abs(modelled / publishedMs - 1)).toBeLessThan(0.25);
  });

  it("decode at concurrency 1 on an A100 40GB: ≈ 75 tok/s (Musgrave, vLLM throughput-latency sweep on NVIDIA A100)", () => {
    const tokensPerSecond = 1000 / decodeStepMs(perf(LLAMA_8B, "nvidia-a100-40gb"), 1, 1024 + 64);
    expect(Math.abs(tokensPerSecond / 75 - 1)).toBeLessThan(0.25);
  });

  it("TPOT at concurrency 1 on an H100: ≈ 6.48 ms (InferenceBench concurrency sweep, vLLM 0.21)", () => {
    expect(Math.abs(decodeStepMs(perf(LLAMA_8B), 1, 300) / 6.48 - 1)).toBeLessThan(0.25);
  });
});

describe("MoE/MLA prefill", () => {
  const r1 = modelFactsForName("deepseek-ai/DeepSeek-R1");
  const h200 = GPU_PROFILES["nvidia-h200-141gb"];
  const at = (moeComputeEfficiency: number) => createPerfModel({ model: r1, gpu: h200, shape: { tensorParallel: 8 }, calibration: { moeComputeEfficiency } });

  it("splits DeepSeek-R1's 37B active parameters into ≈ 20.5B routed (8 of 256 experts) and the dense rest", () => {
    const routed = routedParamsB(r1);
    expect(routed.active).toBeCloseTo((8 * (671 - 37)) / 248, 6);
    expect(routed.total).toBeCloseTo((256 * (671 - 37)) / 248, 6);
    expect(routedParamsB(modelFactsForName("meta-llama/Llama-3.1-8B"))).toEqual({ active: 0, total: 0 });
  });

  it("makes an 8k FP8 MoE prompt compute-bound on the grouped GEMMs: halving their efficiency nearly doubles the expert share", () => {
    const fast = prefillMs(at(0.2), 8192);
    const slow = prefillMs(at(0.1), 8192);
    expect(slow).toBeGreaterThan(fast * 1.4);
    // A decode step of 16 sequences stays bandwidth-bound: the grouped-GEMM rate does not move it.
    expect(decodeStepMs(at(0.1), 16, 2048)).toBeCloseTo(decodeStepMs(at(0.2), 16, 2048), 6);
  });

  it("leaves dense models' steps alone", () => {
    const llama = modelFactsForName("meta-llama/Llama-3.1-8B");
    const a = createPerfModel({ model: llama, gpu: h200, calibration: { moeComputeEfficiency: 0.01 } });
    const b = createPerfModel({ model: llama, gpu: h200, calibration: { moeComputeEfficiency: 1 } });
    expect(prefillMs(a, 4096)).toBe(prefillMs(b, 4096));
  });

  it("charges SGLang, not vLLM, a host dispatch per layer on every prompt-carrying step", () => {
    const perf = at(0.1);
    const w = { inputTokens: 1024, outputTokens: 1024 };
    const limits = { maxBatchedTokens: 16384, maxRunning: 256 };
    const none = { ...DEFAULT_SERVING_TUNING, prefillLayerDispatchMs: { vllm: 0, sglang: 0 } };
    const two = { ...DEFAULT_SERVING_TUNING, prefillLayerDispatchMs: { vllm: 0, sglang: 2 } };
    expect(estimateAggregated(perf, w, 1, limits, "sglang", two).ttftMs - estimateAggregated(perf, w, 1, limits, "sglang", none).ttftMs).toBeCloseTo(61 * 2, 6);
    expect(estimateAggregated(perf, w, 1, limits, "vllm", two).ttftMs).toBe(estimateAggregated(perf, w, 1, limits, "vllm", none).ttftMs);
  });
});

// Model size facts the perf model needs (parameters, layers, KV heads, head dim, dtype), a small
// catalogue of reference architectures, and the mapping from a served model *name* to one of them.
// Only the name is known to the simulator, so the mapping is deliberately simple (see sizeClassForModel);
// a name the model catalogue (model-catalog.ts) knows gets that model's own architecture instead.
import { DTYPE_BYTES, findCatalogModel, modelWeightBytes, type ModelArchitecture, type ModelDtype } from "./model-catalog.ts";

export interface ModelFacts {
  /** The reference architecture the numbers were taken from (or derived from). */
  sizeClass: string;
  /** Total parameters, billions. */
  totalParamsB: number;
  /** Parameters used per token, billions (= total for dense models). */
  activeParamsB: number;
  layers: number;
  /** Attention (query) heads; with headDim, the width attention FLOPs scale with. */
  queryHeads: number;
  /** Key/value heads (GQA); the KV cache holds 2 × layers × kvHeads × headDim values per token. */
  kvHeads: number;
  headDim: number;
  /** Bytes per weight: 2 for BF16/FP16, 1 for FP8/INT8. */
  dtypeBytes: number;
  /** Bytes per cached K or V element (2, or 1 with an FP8 KV cache). */
  kvDtypeBytes: number;
  /** The model's own context length (what `max_model_len` defaults to). */
  maxModelLen: number;
  /** MLA models: width of the one latent cached per token and layer (replaces 2 × kvHeads × headDim). */
  mlaLatentDim?: number;
  /** Model width, for tensor-parallel all-reduce volume; absent means queryHeads × headDim. */
  hiddenSize?: number;
  /** Matmul precision: `fp8` runs at the GPU's FP8 rate where it has one, anything else at BF16. */
  computeDtype?: "bf16" | "fp8";
  /** MoE: routed experts per layer, and how many each token uses (splits the routed share of the parameters off the dense share). */
  experts?: number;
  expertsPerToken?: number;
}

type Architecture = Omit<ModelFacts, "dtypeBytes" | "kvDtypeBytes">;

/**
 * Reference architectures, from each model's Hugging Face `config.json` (num_hidden_layers,
 * num_attention_heads, num_key_value_heads, head_dim, max_position_embeddings) and model card
 * (parameter counts).
 *
 * | class | total / active B | layers | q / kv heads | head dim | context | model |
 * |---|---|---|---|---|---|---|
 * | 1b | 1.24 | 16 | 32 / 8 | 64 | 131072 | meta-llama/Llama-3.2-1B |
 * | 3b | 3.21 | 28 | 24 / 8 | 128 | 131072 | meta-llama/Llama-3.2-3B |
 * | 8b | 8.03 | 32 | 32 / 8 | 128 | 131072 | meta-llama/Llama-3.1-8B |
 * | 14b | 14.7 | 48 | 40 / 8 | 128 | 32768 | Qwen/Qwen2.5-14B |
 * | 32b | 32.8 | 64 | 40 / 8 | 128 | 32768 | Qwen/Qwen2.5-32B |
 * | 70b | 70.6 | 80 | 64 / 8 | 128 | 131072 | meta-llama/Llama-3.1-70B |
 * | 405b | 405.9 | 126 | 128 / 8 | 128 | 131072 | meta-llama/Llama-3.1-405B |
 * | 30b-a3b | 30.5 / 3.3 | 48 | 32 / 4 | 128 | 40960 | Qwen/Qwen3-30B-A3B |
 * | 8x7b | 46.7 / 12.9 | 32 | 32 / 8 | 128 | 32768 | mistralai/Mixtral-8x7B-v0.1 |
 * | 235b-a22b | 235 / 22 | 94 | 64 / 4 | 128 | 40960 | Qwen/Qwen3-235B-A22B |
 * | 671b-a37b | 671 / 37 | 61 | 128 / 1 | 288 | 163840 | deepseek-ai/DeepSeek-V3 (MLA caches one 576-wide latent per layer and token: modelled as 1 KV head of 288, K+V = 576) |
 */
export const MODEL_SIZE_CLASSES: readonly Architecture[] = [
  { sizeClass: "1b", totalParamsB: 1.24, activeParamsB: 1.24, layers: 16, queryHeads: 32, kvHeads: 8, headDim: 64, maxModelLen: 131072 },
  { sizeClass: "3b", totalParamsB: 3.21, activeParamsB: 3.21, layers: 28, queryHeads: 24, kvHeads: 8, headDim: 128, maxModelLen: 131072 },
  { sizeClass: "8b", totalParamsB: 8.03, activeParamsB: 8.03, layers: 32, queryHeads: 32, kvHeads: 8, headDim: 128, maxModelLen: 131072 },
  { sizeClass: "14b", totalParamsB: 14.7, activeParamsB: 14.7, layers: 48, queryHeads: 40, kvHeads: 8, headDim: 128, maxModelLen: 32768 },
  { sizeClass: "32b", totalParamsB: 32.8, activeParamsB: 32.8, layers: 64, queryHeads: 40, kvHeads: 8, headDim: 128, maxModelLen: 32768 },
  { sizeClass: "70b", totalParamsB: 70.6, activeParamsB: 70.6, layers: 80, queryHeads: 64, kvHeads: 8, headDim: 128, maxModelLen: 131072 },
  { sizeClass: "405b", totalParamsB: 405.9, activeParamsB: 405.9, layers: 126, queryHeads: 128, kvHeads: 8, headDim: 128, maxModelLen: 131072 },
  { sizeClass: "30b-a3b", totalParamsB: 30.5, activeParamsB: 3.3, layers: 48, queryHeads: 32, kvHeads: 4, headDim: 128, maxModelLen: 40960 },
  { sizeClass: "8x7b", totalParamsB: 46.7, activeParamsB: 12.9, layers: 32, queryHeads: 32, kvHeads: 8, headDim: 128, maxModelLen: 32768 },
  { sizeClass: "235b-a22b", totalParamsB: 235, activeParamsB: 22, layers: 94, queryHeads: 64, kvHeads: 4, headDim: 128, maxModelLen: 40960 },
  { sizeClass: "671b-a37b", totalParamsB: 671, activeParamsB: 37, layers: 61, queryHeads: 128, kvHeads: 1, headDim: 288, maxModelLen: 163840 },
];

const DEFAULT_CLASS = "8b";

function byClass(sizeClass: string): Architecture {
  const found = MODEL_SIZE_CLASSES.find((entry) => entry.sizeClass === sizeClass);
  if (!found) throw new Error(`unknown model size class ${sizeClass}`);
  return found;
}

/** The architecture whose total size is nearest (on a log scale) among dense or MoE classes. */
function nearest(totalB: number, moe: boolean): Architecture {
  const candidates = MODEL_SIZE_CLASSES.filter((entry) => (entry.activeParamsB < entry.totalParamsB) === moe);
  let best = candidates[0]!;
  for (const entry of candidates) {
    if (Math.abs(Math.log(entry.totalParamsB / totalB)) < Math.abs(Math.log(best.totalParamsB / totalB))) best = entry;
  }
  return best;
}

/** Keeps a class's architecture, replacing the parameter counts unless they are within 10% of the class's. */
function sized(arch: Architecture, totalB: number, activeB: number): Architecture {
  const close = Math.abs(totalB / arch.totalParamsB - 1) <= 0.1 && Math.abs(activeB / arch.activeParamsB - 1) <= 0.1;
  return close ? arch : { ...arch, totalParamsB: totalB, activeParamsB: activeB };
}

const NUMBER = String.raw`(\d+(?:\.\d+)?)`;

/**
 * Maps a model name to its size facts. The rules, first match wins (case-insensitive):
 * 1. `<T>B-A<A>B` (Qwen3-30B-A3B, Qwen3-235B-A22B): MoE with T billion total, A active.
 * 2. `<N>x<M>B` (Mixtral-8x7B): the class of that name if there is one, else MoE with N×M total
 *    and 2×M active (top-2 routing; an upper bound, shared attention weights make real totals lower).
 * 3. `deepseek-v3` / `deepseek-r1` / `kimi-k2` with no size: the 671B-A37B class.
 * 4. `<N>B` or `<N>M` as its own word (Llama-3.1-8B, Qwen2.5-0.5B): dense with N billion.
 * 5. Anything else: the 8B class (Llama-3.1-8B).
 * The architecture (layers, heads, context) is that of the nearest reference class; parameter
 * counts are the parsed ones unless they are within 10% of that class's.
 */
export function sizeClassForModel(name: string): Architecture {
  const lower = name.toLowerCase();
  const moe = new RegExp(String.raw`(?:^|[^a-z0-9.])${NUMBER}b-a${NUMBER}b(?![a-z])`).exec(lower);
  if (moe) {
    const total = Number(moe[1]);
    const active = Number(moe[2]);
    return sized(nearest(total, true), total, active);
  }
  const experts = new RegExp(String.raw`(?:^|[^a-z0-9.])(\d+)x${NUMBER}b(?![a-z])`).exec(lower);
  if (experts) {
    const exact = MODEL_SIZE_CLASSES.find((entry) => entry.sizeClass === `${experts[1]}x${experts[2]}b`);
    if (exact) return exact;
    const total = Number(experts[1]) * Number(experts[2]);
    const active = 2 * Number(experts[2]);
    return sized(nearest(total, true), total, active);
  }
  if (/deepseek-(v3|r1)|kimi-k2/.test(lower)) return byClass("671b-a37b");
  const dense = new RegExp(String.raw`(?:^|[^a-z0-9.])${NUMBER}([bm])(?![a-z0-9])`).exec(lower);
  if (dense) {
    const total = Number(dense[1]) / (dense[2] === "m" ? 1000 : 1);
    if (total > 0) return sized(nearest(total, false), total, total);
  }
  return byClass(DEFAULT_CLASS);
}

export interface ModelPrecision {
  /** Weight dtype: `bfloat16`/`float16`/`auto` → 2 bytes, `fp8`/`int8` quantization → 1. */
  weightBytes?: number;
  kvCacheBytes?: number;
}

/**
 * Perf-model facts of a catalogue (or user-described) architecture in a dtype. Bytes per weight
 * come from the checkpoint size for mixed formats (MXFP4 experts beside BF16 attention), so that
 * weights ÷ GPUs is what the engine loads.
 */
export function modelFactsFromArchitecture(arch: ModelArchitecture, dtype: ModelDtype = arch.defaultDtype, kvCacheBytes = 2): ModelFacts {
  return {
    sizeClass: arch.id,
    totalParamsB: arch.totalParamsB,
    activeParamsB: arch.activeParamsB,
    layers: arch.layers,
    queryHeads: arch.attentionHeads,
    kvHeads: arch.attention === "MLA" ? 1 : arch.kvHeads,
    headDim: arch.headDim,
    dtypeBytes: modelWeightBytes(arch, dtype) / (arch.totalParamsB * 1e9),
    kvDtypeBytes: kvCacheBytes,
    maxModelLen: arch.maxContext,
    ...(arch.kvLatentDim !== undefined && { mlaLatentDim: arch.kvLatentDim }),
    hiddenSize: arch.hiddenSize,
    computeDtype: dtype === "fp8" ? "fp8" : "bf16",
    ...(arch.experts !== undefined && arch.expertsPerToken !== undefined && { experts: arch.experts, expertsPerToken: arch.expertsPerToken }),
  };
}

export function modelFactsForName(name: string, precision: ModelPrecision = {}): ModelFacts {
  const known = findCatalogModel(name);
  if (known) {
    // A quantized checkpoint loads as published whatever `--dtype` says; only an FP8
    // quantization flag makes a BF16 checkpoint smaller.
    const quantized = precision.weightBytes !== undefined && precision.weightBytes <= DTYPE_BYTES.fp8;
    const dtype: ModelDtype = known.defaultDtype === "bfloat16" && quantized ? "fp8" : known.defaultDtype;
    return modelFactsFromArchitecture(known, dtype, precision.kvCacheBytes ?? 2);
  }
  const arch = sizeClassForModel(name);
  const dtypeBytes = precision.weightBytes ?? 2;
  return { ...arch, dtypeBytes, kvDtypeBytes: precision.kvCacheBytes ?? 2 };
}

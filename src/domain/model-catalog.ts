// The model catalogue the planner sizes from (served at GET /v1/catalog/models): architecture facts
// of widely used open models, each copied from the model's Hugging Face `config.json` and model card
// with its source, plus the reading of a user-supplied `config.json` for a model not listed here.
// Invariant: every catalogue entry parses under ModelArchitecture; no figure is derived silently.
import { z } from "zod";
import { LIMITS, boundedInt } from "./limits.ts";

export const ATTENTION_KINDS = ["MHA", "GQA", "MLA"] as const;
export const MODEL_DTYPES = ["bfloat16", "fp8", "mxfp4"] as const;
export type ModelDtype = (typeof MODEL_DTYPES)[number];

/**
 * Bytes per parameter of each checkpoint dtype. MXFP4 (gpt-oss) quantizes only the MoE experts to
 * 4.25 bits; the rest stays BF16, so its figure is per model (checkpointGiB below), not this table.
 */
export const DTYPE_BYTES: Readonly<Record<ModelDtype, number>> = { bfloat16: 2, fp8: 1, mxfp4: 0.53 };

const positive = z.number().positive();
const count = boundedInt(1, Number.MAX_SAFE_INTEGER);

export const ModelArchitecture = z
  .object({
    id: z.string().min(1).max(LIMITS.name).describe("Hugging Face repository id, e.g. `meta-llama/Llama-3.1-8B-Instruct`."),
    aliases: z.array(z.string().max(LIMITS.name)).max(LIMITS.mapEntries).describe("Other repository ids with the same architecture (base/instruct, FP8 re-uploads)."),
    kind: z.enum(["dense", "moe"]).describe("Dense, or mixture of experts."),
    totalParamsB: positive.describe("Total parameters, billions (what memory holds)."),
    activeParamsB: positive.describe("Parameters used per token, billions (what compute and a batch-1 decode read); = total for dense."),
    layers: count.describe("`num_hidden_layers`."),
    hiddenSize: count.describe("`hidden_size`."),
    attentionHeads: count.describe("`num_attention_heads`."),
    kvHeads: count.describe("`num_key_value_heads` (GQA/MHA); for MLA the query heads, the cache holds one latent instead."),
    headDim: count.describe("`head_dim`, or hidden ÷ heads where the config has none."),
    attention: z.enum(ATTENTION_KINDS).describe("MHA (kv = query heads), GQA (fewer kv heads) or MLA (one compressed latent per token and layer)."),
    kvLatentDim: count.optional().describe("MLA only: `kv_lora_rank + qk_rope_head_dim`, the width of the cached latent."),
    experts: count.optional().describe("Routed experts per MoE layer (`num_experts`, `num_local_experts`, `n_routed_experts`)."),
    expertsPerToken: count.optional().describe("`num_experts_per_tok`."),
    vocabSize: count.describe("`vocab_size`."),
    maxContext: count.describe("`max_position_embeddings` (what `max_model_len` defaults to)."),
    defaultDtype: z.enum(MODEL_DTYPES).describe("Dtype of the published weights."),
    checkpointGiB: positive.optional().describe("Size of the weights as published, GiB, where it is not total × dtype bytes (mixed precision)."),
    source: z.string().max(LIMITS.text).min(1).describe("Where each figure comes from."),
  })
  .meta({ id: "ModelArchitecture" });
export type ModelArchitecture = z.infer<typeof ModelArchitecture>;

// Sources, named once. AIC = NVIDIA AIConfigurator's verbatim copies of the Hugging Face configs,
// github.com/ai-dynamo/aiconfigurator @095f58a, aic-core/src/aiconfigurator_core/model_configs/<org>--<name>_config.json.
const AIC = (file: string) => `config.json: https://huggingface.co/${file.replace("--", "/")}/blob/main/config.json, as copied in github.com/ai-dynamo/aiconfigurator@095f58a aic-core/src/aiconfigurator_core/model_configs/${file}_config.json`;
const CARD = (repo: string, what: string) => `parameters: model card https://huggingface.co/${repo} (${what})`;

const llama = (id: string, aliases: string[], total: number, layers: number, hidden: number, heads: number, config: string, card: string): ModelArchitecture => ({
  id, aliases, kind: "dense", totalParamsB: total, activeParamsB: total, layers, hiddenSize: hidden, attentionHeads: heads, kvHeads: 8, headDim: 128,
  attention: "GQA", vocabSize: 128256, maxContext: 131072, defaultDtype: "bfloat16", source: `${config}; ${card}`,
});

export const MODEL_CATALOG: readonly ModelArchitecture[] = [
  {
    id: "meta-llama/Llama-3.2-1B-Instruct", aliases: ["meta-llama/Llama-3.2-1B"], kind: "dense", totalParamsB: 1.24, activeParamsB: 1.24,
    layers: 16, hiddenSize: 2048, attentionHeads: 32, kvHeads: 8, headDim: 64, attention: "GQA", vocabSize: 128256, maxContext: 131072, defaultDtype: "bfloat16",
    source: "config.json https://huggingface.co/meta-llama/Llama-3.2-1B (16 layers, 2048 hidden, 32/8 heads, head_dim 64); parameters 1.24B from the model card. Carried over from model-sizes.ts's reference table; not checked again against config.json (2026-11)",
  },
  {
    id: "meta-llama/Llama-3.2-3B-Instruct", aliases: ["meta-llama/Llama-3.2-3B"], kind: "dense", totalParamsB: 3.21, activeParamsB: 3.21,
    layers: 28, hiddenSize: 3072, attentionHeads: 24, kvHeads: 8, headDim: 128, attention: "GQA", vocabSize: 128256, maxContext: 131072, defaultDtype: "bfloat16",
    source: "config.json https://huggingface.co/meta-llama/Llama-3.2-3B (28 layers, 24/8 heads, head_dim 128); parameters 3.21B from the model card. Carried over from model-sizes.ts; not checked again against config.json (2026-11)",
  },
  llama("meta-llama/Llama-3.1-8B-Instruct", ["meta-llama/Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B-Instruct", "nvidia/Llama-3.1-8B-Instruct-FP8", "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8"], 8.03, 32, 4096, 32, AIC("meta-llama--Meta-Llama-3.1-8B"), CARD("meta-llama/Llama-3.1-8B-Instruct", "8.03B safetensors parameters")),
  llama("meta-llama/Llama-3.1-70B-Instruct", ["meta-llama/Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-70B-Instruct", "nvidia/Llama-3.1-70B-Instruct-FP8"], 70.6, 80, 8192, 64, AIC("meta-llama--Meta-Llama-3.1-70B"), CARD("meta-llama/Llama-3.1-70B-Instruct", "70.6B safetensors parameters")),
  llama("meta-llama/Llama-3.3-70B-Instruct", [], 70.6, 80, 8192, 64, AIC("meta-llama--Llama-3.3-70B-Instruct").replace("@095f58a aic-core/src/aiconfigurator_core", "@f577ab8 src/aiconfigurator"), CARD("meta-llama/Llama-3.3-70B-Instruct", "70.6B, same architecture as 3.1 70B")),
  llama("meta-llama/Llama-3.1-405B-Instruct", ["meta-llama/Llama-3.1-405B", "meta-llama/Meta-Llama-3.1-405B-Instruct"], 405.9, 126, 16384, 128, AIC("meta-llama--Meta-Llama-3.1-405B"), CARD("meta-llama/Llama-3.1-405B-Instruct", "406B safetensors parameters")),
  {
    id: "Qwen/Qwen3-0.6B", aliases: [], kind: "dense", totalParamsB: 0.6, activeParamsB: 0.6,
    layers: 28, hiddenSize: 1024, attentionHeads: 16, kvHeads: 8, headDim: 128, attention: "GQA", vocabSize: 151936, maxContext: 40960, defaultDtype: "bfloat16",
    source: `${AIC("Qwen--Qwen3-0.6B")}; ${CARD("Qwen/Qwen3-0.6B", "0.6B, 0.44B non-embedding")}`,
  },
  {
    id: "Qwen/Qwen3-8B", aliases: ["Qwen/Qwen3-8B-FP8"], kind: "dense", totalParamsB: 8.2, activeParamsB: 8.2,
    layers: 36, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, attention: "GQA", vocabSize: 151936, maxContext: 40960, defaultDtype: "bfloat16",
    source: `${AIC("Qwen--Qwen3-8B")}; ${CARD("Qwen/Qwen3-8B", "8.2B")}`,
  },
  {
    id: "Qwen/Qwen3-32B", aliases: ["Qwen/Qwen3-32B-FP8"], kind: "dense", totalParamsB: 32.8, activeParamsB: 32.8,
    layers: 64, hiddenSize: 5120, attentionHeads: 64, kvHeads: 8, headDim: 128, attention: "GQA", vocabSize: 151936, maxContext: 40960, defaultDtype: "bfloat16",
    source: `${AIC("Qwen--Qwen3-32B")}; ${CARD("Qwen/Qwen3-32B", "32.8B")}`,
  },
  {
    id: "Qwen/Qwen3-30B-A3B", aliases: ["Qwen/Qwen3-30B-A3B-FP8", "Qwen/Qwen3-30B-A3B-Instruct-2507"], kind: "moe", totalParamsB: 30.5, activeParamsB: 3.3,
    layers: 48, hiddenSize: 2048, attentionHeads: 32, kvHeads: 4, headDim: 128, attention: "GQA", experts: 128, expertsPerToken: 8, vocabSize: 151936, maxContext: 40960, defaultDtype: "bfloat16",
    source: `${AIC("Qwen--Qwen3-30B-A3B")}; ${CARD("Qwen/Qwen3-30B-A3B", "30.5B total, 3.3B activated")}`,
  },
  {
    id: "Qwen/Qwen3-235B-A22B", aliases: ["Qwen/Qwen3-235B-A22B-FP8", "Qwen/Qwen3-235B-A22B-Instruct-2507"], kind: "moe", totalParamsB: 235, activeParamsB: 22,
    layers: 94, hiddenSize: 4096, attentionHeads: 64, kvHeads: 4, headDim: 128, attention: "GQA", experts: 128, expertsPerToken: 8, vocabSize: 151936, maxContext: 40960, defaultDtype: "bfloat16",
    source: `${AIC("Qwen--Qwen3-235B-A22B")}; ${CARD("Qwen/Qwen3-235B-A22B", "235B total, 22B activated")}`,
  },
  {
    id: "Qwen/Qwen3-Coder-480B-A35B-Instruct", aliases: ["Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8"], kind: "moe", totalParamsB: 480, activeParamsB: 35,
    layers: 62, hiddenSize: 6144, attentionHeads: 96, kvHeads: 8, headDim: 128, attention: "GQA", experts: 160, expertsPerToken: 8, vocabSize: 151936, maxContext: 262144, defaultDtype: "bfloat16",
    source: `${AIC("Qwen--Qwen3-Coder-480B-A35B-Instruct")}; ${CARD("Qwen/Qwen3-Coder-480B-A35B-Instruct", "480B total, 35B activated")}`,
  },
  {
    id: "Qwen/Qwen3-VL-8B-Instruct", aliases: [], kind: "dense", totalParamsB: 8.8, activeParamsB: 8.8,
    layers: 36, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, attention: "GQA", vocabSize: 151936, maxContext: 262144, defaultDtype: "bfloat16",
    source: `${AIC("Qwen--Qwen3-VL-8B-Instruct")} (text_config); parameters 8.8B incl. the vision tower: Hugging Face safetensors count, not checked again (2026-11)`,
  },
  {
    id: "Qwen/Qwen2.5-VL-7B-Instruct", aliases: [], kind: "dense", totalParamsB: 8.29, activeParamsB: 8.29,
    layers: 28, hiddenSize: 3584, attentionHeads: 28, kvHeads: 4, headDim: 128, attention: "GQA", vocabSize: 152064, maxContext: 128000, defaultDtype: "bfloat16",
    source: "layers 0-27, embed 152064 × 3584, k_proj 3584→512 (4 kv heads × 128): the module print of Qwen2_5_VLForConditionalGeneration in github.com/acproject/duorou docs/qwen2.5vl_graph.md; context 128000: xorbitsai/inference docs qwen2.5-vl-instruct; parameters 8.29B (vision tower included) from the Hugging Face safetensors count, not checked again (2026-11)",
  },
  {
    id: "deepseek-ai/DeepSeek-V3", aliases: ["deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3.1"], kind: "moe", totalParamsB: 671, activeParamsB: 37,
    layers: 61, hiddenSize: 7168, attentionHeads: 128, kvHeads: 128, headDim: 128, attention: "MLA", kvLatentDim: 576, experts: 256, expertsPerToken: 8, vocabSize: 129280, maxContext: 163840, defaultDtype: "fp8",
    source: `${AIC("deepseek-ai--DeepSeek-V3")} (kv_lora_rank 512 + qk_rope_head_dim 64 = 576; quantization_config fp8); ${CARD("deepseek-ai/DeepSeek-V3", "671B total, 37B activated")}`,
  },
  {
    id: "deepseek-ai/DeepSeek-R1", aliases: ["deepseek-ai/DeepSeek-R1-0528"], kind: "moe", totalParamsB: 671, activeParamsB: 37,
    layers: 61, hiddenSize: 7168, attentionHeads: 128, kvHeads: 128, headDim: 128, attention: "MLA", kvLatentDim: 576, experts: 256, expertsPerToken: 8, vocabSize: 129280, maxContext: 163840, defaultDtype: "fp8",
    source: `${AIC("deepseek-ai--DeepSeek-R1")}; ${CARD("deepseek-ai/DeepSeek-R1", "671B total, 37B activated")}`,
  },
  {
    id: "deepseek-ai/DeepSeek-V2-Lite", aliases: ["deepseek-ai/DeepSeek-V2-Lite-Chat"], kind: "moe", totalParamsB: 15.7, activeParamsB: 2.4,
    layers: 27, hiddenSize: 2048, attentionHeads: 16, kvHeads: 16, headDim: 128, attention: "MLA", kvLatentDim: 576, experts: 64, expertsPerToken: 6, vocabSize: 102400, maxContext: 163840, defaultDtype: "bfloat16",
    source: "27 layers, hidden 2048, 16 heads, kv_lora_rank 512 + qk_pos_emb_head_dim 64, 64 routed experts, '16B total, 2.4B active': a Megatron-Bridge config citing https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite; 15.7B total from the model card. experts per token 6, vocabulary 102400 and max_position_embeddings 163840 are config.json values not checked against the published file (2026-11)",
  },
  {
    id: "moonshotai/Kimi-K2-Instruct", aliases: ["moonshotai/Kimi-K2-Instruct-0905"], kind: "moe", totalParamsB: 1000, activeParamsB: 32,
    layers: 61, hiddenSize: 7168, attentionHeads: 64, kvHeads: 64, headDim: 128, attention: "MLA", kvLatentDim: 576, experts: 384, expertsPerToken: 8, vocabSize: 163840, maxContext: 131072, defaultDtype: "fp8",
    source: `${AIC("moonshotai--Kimi-K2-Instruct")}; ${CARD("moonshotai/Kimi-K2-Instruct", "1T total, 32B activated")}`,
  },
  {
    id: "mistralai/Mixtral-8x7B-Instruct-v0.1", aliases: ["mistralai/Mixtral-8x7B-v0.1"], kind: "moe", totalParamsB: 46.7, activeParamsB: 12.9,
    layers: 32, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, attention: "GQA", experts: 8, expertsPerToken: 2, vocabSize: 32000, maxContext: 32768, defaultDtype: "bfloat16",
    source: `${AIC("mistralai--Mixtral-8x7B-v0.1")}; parameters 46.7B total, 12.9B per token: Mistral AI, "Mixtral of experts", https://mistral.ai/news/mixtral-of-experts`,
  },
  {
    id: "mistralai/Mixtral-8x22B-Instruct-v0.1", aliases: ["mistralai/Mixtral-8x22B-v0.1"], kind: "moe", totalParamsB: 141, activeParamsB: 39,
    layers: 56, hiddenSize: 6144, attentionHeads: 48, kvHeads: 8, headDim: 128, attention: "GQA", experts: 8, expertsPerToken: 2, vocabSize: 32000, maxContext: 65536, defaultDtype: "bfloat16",
    source: `${AIC("mistralai--Mixtral-8x22B-v0.1")}; parameters 141B total, 39B active: Mistral AI, "Cheaper, Better, Faster, Stronger", https://mistral.ai/news/mixtral-8x22b`,
  },
  {
    id: "mistralai/Mistral-7B-Instruct-v0.3", aliases: ["mistralai/Mistral-7B-v0.3"], kind: "dense", totalParamsB: 7.25, activeParamsB: 7.25,
    layers: 32, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, attention: "GQA", vocabSize: 32768, maxContext: 32768, defaultDtype: "bfloat16",
    source: "config.json https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.3 (same layout as Mixtral-8x7B's attention; vocabulary extended to 32768 in v0.3); 7.25B from the safetensors count; not checked again against config.json (2026-11)",
  },
  {
    id: "openai/gpt-oss-20b", aliases: [], kind: "moe", totalParamsB: 20.9, activeParamsB: 3.6,
    layers: 24, hiddenSize: 2880, attentionHeads: 64, kvHeads: 8, headDim: 64, attention: "GQA", experts: 32, expertsPerToken: 4, vocabSize: 201088, maxContext: 131072, defaultDtype: "mxfp4", checkpointGiB: 12.8,
    source: `${AIC("openai--gpt-oss-20b")} (quantization_config mxfp4; alternate layers use a 128-token sliding window, not modelled); parameters 20.9B total / 3.6B active and checkpoint 12.8 GiB: OpenAI gpt-oss model card, https://openai.com/index/gpt-oss-model-card/ (table 1)`,
  },
  {
    id: "openai/gpt-oss-120b", aliases: [], kind: "moe", totalParamsB: 116.8, activeParamsB: 5.1,
    layers: 36, hiddenSize: 2880, attentionHeads: 64, kvHeads: 8, headDim: 64, attention: "GQA", experts: 128, expertsPerToken: 4, vocabSize: 201088, maxContext: 131072, defaultDtype: "mxfp4", checkpointGiB: 60.8,
    source: `${AIC("openai--gpt-oss-120b")}; parameters 116.8B total / 5.1B active and checkpoint 60.8 GiB: OpenAI gpt-oss model card, https://openai.com/index/gpt-oss-model-card/ (table 1)`,
  },
  {
    id: "google/gemma-3-27b-it", aliases: ["google/gemma-3-27b-pt"], kind: "dense", totalParamsB: 27.4, activeParamsB: 27.4,
    layers: 62, hiddenSize: 5376, attentionHeads: 32, kvHeads: 16, headDim: 128, attention: "GQA", vocabSize: 262208, maxContext: 131072, defaultDtype: "bfloat16",
    source: "62 layers, d_model 5376, 32/16 heads, head_dim 128, sliding window 1024 on 5 of 6 layers (not modelled: the KV estimate is an upper bound): a public transcription of config.json text_config; context 128K: Google's Gemma 3 model card https://ai.google.dev/gemma/docs/core/model_card_3; 27.4B and vocabulary 262208 from the Hugging Face page, not checked again (2026-11)",
  },
  {
    id: "meta-llama/Llama-4-Scout-17B-16E-Instruct", aliases: [], kind: "moe", totalParamsB: 109, activeParamsB: 17,
    layers: 48, hiddenSize: 5120, attentionHeads: 40, kvHeads: 8, headDim: 128, attention: "GQA", experts: 16, expertsPerToken: 1, vocabSize: 202048, maxContext: 10485760, defaultDtype: "bfloat16",
    source: `${AIC("meta-llama--Llama-4-Scout-17B-16E-Instruct")} (text_config); ${CARD("meta-llama/Llama-4-Scout-17B-16E-Instruct", "109B total, 17B active")}`,
  },
];

const byName = new Map<string, ModelArchitecture>();
for (const entry of MODEL_CATALOG) {
  for (const name of [entry.id, ...entry.aliases]) byName.set(name.toLowerCase(), entry);
}

/** The catalogue entry for a Hugging Face id or alias (case-insensitive), if any. */
export function findCatalogModel(name: string): ModelArchitecture | undefined {
  return byName.get(name.toLowerCase());
}

/**
 * The Hugging Face `config.json` fields a user supplies for a model the catalogue lacks. Names
 * follow the config file; for a multimodal model give the language model's (`text_config`) values.
 */
export const HfArchitectureInput = z
  .object({
    num_hidden_layers: count.describe("Transformer layers."),
    hidden_size: count.describe("Model width."),
    num_attention_heads: count.describe("Query heads."),
    num_key_value_heads: count.optional().describe("KV heads; defaults to num_attention_heads (MHA)."),
    head_dim: count.optional().describe("Per-head width; defaults to hidden_size ÷ num_attention_heads."),
    intermediate_size: count.optional().describe("Dense MLP width; needed unless the parameter counts are given."),
    moe_intermediate_size: count.optional().describe("Width of one expert's MLP (MoE)."),
    num_experts: count.optional().describe("Routed experts per layer (also read from num_local_experts / n_routed_experts)."),
    num_local_experts: count.optional(),
    n_routed_experts: count.optional(),
    n_shared_experts: count.optional().describe("Always-active shared experts (DeepSeek)."),
    num_experts_per_tok: count.optional().describe("Experts each token is routed to."),
    kv_lora_rank: count.optional().describe("MLA latent rank (DeepSeek); makes the KV cache one latent per token and layer."),
    qk_rope_head_dim: count.optional().describe("MLA rotary part cached beside the latent."),
    vocab_size: count.optional().describe("Vocabulary; defaults to 32000 for the parameter estimate."),
    max_position_embeddings: count.optional().describe("Context length; defaults to 8192."),
    torch_dtype: z.string().max(LIMITS.text).optional().describe("`bfloat16`/`float16` (2 bytes) or an FP8 checkpoint (`fp8`, 1 byte)."),
    totalParamsB: positive.optional().describe("Total parameters, billions, when known (overrides the estimate from the config)."),
    activeParamsB: positive.optional().describe("Active parameters per token, billions (MoE), when known."),
  })
  .describe("Hugging Face config.json fields of a model the catalogue does not know.")
  .meta({ id: "HfArchitectureInput" });
export type HfArchitectureInput = z.infer<typeof HfArchitectureInput>;

/**
 * Parameter estimate from config fields, the same formula AIConfigurator's naive generator uses
 * (embedding + per layer: attention projections + MLP), extended for GQA, MLA and shared experts:
 * - attention: q and o are hidden × heads·headDim each, k and v hidden × kvHeads·headDim each;
 *   MLA compresses K/V through a rank-r latent, ≈ hidden·(r + rope) + r·heads·2·headDim;
 * - MLP: 3 · hidden · width (gate, up, down); MoE: that per routed expert plus shared experts;
 *   the active count keeps only `num_experts_per_tok` routed experts;
 * - embedding and LM head: 2 · vocab · hidden (untied, the common case for these sizes).
 */
export function architectureFromHfConfig(name: string, config: HfArchitectureInput): ModelArchitecture {
  const heads = config.num_attention_heads;
  const headDim = config.head_dim ?? Math.round(config.hidden_size / heads);
  const mla = config.kv_lora_rank !== undefined;
  const kvHeads = config.num_key_value_heads ?? heads;
  const experts = config.num_experts ?? config.num_local_experts ?? config.n_routed_experts;
  const moe = experts !== undefined && experts > 1;
  const h = config.hidden_size;
  const attention = mla
    ? h * (config.kv_lora_rank! + (config.qk_rope_head_dim ?? 64)) + config.kv_lora_rank! * heads * 2 * headDim + 2 * h * heads * headDim
    : 2 * h * heads * headDim + 2 * h * kvHeads * headDim;
  const expertWidth = config.moe_intermediate_size ?? config.intermediate_size ?? 4 * h;
  const dense = 3 * h * (config.intermediate_size ?? 4 * h);
  const shared = 3 * h * expertWidth * (config.n_shared_experts ?? 0);
  const routedAll = moe ? 3 * h * expertWidth * experts! : 0;
  const routedActive = moe ? 3 * h * expertWidth * (config.num_experts_per_tok ?? 2) : 0;
  const vocab = config.vocab_size ?? 32000;
  const embedding = 2 * vocab * h;
  const layerTotal = attention + (moe ? routedAll + shared : dense);
  const layerActive = attention + (moe ? routedActive + shared : dense);
  const totalParamsB = config.totalParamsB ?? (embedding + config.num_hidden_layers * layerTotal) / 1e9;
  const activeParamsB = config.activeParamsB ?? (moe ? (embedding + config.num_hidden_layers * layerActive) / 1e9 : totalParamsB);
  const dtype = config.torch_dtype?.toLowerCase() ?? "bfloat16";
  return ModelArchitecture.parse({
    id: name,
    aliases: [],
    kind: moe ? "moe" : "dense",
    totalParamsB,
    activeParamsB: Math.min(activeParamsB, totalParamsB),
    layers: config.num_hidden_layers,
    hiddenSize: h,
    attentionHeads: heads,
    kvHeads,
    headDim,
    attention: mla ? "MLA" : kvHeads < heads ? "GQA" : "MHA",
    ...(mla && { kvLatentDim: config.kv_lora_rank! + (config.qk_rope_head_dim ?? 64) }),
    ...(moe && { experts, expertsPerToken: config.num_experts_per_tok ?? 2 }),
    vocabSize: vocab,
    maxContext: config.max_position_embeddings ?? 8192,
    defaultDtype: dtype.includes("fp8") || dtype.includes("float8") ? "fp8" : "bfloat16",
    source: "user-supplied architecture (Hugging Face config.json fields); parameters estimated from it unless given",
  });
}

/** Weight bytes of a model in a dtype: the published checkpoint size for mixed-precision formats. */
export function modelWeightBytes(arch: ModelArchitecture, dtype: ModelDtype = arch.defaultDtype): number {
  if (dtype === arch.defaultDtype && arch.checkpointGiB !== undefined) return arch.checkpointGiB * 1024 ** 3;
  return arch.totalParamsB * 1e9 * DTYPE_BYTES[dtype];
}

import { describe, expect, it } from "vitest";
import { GPU_PROFILES, GPU_TYPES, GpuCatalogEntry } from "../../src/domain/gpu-profiles.ts";
import { architectureFromHfConfig, findCatalogModel, MODEL_CATALOG, ModelArchitecture, modelWeightBytes, type HfArchitectureInput } from "../../src/domain/model-catalog.ts";
import { modelFactsForName } from "../../src/domain/model-sizes.ts";

describe("the model catalogue", () => {
  it("holds at least 20 models, each valid, uniquely named and with a source", () => {
    expect(MODEL_CATALOG.length).toBeGreaterThanOrEqual(20);
    const names = MODEL_CATALOG.flatMap((m) => [m.id, ...m.aliases].map((n) => n.toLowerCase()));
    expect(new Set(names).size).toBe(names.length);
    for (const entry of MODEL_CATALOG) {
      expect(ModelArchitecture.parse(entry)).toEqual(entry);
      expect(entry.source.length).toBeGreaterThan(20);
      // Served by GET /v1/catalog/models: a source says where a figure comes from and, when it
      // was not checked against the published file, says so with a date — never how it was written.
      expect(entry.source, entry.id).not.toMatch(/\bsession\b|re-verified|\/work\//i);
      if (/not checked/.test(entry.source)) expect(entry.source, entry.id).toMatch(/\(\d{4}-\d{2}\)/);
      expect(entry.activeParamsB).toBeLessThanOrEqual(entry.totalParamsB);
      expect(entry.kind === "moe").toBe(entry.experts !== undefined);
      expect(entry.attention === "MLA").toBe(entry.kvLatentDim !== undefined);
    }
  });

  it.each([
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.1-405B-Instruct",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-235B-A22B",
    "Qwen/Qwen2.5-VL-7B-Instruct",
    "deepseek-ai/DeepSeek-V3",
    "deepseek-ai/DeepSeek-R1",
    "deepseek-ai/DeepSeek-V2-Lite",
    "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "openai/gpt-oss-20b",
    "openai/gpt-oss-120b",
    "google/gemma-3-27b-it",
  ])("knows %s (case-insensitive, aliases too)", (id) => {
    expect(findCatalogModel(id)?.id).toBe(id);
    expect(findCatalogModel(id.toUpperCase())?.id).toBe(id);
  });

  it("covers dense and MoE, GQA and MLA", () => {
    const kinds = new Set(MODEL_CATALOG.map((m) => `${m.kind}/${m.attention}`));
    for (const k of ["dense/GQA", "moe/GQA", "moe/MLA"]) expect(kinds).toContain(k);
  });

  it.each([
    ["openai/gpt-oss-120b", 60.8],
    ["deepseek-ai/DeepSeek-V3", (671e9 * 1) / 1024 ** 3],
    ["meta-llama/Llama-3.1-8B-Instruct", (8.03e9 * 2) / 1024 ** 3],
  ])("weights of %s: %f GiB as published", (id, gib) => {
    expect(modelWeightBytes(findCatalogModel(id)!) / 1024 ** 3).toBeCloseTo(gib, 1);
  });

  it("the simulator's facts for a catalogued name are that model's own (Qwen3-8B has 36 layers, not the 8B class's 32)", () => {
    expect(modelFactsForName("Qwen/Qwen3-8B").layers).toBe(36);
    expect(modelFactsForName("unknown/thing-8B").layers).toBe(32);
  });
});

describe("parameters estimated from a config.json", () => {
  // The configs of catalogue models (their own config.json values), against their published counts.
  it.each<[string, HfArchitectureInput, number, number]>([
    ["Llama-3.1-8B", { num_hidden_layers: 32, hidden_size: 4096, num_attention_heads: 32, num_key_value_heads: 8, intermediate_size: 14336, vocab_size: 128256 }, 8.03, 8.03],
    ["Llama-3.1-70B", { num_hidden_layers: 80, hidden_size: 8192, num_attention_heads: 64, num_key_value_heads: 8, intermediate_size: 28672, vocab_size: 128256 }, 70.6, 70.6],
    ["Qwen3-32B", { num_hidden_layers: 64, hidden_size: 5120, num_attention_heads: 64, num_key_value_heads: 8, head_dim: 128, intermediate_size: 25600, vocab_size: 151936 }, 32.8, 32.8],
    ["Mixtral-8x7B", { num_hidden_layers: 32, hidden_size: 4096, num_attention_heads: 32, num_key_value_heads: 8, intermediate_size: 14336, num_local_experts: 8, num_experts_per_tok: 2, vocab_size: 32000 }, 46.7, 12.9],
    ["Qwen3-30B-A3B", { num_hidden_layers: 48, hidden_size: 2048, num_attention_heads: 32, num_key_value_heads: 4, head_dim: 128, moe_intermediate_size: 768, num_experts: 128, num_experts_per_tok: 8, vocab_size: 151936 }, 30.5, 3.3],
    ["Qwen3-235B-A22B", { num_hidden_layers: 94, hidden_size: 4096, num_attention_heads: 64, num_key_value_heads: 4, head_dim: 128, moe_intermediate_size: 1536, num_experts: 128, num_experts_per_tok: 8, vocab_size: 151936 }, 235, 22],
  ])("%s: within 10%% of %f B total and %f B active", (name, config, total, active) => {
    const arch = architectureFromHfConfig(name, config);
    expect(Math.abs(arch.totalParamsB / total - 1)).toBeLessThan(0.1);
    expect(Math.abs(arch.activeParamsB / active - 1)).toBeLessThan(0.1);
  });

  it.each<[HfArchitectureInput, string]>([
    [{ num_hidden_layers: 24, hidden_size: 2048, num_attention_heads: 16 }, "MHA"],
    [{ num_hidden_layers: 24, hidden_size: 2048, num_attention_heads: 16, num_key_value_heads: 4 }, "GQA"],
    [{ num_hidden_layers: 24, hidden_size: 2048, num_attention_heads: 16, kv_lora_rank: 512, qk_rope_head_dim: 64 }, "MLA"],
  ])("%j is %s", (config, attention) => {
    expect(architectureFromHfConfig("x/y", config).attention).toBe(attention);
  });
});

describe("the GPU catalogue", () => {
  it.each(GPU_TYPES)("%s has memory, bandwidth, BF16, FP8 (or none), interconnect and a source", (id) => {
    const gpu = GPU_PROFILES[id];
    expect(gpu.memoryGb).toBeGreaterThan(0);
    expect(gpu.hbmBandwidthGBs).toBeGreaterThan(0);
    expect(gpu.bf16Tflops).toBeGreaterThan(0);
    if (id.includes("a100") || id.includes("a10g")) expect(gpu.fp8Tflops).toBeNull();
    else expect(Math.abs(gpu.fp8Tflops! / gpu.bf16Tflops - 2)).toBeLessThan(0.05);
    expect(gpu.interconnect.bandwidthGBs).toBeGreaterThan(0);
    expect(gpu.gpusPerNode).toBe(8);
    expect(gpu.source).toMatch(/^https:\/\//);
    expect(GpuCatalogEntry.parse(gpu)).toEqual(gpu);
  });
});

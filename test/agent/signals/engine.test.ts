// One scrape → engine values: vLLM and SGLang names, sums over DP ranks, one TP rank per DP group,
// the renamed ITL and KV metrics read once, and absent only when the engine does not declare it.
import { describe, expect, it } from "vitest";
import { readEngineIdentity, readEngineValues } from "../../../src/agent/signals/engine.ts";
import { parseExposition } from "../../../src/agent/signals/exposition.ts";
import { fixture } from "./support.ts";

const read = (name: string, engine: "vllm" | "sglang") => readEngineValues(parseExposition(fixture(name)), engine);

describe("readEngineValues", () => {
  it("sums vLLM's per-engine (DP rank) series; KV usage is their mean; aborts and errors are no successes", () => {
    expect(read("vllm-0.11-dp2.txt", "vllm")).toEqual({
      running: 5,
      waiting: 1,
      kvUsage: 0.375,
      // ITL from inter_token_latency_seconds only, although 0.11 also emits time_per_output_token_seconds.
      ttft: { sum: 2.4, count: 21 },
      itl: { sum: 65, count: 6500 },
      promptTokens: 2000,
      generationTokens: 8000,
      requestsSucceeded: 20,
    });
  });

  it("counts SGLang's scheduler gauges once per DP rank when every TP rank reports", () => {
    expect(read("sglang-dp2-tp2-all-schedulers.txt", "sglang")).toEqual({
      running: 10,
      waiting: 3,
      kvUsage: 0.5,
      ttft: { sum: 6, count: 30 },
      itl: { sum: 45, count: 9000 },
      promptTokens: 3000,
      generationTokens: 9000,
      requestsSucceeded: 30,
    });
  });

  it.each([
    ["sim-vllm-dp2.txt", "vllm"],
    ["sim-sglang-dp2.txt", "sglang"],
  ] as const)("reads the simulator's %s after three requests of 8 tokens", (file, engine) => {
    const values = read(file, engine);
    expect(values).toMatchObject({ running: 0, waiting: 0, kvUsage: 0, promptTokens: 63, generationTokens: 24, requestsSucceeded: 3 });
    expect(values.ttft!.count).toBe(3);
    expect(values.ttft!.sum).toBeGreaterThan(0);
    // 8 tokens per request: 7 intervals each.
    expect(values.itl!.count).toBe(21);
  });

  it("reads a declared family without series as 0 (vLLM's request_success before any request)", () => {
    const values = read("sim-vllm-dp2-idle.txt", "vllm");
    expect(values.requestsSucceeded).toBe(0);
    expect(values.ttft).toEqual({ sum: 0, count: 0 });
  });

  it("falls back to the older vLLM names when the newer are not declared", () => {
    const text = [
      "# TYPE vllm:gpu_cache_usage_perc gauge",
      'vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.75',
      "# TYPE vllm:time_per_output_token_seconds histogram",
      'vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4',
      'vllm:time_per_output_token_seconds_sum{engine="0",model_name="m"} 0.2',
      'vllm:time_per_output_token_seconds_count{engine="0",model_name="m"} 4',
    ].join("\n");
    expect(readEngineValues(parseExposition(text), "vllm")).toEqual({ kvUsage: 0.75, itl: { sum: 0.2, count: 4 } });
  });

  it("leaves out what the engine does not expose, and never reads the other engine's names", () => {
    expect(readEngineValues(parseExposition(fixture("vllm-0.11-dp2.txt")), "sglang")).toEqual({});
    expect(readEngineValues(parseExposition("# TYPE vllm:num_requests_running gauge\n"), "vllm")).toEqual({ running: 0 });
  });
});

describe("readEngineIdentity", () => {
  it.each([
    ["vllm-0.11-dp2.txt", "vllm", { processStartTime: 1.76412345678e9, ranks: ["0", "1"] }],
    ["sim-vllm-dp2.txt", "vllm", { ranks: ["0", "1"] }],
    ["sim-sglang-dp2.txt", "sglang", { ranks: ["0", "1"] }],
    ["sglang-dp2-tp2-all-schedulers.txt", "sglang", { ranks: ["0", "1"] }],
  ] as const)("%s (%s) → %j", (file, engine, identity) => {
    expect(readEngineIdentity(parseExposition(fixture(file)), engine)).toEqual(identity);
  });

  it("gives an SGLang server without DP one rank", () => {
    const text = '# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 1';
    expect(readEngineIdentity(parseExposition(text), "sglang").ranks).toEqual(["0"]);
  });
});

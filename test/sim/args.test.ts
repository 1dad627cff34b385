import { describe, expect, it } from "vitest";
import { parseEngineCommand, parseModelLength, parseSimCommand, UsageError } from "../../src/sim/args.ts";
import { bindAddress } from "../../src/sim/cli.ts";
import { KvBlockPool } from "../../src/sim/kv-cache.ts";
import { blockHashes, planGeneration, tokenize } from "../../src/sim/tokens.ts";

describe("engine command lines", () => {
  it("reads vLLM's serve line with its defaults", () => {
    const engine = parseEngineCommand(["vllm", "serve", "Qwen/Qwen3-8B"]);
    expect(engine).toMatchObject({
      flavour: "vllm",
      model: "Qwen/Qwen3-8B",
      servedModelNames: ["Qwen/Qwen3-8B"],
      host: "0.0.0.0",
      port: 8000,
      tensorParallel: 1,
      dataParallel: 1,
      prefixCaching: true,
      shutdownTimeout: 0,
      enableMetrics: true,
    });
  });

  it.each([
    [["-tp", "4"], { tensorParallel: 4 }],
    [["--tensor-parallel-size=2"], { tensorParallel: 2 }],
    [["--tensor_parallel_size", "8"], { tensorParallel: 8 }],
    [["-dp", "4", "-dpb", "ray", "--enable-elastic-ep"], { dataParallel: 4, dataParallelBackend: "ray", enableElasticEp: true }],
    [["-dp", "4", "--data-parallel-rank", "3"], { dataParallel: 4, dataParallelRank: 3 }],
    [["--served-model-name", "a", "b", "--port", "9000"], { servedModelNames: ["a", "b"], port: 9000 }],
    [["--no-enable-prefix-caching"], { prefixCaching: false }],
    [["--enable-prefix-caching"], { prefixCaching: true }],
    [["--max-model-len", "32k"], { maxModelLen: 32000 }],
    [["--max-model-len", "32K"], { maxModelLen: 32768 }],
    [["--shutdown-timeout", "30"], { shutdownTimeout: 30 }],
    [["--quantization", "fp8", "--kv-cache-dtype", "fp8"], { weightBytes: 1, kvCacheBytes: 1 }],
    [["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'], { kvTransfer: { kv_connector: "NixlConnector", kv_role: "kv_both" } }],
    [["--kv-transfer-config.kv_connector", "NixlConnector", "--kv-transfer-config.kv_role", "kv_both"], { kvTransfer: { kv_connector: "NixlConnector", kv_role: "kv_both" } }],
    [["--trust-remote-code", "--some-future-flag", "value"], { ignoredFlags: ["--trust-remote-code", "--some-future-flag"] }],
  ])("vllm serve M %j → %j", (flags, expected) => {
    expect(parseEngineCommand(["vllm", "serve", "M", ...flags])).toMatchObject(expected);
  });

  it("reads the python -m entry points of both engines", () => {
    expect(parseEngineCommand(["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "M"]).model).toBe("M");
    const sglang = parseEngineCommand(["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "org/M", "--tp", "2", "--dp-size", "2", "--enable-metrics", "--disaggregation-mode", "decode"]);
    expect(sglang).toMatchObject({
      flavour: "sglang",
      servedModelNames: ["org/M"],
      host: "127.0.0.1",
      port: 30000,
      tensorParallel: 2,
      dataParallel: 2,
      enableMetrics: true,
      disaggregationMode: "decode",
      bootstrapPort: 8998,
      // Decode servers run without the radix cache unless told otherwise.
      prefixCaching: false,
    });
  });

  it.each([
    [["vllm", "serve", "M", "--kv-transfer-config", '{"kv_connector":"NixlConnector"}'], /kv_role must be set/],
    [["vllm", "serve", "M", "--ec-transfer-config", '{"ec_connector":"ECSharedStorageConnector","ec_role":"ec_both"}'], /ec_role must be ec_producer or ec_consumer/],
    [["vllm", "serve", "M", "--ec-transfer-config", '{"ec_connector":"SharedStorageConnector","ec_role":"ec_producer"}'], /Unsupported connector type: SharedStorageConnector/],
    [["vllm", "serve", "M", "-tp", "zero"], /expects an integer/],
    [["vllm", "serve", "M", "-dp", "2", "--data-parallel-rank", "2"], /outside 0\.\.1/],
    [["python3", "-m", "sglang.launch_server"], /--model-path is required/],
    [["python3", "-m", "sglang.launch_server", "--model-path", "M", "--disaggregation-mode", "both"], /null, prefill or decode/],
    [["llama-server", "-m", "x.gguf"], /not a vLLM or SGLang command line/],
  ])("refuses %j", (tokens, message) => {
    expect(() => parseEngineCommand(tokens)).toThrow(message);
  });

  it("reads its own flags before --", () => {
    const { sim } = parseSimCommand(["--gpu-type", "nvidia-l4-24gb", "--latency-profile", "fast", "--seed", "3", "--", "vllm", "serve", "M"]);
    expect(sim).toMatchObject({ gpuType: "nvidia-l4-24gb", timeScale: 0.1, seed: 3, zeroLatency: false });
    expect(parseSimCommand(["--zero-latency", "--", "vllm", "serve", "M"]).sim.timeScale).toBe(0);
    expect(parseSimCommand(["--latency-profile", "0.5", "--", "vllm", "serve", "M"]).sim.timeScale).toBe(0.5);
    expect(() => parseSimCommand(["--gpu-type", "nvidia-v100-16gb", "--", "vllm", "serve", "M"])).toThrow(UsageError);
    expect(() => parseSimCommand(["vllm", "serve", "M"])).toThrow(/missing `--`/);
  });

  it.each([
    ["8192", 8192],
    ["1k", 1000],
    ["1K", 1024],
    ["25.6k", 25600],
    ["auto", undefined],
    ["-1", undefined],
  ])("--max-model-len %s → %s", (raw, expected) => {
    expect(parseModelLength(raw)).toBe(expected);
  });

  it.each([
    ["0.0.0.0", "127.0.0.9", "127.0.0.9"],
    ["::", "127.0.0.9", "127.0.0.9"],
    ["0.0.0.0", undefined, "0.0.0.0"],
    ["127.0.0.1", "127.0.0.9", "127.0.0.1"],
    ["", undefined, "0.0.0.0"],
  ])("told --host %j with BERTH_POD_IP %j, binds %s", (host, podIp, expected) => {
    expect(bindAddress(host, podIp)).toBe(expected);
  });
});

describe("tokens", () => {
  it("counts about one token per short word, and only counts past a limit", () => {
    expect(tokenize("Hello, world!").ids).toHaveLength(4);
    const long = tokenize("word ".repeat(10_000).trim(), 100);
    expect(long.count).toBe(10_000);
    expect(long.ids).toHaveLength(100);
  });

  it("hashes full blocks with their prefix, so a shared prefix shares hashes", () => {
    const a = blockHashes(tokenize("same start ".repeat(20) + "then A").ids, 16);
    const b = blockHashes(tokenize("same start ".repeat(20) + "then B").ids, 16);
    const c = blockHashes(tokenize("other start " + "same start ".repeat(20)).ids, 16);
    expect(a.slice(0, 2)).toEqual(b.slice(0, 2));
    expect(c[0]).not.toBe(a[0]);
  });

  it("generates the same text for the same seed key", () => {
    const one = planGeneration("k");
    const two = planGeneration("k");
    expect([0, 1, 2, 3].map(one.piece)).toEqual([0, 1, 2, 3].map(two.piece));
    expect(one.naturalLength).toBe(two.naturalLength);
    expect(planGeneration("other").piece(5)).not.toBe(one.piece(5) + "x");
  });
});

describe("KV block pool", () => {
  it("keeps freed prompt blocks cached and evicts the least recently freed first", () => {
    const pool = new KvBlockPool(4, 16);
    expect(pool.allocate([], 2)).toBe(true);
    pool.register("a");
    pool.register("b");
    pool.release(["a", "b"], 0);
    expect(pool.usage).toBe(0);
    expect(pool.matchPrefix(["a", "b"])).toBe(2);
    // Three fresh blocks: two empty ones, then the tail block "b" goes first.
    expect(pool.allocate([], 3)).toBe(true);
    expect(pool.matchPrefix(["a"])).toBe(1);
    expect(pool.matchPrefix(["a", "b"])).toBe(1);
    expect(pool.allocate([], 2)).toBe(false);
    expect(pool.usage).toBe(0.75);
  });

  it("shares a cached block between holders and frees it when the last lets go", () => {
    const pool = new KvBlockPool(2, 16);
    pool.allocate([], 1);
    pool.register("p");
    expect(pool.allocate(["p"], 1)).toBe(true);
    expect(pool.usedBlocks).toBe(2);
    pool.release(["p"], 0);
    expect(pool.usedBlocks).toBe(2);
    pool.release(["p"], 1);
    expect(pool.usedBlocks).toBe(0);
    expect(pool.cachedBlocks).toBe(1);
  });
});

// Parses `berth sim-engine [own flags] -- <engine command line>`: the simulator's own flags, then a
// real vLLM or SGLang command line, read with each engine's spellings and defaults. Unknown engine
// flags are kept and ignored (extraArgs may carry anything), so only what the simulator models is read.
import { parseArgs } from "node:util";
import { GPU_TYPES, isGpuType, type GpuType } from "../domain/gpu-profiles.ts";
import { FlagReader, readFlags, UsageError } from "../domain/flag-reader.ts";
import type { EcTransferConfig } from "./encoder.ts";

/** The shared-storage EC connector, by its name before and after vLLM 0.12.0. */
const SHARED_STORAGE_EC_CONNECTORS = ["ECExampleConnector", "ECSharedStorageConnector"];

export type Flavour = "vllm" | "sglang";
export type DisaggregationMode = "null" | "prefill" | "decode";

export interface SimOptions {
  gpuType: GpuType;
  /** Profile name as given (`default`, `fast`, `turbo`, or a number). */
  latencyProfile: string;
  /** Real ms per simulated ms; 0 with --zero-latency. */
  timeScale: number;
  seed: number;
  zeroLatency: boolean;
  /** Model-time seconds an elastic-EP resize takes (new ranks start, weights load, EPLB reshuffles). */
  elasticScaleSeconds: number;
}

export interface KvTransferConfig {
  kv_connector?: string;
  kv_role?: string;
  engine_id?: string;
  [key: string]: unknown;
}

export interface EngineArgs {
  flavour: Flavour;
  /** `vllm serve <model>` / `--model`, SGLang `--model-path`. */
  model: string;
  /** Names requests may use; responses and metrics use the first. */
  servedModelNames: string[];
  host: string;
  port: number;
  tensorParallel: number;
  pipelineParallel: number;
  dataParallel: number;
  /** vLLM external load balancing: this process is rank `dataParallelRank` of `dataParallel`. */
  dataParallelRank?: number;
  dataParallelBackend: string;
  enableElasticEp: boolean;
  headless: boolean;
  maxModelLen?: number;
  gpuMemoryUtilization: number;
  maxRunning?: number;
  maxBatchedTokens?: number;
  blockSize: number;
  prefixCaching: boolean;
  /** vLLM `--shutdown-timeout` seconds: 0 aborts in-flight requests on SIGTERM, > 0 drains that long. */
  shutdownTimeout: number;
  kvTransfer?: KvTransferConfig;
  /** vLLM `--ec-transfer-config`: encoder-cache disaggregation (EPD). */
  ecTransfer?: EcTransferConfig;
  apiKeys: string[];
  enableRequestIdHeaders: boolean;
  enablePromptTokensDetails: boolean;
  enableServerLoadTracking: boolean;
  weightBytes: number;
  kvCacheBytes: number;
  // SGLang
  enableMetrics: boolean;
  disaggregationMode: DisaggregationMode;
  bootstrapPort: number;
  transferBackend: string;
  skipServerWarmup: boolean;
  /** SGLang multi-node: ranks ≥ 1 serve only a dummy health server. */
  nodeRank: number;
  /** Flags read but not modelled, for the start-up log. */
  ignoredFlags: string[];
}

export interface SimCommand {
  sim: SimOptions;
  engine: EngineArgs;
}

export { UsageError };

export const SIM_USAGE = `usage: berth sim-engine [--gpu-type ID] [--latency-profile default|fast|turbo|<scale>] [--seed N]
                          [--zero-latency] [--elastic-scale-seconds S] -- <engine command line>

engine command lines:
  vllm serve MODEL [vLLM flags]
  python3 -m vllm.entrypoints.openai.api_server --model MODEL [vLLM flags]
  python3 -m sglang.launch_server --model-path MODEL [SGLang flags]

--gpu-type       ${GPU_TYPES.join(", ")} (default nvidia-h100-80gb)
--latency-profile  how fast simulated time runs: default (1×), fast (0.1×), turbo (0.01×) or a number
--zero-latency   answer at once, no model delays (router overhead measurements)
`;

/** Latency profiles scale every simulated duration (model steps, KV transfers, health polls, resizes). */
export const LATENCY_PROFILES: Readonly<Record<string, number>> = { default: 1, fast: 0.1, turbo: 0.01 };

export function parseSimCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): SimCommand {
  const split = argv.indexOf("--");
  if (split < 0) throw new UsageError("missing `--` before the engine command line");
  const sim = parseOwnFlags(argv.slice(0, split));
  const engine = parseEngineCommand(argv.slice(split + 1), env);
  return { sim, engine };
}

function parseOwnFlags(args: string[]): SimOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        "gpu-type": { type: "string", default: "nvidia-h100-80gb" },
        "latency-profile": { type: "string", default: "default" },
        seed: { type: "string", default: "0" },
        "zero-latency": { type: "boolean", default: false },
        "elastic-scale-seconds": { type: "string", default: "2" },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const gpuType = values["gpu-type"]!;
  if (!isGpuType(gpuType)) throw new UsageError(`unknown --gpu-type ${gpuType}; one of ${GPU_TYPES.join(", ")}`);
  const profile = values["latency-profile"]!;
  const scale = LATENCY_PROFILES[profile] ?? Number(profile);
  if (!Number.isFinite(scale) || scale < 0) throw new UsageError(`unknown --latency-profile ${profile}; default, fast, turbo or a number ≥ 0`);
  const seed = Number(values.seed);
  if (!Number.isInteger(seed)) throw new UsageError(`--seed must be an integer, got ${values.seed}`);
  const elastic = Number(values["elastic-scale-seconds"]);
  if (!Number.isFinite(elastic) || elastic < 0) throw new UsageError("--elastic-scale-seconds must be a number ≥ 0");
  const zeroLatency = values["zero-latency"] === true;
  return { gpuType, latencyProfile: profile, timeScale: zeroLatency ? 0 : scale, seed, zeroLatency, elasticScaleSeconds: elastic };
}

// ---------------------------------------------------------------------------------------------
// Engine command lines

const VLLM_ALIASES: Readonly<Record<string, string>> = {
  "-tp": "--tensor-parallel-size",
  "-pp": "--pipeline-parallel-size",
  "-dp": "--data-parallel-size",
  "-dpl": "--data-parallel-size-local",
  "-dpn": "--data-parallel-rank",
  "-dpr": "--data-parallel-start-rank",
  "-dpa": "--data-parallel-address",
  "-dpp": "--data-parallel-rpc-port",
  "-dpb": "--data-parallel-backend",
  "-dph": "--data-parallel-hybrid-lb",
  "-dpe": "--data-parallel-external-lb",
  "-dpm": "--data-parallel-multi-port-external-lb",
  "-ep": "--enable-expert-parallel",
  "-asc": "--api-server-count",
  "-n": "--nnodes",
  "-r": "--node-rank",
  "-q": "--quantization",
};

const SGLANG_ALIASES: Readonly<Record<string, string>> = {
  "--model": "--model-path",
  "--tensor-parallel-size": "--tp-size",
  "--tp": "--tp-size",
  "--data-parallel-size": "--dp-size",
  "--dp": "--dp-size",
  "--expert-parallel-size": "--ep-size",
  "--ep": "--ep-size",
  "--pipeline-parallel-size": "--pp-size",
  "--pp": "--pp-size",
  "--nccl-init-addr": "--dist-init-addr",
};

/** `1k` = 1000, `1K` = 1024, `25.6k`, `auto`/`-1` = fit to memory (undefined), as vLLM reads it. */
export function parseModelLength(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === "auto" || raw === "-1") return undefined;
  const match = /^(\d+(?:\.\d+)?)([kKmMgG]?)$/.exec(raw);
  if (!match) throw new UsageError(`--max-model-len expects a length like 8192, 8k or 8K, got ${raw}`);
  const unit = match[2]!;
  const factor = unit === "" ? 1 : unit === unit.toLowerCase() ? 1000 ** ("kmg".indexOf(unit) + 1) : 1024 ** ("KMG".indexOf(unit) + 1);
  return Math.round(Number(match[1]) * factor);
}

function dtypeBytes(dtype: string | undefined, quantization: string | undefined): number {
  if (quantization && /fp8|int8|w8a8|compressed-tensors/.test(quantization)) return 1;
  if (quantization && /awq|gptq|int4|w4a16|bitsandbytes/.test(quantization)) return 0.5;
  if (dtype && /fp8|float8/.test(dtype)) return 1;
  if (dtype && /float32/.test(dtype)) return 4;
  return 2;
}

function detectFlavour(tokens: readonly string[]): { flavour: Flavour; rest: string[] } {
  const program = (tokens[0] ?? "").split("/").at(-1)!;
  if (program === "vllm" && tokens[1] === "serve") return { flavour: "vllm", rest: tokens.slice(2) };
  if (program === "sglang" && tokens[1] === "serve") return { flavour: "sglang", rest: tokens.slice(2) };
  if (/^python(\d(\.\d+)?)?$/.test(program) && tokens[1] === "-m") {
    const module = tokens[2] ?? "";
    if (module.startsWith("vllm.entrypoints")) return { flavour: "vllm", rest: tokens.slice(3) };
    if (module === "sglang.launch_server") return { flavour: "sglang", rest: tokens.slice(3) };
  }
  throw new UsageError(`not a vLLM or SGLang command line: ${tokens.join(" ") || "(empty)"}`);
}

export function parseEngineCommand(tokens: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): EngineArgs {
  const { flavour, rest } = detectFlavour(tokens);
  const parsed = readFlags(rest, flavour === "vllm" ? VLLM_ALIASES : SGLANG_ALIASES);
  const flags = new FlagReader(parsed);
  return flavour === "vllm" ? readVllm(flags, parsed.positionals, env) : readSglang(flags);
}

function readVllm(flags: FlagReader, positionals: string[], env: Readonly<Record<string, string | undefined>>): EngineArgs {
  // `vllm serve` takes the model as its one positional; vLLM's own default is Qwen/Qwen3-0.6B.
  const model = positionals[0] ?? flags.string("--model") ?? "Qwen/Qwen3-0.6B";
  flags.string("--model");
  const apiKeys = flags.list("--api-key") ?? (env.VLLM_API_KEY ? [env.VLLM_API_KEY] : []);
  const kvTransfer = flags.json("--kv-transfer-config") as KvTransferConfig | undefined;
  if (kvTransfer?.kv_connector && !kvTransfer.kv_role) {
    throw new UsageError("--kv-transfer-config: kv_role must be set when kv_connector is set (kv_producer, kv_consumer or kv_both)");
  }
  // vllm/config/ec_transfer.py: ec_role must be one of ECRole once ec_connector is set.
  const ecTransfer = flags.json("--ec-transfer-config") as EcTransferConfig | undefined;
  // vllm/distributed/ec_transfer/ec_connector/factory.py: a name it has no registration for is
  // "Unsupported connector type". The shared-storage connector is ECExampleConnector since
  // https://github.com/vllm-project/vllm/pull/30201 (ECSharedStorageConnector up to 0.12.0); the
  // simulator answers to both, as it stands for every release.
  if (ecTransfer?.ec_connector && !SHARED_STORAGE_EC_CONNECTORS.includes(String(ecTransfer.ec_connector))) {
    throw new UsageError(`--ec-transfer-config: Unsupported connector type: ${String(ecTransfer.ec_connector)}`);
  }
  if (ecTransfer?.ec_connector && ecTransfer.ec_role !== "ec_producer" && ecTransfer.ec_role !== "ec_consumer") {
    throw new UsageError(`--ec-transfer-config: ec_role must be ec_producer or ec_consumer when ec_connector is set, got ${String(ecTransfer.ec_role)}`);
  }
  const engine: EngineArgs = {
    flavour: "vllm",
    model,
    servedModelNames: flags.list("--served-model-name") ?? [model],
    host: flags.string("--host") ?? "0.0.0.0",
    port: flags.int("--port", 8000),
    tensorParallel: flags.int("--tensor-parallel-size", 1),
    pipelineParallel: flags.int("--pipeline-parallel-size", 1),
    dataParallel: flags.int("--data-parallel-size", 1),
    dataParallelRank: flags.int("--data-parallel-rank"),
    dataParallelBackend: flags.string("--data-parallel-backend") ?? "mp",
    enableElasticEp: flags.bool("--enable-elastic-ep"),
    headless: flags.bool("--headless"),
    maxModelLen: parseModelLength(flags.string("--max-model-len")),
    gpuMemoryUtilization: flags.number("--gpu-memory-utilization", 0.9),
    maxRunning: flags.int("--max-num-seqs"),
    maxBatchedTokens: flags.int("--max-num-batched-tokens"),
    blockSize: flags.int("--block-size", 16),
    prefixCaching: flags.bool("--enable-prefix-caching", true),
    shutdownTimeout: flags.number("--shutdown-timeout", 0),
    kvTransfer,
    ecTransfer,
    apiKeys,
    enableRequestIdHeaders: flags.bool("--enable-request-id-headers"),
    enablePromptTokensDetails: flags.bool("--enable-prompt-tokens-details"),
    enableServerLoadTracking: flags.bool("--enable-server-load-tracking"),
    weightBytes: dtypeBytes(flags.string("--dtype"), flags.string("--quantization")),
    kvCacheBytes: /fp8/.test(flags.string("--kv-cache-dtype") ?? "") ? 1 : 2,
    enableMetrics: true,
    disaggregationMode: "null",
    bootstrapPort: 8998,
    transferBackend: kvTransfer?.kv_connector ?? "",
    skipServerWarmup: false,
    nodeRank: 0,
    ignoredFlags: [],
  };
  engine.ignoredFlags = flags.unread();
  validateParallelism(engine);
  return engine;
}

function readSglang(flags: FlagReader): EngineArgs {
  const model = flags.string("--model-path");
  if (!model) throw new UsageError("sglang.launch_server: --model-path is required");
  const mode = flags.string("--disaggregation-mode") ?? "null";
  if (mode !== "null" && mode !== "prefill" && mode !== "decode") {
    throw new UsageError(`--disaggregation-mode must be null, prefill or decode, got ${mode}`);
  }
  const apiKey = flags.string("--api-key");
  const engine: EngineArgs = {
    flavour: "sglang",
    model,
    // Unset, the served name is the whole --model-path string (not its basename).
    servedModelNames: [flags.string("--served-model-name") ?? model],
    host: flags.string("--host") ?? "127.0.0.1",
    port: flags.int("--port", 30000),
    tensorParallel: flags.int("--tp-size", 1),
    pipelineParallel: flags.int("--pp-size", 1),
    dataParallel: flags.int("--dp-size", 1),
    dataParallelBackend: "sglang",
    enableElasticEp: false,
    headless: false,
    maxModelLen: flags.int("--context-length"),
    gpuMemoryUtilization: flags.number("--mem-fraction-static", 0.88),
    maxRunning: flags.int("--max-running-requests"),
    maxBatchedTokens: flags.int("--chunked-prefill-size"),
    blockSize: 16,
    prefixCaching: !flags.bool("--disable-radix-cache") && (mode !== "decode" || flags.bool("--disaggregation-decode-enable-radix-cache")),
    shutdownTimeout: 0,
    kvTransfer: undefined,
    apiKeys: apiKey ? [apiKey] : [],
    enableRequestIdHeaders: false,
    enablePromptTokensDetails: flags.bool("--enable-cache-report"),
    enableServerLoadTracking: true,
    weightBytes: dtypeBytes(flags.string("--dtype"), flags.string("--quantization")),
    kvCacheBytes: /fp8/.test(flags.string("--kv-cache-dtype") ?? "") ? 1 : 2,
    enableMetrics: flags.bool("--enable-metrics"),
    disaggregationMode: mode,
    bootstrapPort: flags.int("--disaggregation-bootstrap-port", 8998),
    transferBackend: flags.string("--disaggregation-transfer-backend") ?? "mooncake",
    skipServerWarmup: flags.bool("--skip-server-warmup"),
    nodeRank: flags.int("--node-rank", 0),
    ignoredFlags: [],
  };
  engine.ignoredFlags = flags.unread();
  validateParallelism(engine);
  return engine;
}

function validateParallelism(engine: EngineArgs): void {
  for (const [name, value] of [
    ["tensor parallel size", engine.tensorParallel],
    ["pipeline parallel size", engine.pipelineParallel],
    ["data parallel size", engine.dataParallel],
  ] as const) {
    if (value < 1) throw new UsageError(`${name} must be ≥ 1, got ${value}`);
  }
  if (engine.dataParallelRank !== undefined && (engine.dataParallelRank < 0 || engine.dataParallelRank >= engine.dataParallel)) {
    throw new UsageError(`--data-parallel-rank ${engine.dataParallelRank} is outside 0..${engine.dataParallel - 1}`);
  }
  if (engine.port < 0 || engine.port > 65535) throw new UsageError(`--port ${engine.port} is not a port`);
}

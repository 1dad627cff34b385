// Assembles one simulated engine from its parsed command line: the model and GPU facts, the perf
// model, the DP ranks, the metrics, and the mutable lifecycle state the HTTP layer reads
// (starting / ready / draining, elastic scaling). Environment variables are read here, once.
import { randomUUID } from "node:crypto";
import { gpuProfile } from "../domain/gpu-profiles.ts";
import { modelFactsForName } from "../domain/model-sizes.ts";
import { createPerfModel, type PerfModel } from "../domain/perf-model.ts";
import type { EngineArgs, SimCommand, SimOptions } from "./args.ts";
import { parseElasticFaults, type ElasticFaults } from "./elastic-faults.ts";
import { SimEngine } from "./engine.ts";
import { createSglangMetrics, createVllmMetrics, type EngineMetrics } from "./metrics.ts";
import { ecSide, readVolumeMounts, type EcSide } from "./encoder.ts";
import { BootstrapRooms, type NixlSide } from "./pd.ts";

export interface Logger {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

export type Phase = "starting" | "ready" | "draining" | "stopping";

export interface EnvSettings {
  /** VLLM_SKIP_MODEL_NAME_VALIDATION=1 accepts any model name. */
  skipModelNameValidation: boolean;
  /** VLLM_ELASTIC_EP_DRAIN_REQUESTS=1: a resize first waits for running requests (up to drain_timeout). */
  elasticDrain: boolean;
  /** VLLM_SERVER_DEV_MODE=1 mounts /server_info and /reset_prefix_cache. */
  vllmDevMode: boolean;
  /** SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION (default true): /health runs a one-token generation. */
  sglangHealthGeneration: boolean;
  /** SGLANG_HEALTH_CHECK_TIMEOUT seconds (default 20). */
  sglangHealthTimeoutS: number;
  /** SGLANG_DISAGGREGATION_WAITING_TIMEOUT seconds (default 300): how long decode waits for its prefill. */
  pdWaitingTimeoutS: number;
  /** SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT seconds (default 300): how long prefill holds KV for its decode. */
  pdBootstrapTimeoutS: number;
  nixlHost: string;
  nixlPort: number;
  /** SIM_ELASTIC_FAULT (the simulator's own): faults injected into size-changing elastic resizes. */
  elasticFaults: ElasticFaults;
  /** SIM_ELASTIC_SCALE_SECONDS (the simulator's own): overrides --elastic-scale-seconds. */
  elasticScaleSeconds?: number;
  /** BERTH_VOLUME_MOUNTS (the simulated cluster's kubelet): the pod's mount paths → host directories. */
  volumeMounts: Record<string, string>;
  /** Values the simulator could not use and ignores: logged as errors at start. */
  ignored: { variable: string; value: string; reason: string }[];
}

export function readEnvSettings(env: Readonly<Record<string, string | undefined>>): EnvSettings {
  const flag = (name: string, fallback: boolean) => {
    const value = env[name];
    if (value === undefined || value === "") return fallback;
    return !["0", "false", "no", "off"].includes(value.toLowerCase());
  };
  const seconds = (name: string, fallback: number) => {
    const value = Number(env[name]);
    return env[name] !== undefined && Number.isFinite(value) && value >= 0 ? value : fallback;
  };
  const ignored: EnvSettings["ignored"] = [];
  const faultValue = env.SIM_ELASTIC_FAULT ?? "";
  const faults = parseElasticFaults(faultValue);
  for (const reason of faults.ignored) ignored.push({ variable: "SIM_ELASTIC_FAULT", value: faultValue, reason });
  const scaleValue = env.SIM_ELASTIC_SCALE_SECONDS ?? "";
  const scaleSeconds = scaleValue === "" ? undefined : Number(scaleValue);
  const validScale = scaleSeconds !== undefined && Number.isFinite(scaleSeconds) && scaleSeconds >= 0;
  if (scaleSeconds !== undefined && !validScale) ignored.push({ variable: "SIM_ELASTIC_SCALE_SECONDS", value: scaleValue, reason: `${scaleValue} is not a number ≥ 0` });
  return {
    skipModelNameValidation: flag("VLLM_SKIP_MODEL_NAME_VALIDATION", false),
    elasticDrain: flag("VLLM_ELASTIC_EP_DRAIN_REQUESTS", false),
    vllmDevMode: flag("VLLM_SERVER_DEV_MODE", false),
    sglangHealthGeneration: flag("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", true),
    sglangHealthTimeoutS: seconds("SGLANG_HEALTH_CHECK_TIMEOUT", 20),
    pdWaitingTimeoutS: seconds("SGLANG_DISAGGREGATION_WAITING_TIMEOUT", 300),
    pdBootstrapTimeoutS: seconds("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", 300),
    nixlHost: env.VLLM_NIXL_SIDE_CHANNEL_HOST || "localhost",
    nixlPort: seconds("VLLM_NIXL_SIDE_CHANNEL_PORT", 5600),
    elasticFaults: faults.faults,
    elasticScaleSeconds: validScale ? scaleSeconds : undefined,
    volumeMounts: readVolumeMounts(env.BERTH_VOLUME_MOUNTS),
    ignored,
  };
}

export interface InFlight {
  abort(): void;
}

export interface SimRuntime {
  sim: SimOptions;
  args: EngineArgs;
  env: EnvSettings;
  log: Logger;
  perf: PerfModel;
  core: SimEngine;
  metrics: EngineMetrics;
  /** The name responses and metrics use (the first served name). */
  modelName: string;
  maxModelLen: number;
  /** Total DP size (vLLM external LB: this server holds one rank of it). */
  dataParallelTotal: number;
  phase: Phase;
  /** Set for the whole of an elastic resize: every path answers 503. */
  scaling: boolean;
  /** Size-changing /scale_elastic_ep calls so far: SIM_ELASTIC_FAULT entries count them. */
  elasticScaleCalls: number;
  /** HTTP requests being answered (includes PD legs waiting for their peer). */
  inFlight: Set<InFlight>;
  nixl?: NixlSide;
  /** vLLM EPD: this engine's encoder-cache role and where its shared storage really is. */
  ec?: EcSide;
  rooms?: BootstrapRooms;
  startedAt: number;
}

/** Ranks an elastic resize may reach; vLLM's bound is Ray's free capacity. */
export const MAX_DATA_PARALLEL = 256;

export function createSimRuntime(command: SimCommand, env: Readonly<Record<string, string | undefined>>, log: Logger): SimRuntime {
  const { engine: args } = command;
  const settings = readEnvSettings(env);
  for (const { variable, value, reason } of settings.ignored) log.error({ variable, value, reason }, `berth-sim: ignoring part of ${variable}: ${reason}`);
  // A pod whose command line the caller cannot change still gets its resize duration from the environment.
  const sim = settings.elasticScaleSeconds === undefined ? command.sim : { ...command.sim, elasticScaleSeconds: settings.elasticScaleSeconds };
  const gpu = gpuProfile(sim.gpuType);
  const model = modelFactsForName(args.model, { weightBytes: args.weightBytes, kvCacheBytes: args.kvCacheBytes });
  const perf = createPerfModel({
    model,
    gpu,
    shape: {
      tensorParallel: args.tensorParallel,
      pipelineParallel: args.pipelineParallel,
      gpuMemoryUtilization: args.gpuMemoryUtilization,
      blockSize: args.blockSize,
    },
  });
  const maxModelLen = args.maxModelLen ?? model.maxModelLen;
  if (!perf.fits) {
    log.warn(
      { model: args.model, sizeClass: model.sizeClass, gpuType: gpu.id, tensorParallel: args.tensorParallel },
      "berth-sim: the weights leave no room for a KV cache on this GPU (a real engine would fail to start); simulating a minimal cache",
    );
  } else if (perf.kvCapacityTokens < maxModelLen) {
    log.warn(
      { kvCapacityTokens: perf.kvCapacityTokens, maxModelLen },
      "berth-sim: the KV cache holds fewer tokens than max_model_len (a real vLLM refuses to start); requests longer than the cache are refused",
    );
  }
  const simulatedPerf: PerfModel = perf.fits ? perf : { ...perf, kvBlocks: Math.ceil(maxModelLen / args.blockSize) + 1, kvCapacityTokens: (Math.ceil(maxModelLen / args.blockSize) + 1) * args.blockSize };
  // Defaults as the engines pick them: vLLM's API server uses 8192 tokens / 1024 sequences on
  // ≥ 70 GiB GPUs other than A100, else 2048 / 256 (arg_utils get_batch_defaults); SGLang 16384 / 256 here.
  const big = gpu.memoryGb >= 70 && !gpu.id.includes("a100");
  const limits = {
    maxRunning: args.maxRunning ?? (args.flavour === "vllm" ? (big ? 1024 : 256) : 256),
    maxBatchedTokens: args.maxBatchedTokens ?? (args.flavour === "vllm" ? (big ? 8192 : 2048) : 16384),
    prefixCaching: args.prefixCaching,
  };
  const externalRank = args.dataParallelRank;
  const localRanks = externalRank !== undefined ? 1 : args.dataParallel;
  const firstRank = externalRank ?? 0;
  const ranks = Array.from({ length: localRanks }, (_, i) => firstRank + i);
  const modelName = args.servedModelNames[0] ?? args.model;
  let core: SimEngine | undefined;
  const states = () => core?.states() ?? [];
  const metricsOptions = {
    modelName,
    ranks,
    states,
    blockSize: args.blockSize,
    numGpuBlocks: simulatedPerf.kvBlocks,
    gpuMemoryUtilization: args.gpuMemoryUtilization,
    prefixCaching: args.prefixCaching,
    kvConnector: Boolean(args.kvTransfer?.kv_connector),
    maxModelLen,
  };
  const metrics =
    args.flavour === "vllm"
      ? createVllmMetrics(metricsOptions)
      : createSglangMetrics({ ...metricsOptions, enabled: args.enableMetrics, mode: args.disaggregationMode, dataParallel: args.dataParallel });
  core = new SimEngine({ perf: simulatedPerf, limits, timeScale: sim.timeScale, firstRank, ranks: localRanks, events: metrics });
  return {
    sim,
    args,
    env: settings,
    log,
    perf: simulatedPerf,
    core,
    metrics,
    modelName,
    maxModelLen,
    dataParallelTotal: args.dataParallel,
    phase: "starting",
    scaling: false,
    elasticScaleCalls: 0,
    inFlight: new Set(),
    nixl: args.kvTransfer?.kv_connector
      ? {
          engineId: typeof args.kvTransfer.engine_id === "string" ? args.kvTransfer.engine_id : randomUUID(),
          host: settings.nixlHost,
          basePort: settings.nixlPort,
          tensorParallel: args.tensorParallel,
        }
      : undefined,
    ec: ecSide(args.ecTransfer, settings.volumeMounts),
    rooms: args.flavour === "sglang" && args.disaggregationMode === "prefill" ? new BootstrapRooms(settings.pdBootstrapTimeoutS * 1000) : undefined,
    startedAt: Date.now(),
  };
}

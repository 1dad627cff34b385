// Prometheus series with the engines' own names, types, labels and buckets (vLLM `vllm/v1/metrics/loggers.py`,
// SGLang's `sglang:` metrics; docs/design.md §12), exposed through prom-client. vLLM labels every series with
// `model_name` and `engine` (the global DP rank), so the set of `engine` values shows the current
// data-parallel width; SGLang uses `model_name`, `engine_type` and per-scheduler rank labels.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { EngineEvents, RankState } from "./engine.ts";
import type { FinishReason } from "./engine-scheduler.ts";
import type { DisaggregationMode } from "./args.ts";

export interface RequestRecord {
  rank: number;
  promptTokens: number;
  generationTokens: number;
  cachedTokens: number;
  e2eSeconds: number;
  queueSeconds: number;
  reason: FinishReason;
}

export interface EngineMetrics extends EngineEvents {
  /** SGLang serves /metrics only with --enable-metrics. */
  readonly enabled: boolean;
  firstToken(rank: number, ttftSeconds: number): void;
  interToken(rank: number, seconds: number): void;
  requestFinished(record: RequestRecord): void;
  /** vLLM with a KV connector: prompt tokens looked up remotely, and how many arrived by transfer. */
  externalKvLookup(rank: number, queried: number, hit: number): void;
  /** SGLang PD: a decode request that never got its KV (bootstrap or transfer failed). */
  pdFailure(kind: "bootstrap" | "transfer"): void;
  /** Drops every series and starts again from zero with `ranks` (vLLM re-creates its loggers on resize). */
  reset(ranks: readonly number[]): void;
  render(): Promise<{ contentType: string; body: string }>;
}

// vLLM v1 buckets (vllm/v1/metrics/loggers.py).
const VLLM_TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const VLLM_ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const VLLM_REQUEST_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
// SGLang buckets (python/sglang/srt/metrics/collector.py TokenizerMetricsCollector).
const SGLANG_TTFT_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400];
const SGLANG_ITL_BUCKETS = [0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8];
const SGLANG_E2E_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400];
// sglang:queue_time_seconds (SchedulerMetricsCollector).
const SGLANG_QUEUE_BUCKETS = [0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000];

export interface MetricsOptions {
  modelName: string;
  ranks: readonly number[];
  states: () => RankState[];
  blockSize: number;
  numGpuBlocks: number;
  gpuMemoryUtilization: number;
  prefixCaching: boolean;
  kvConnector: boolean;
  /** vLLM's token histograms have buckets 1, 2, 5, 10, 20, 50, … up to the context length. */
  maxModelLen: number;
}

/** vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, … while ≤ max. */
function buckets125(max: number): number[] {
  const out: number[] = [];
  for (let exponent = 1; ; exponent *= 10) {
    for (const mantissa of [1, 2, 5]) {
      if (mantissa * exponent > max) return out;
      out.push(mantissa * exponent);
    }
  }
}

type VllmSeries = ReturnType<typeof createVllmSeries>;

function createVllmSeries(registry: Registry, options: MetricsOptions) {
  const labelNames = ["model_name", "engine"] as const;
  const registers = [registry];
  const gauge = (name: string, help: string, pick: (state: RankState) => number) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const state of options.states()) this.set({ model_name: options.modelName, engine: String(state.rank) }, pick(state));
      },
    });
  const counter = (name: string, help: string) => new Counter({ name, help, labelNames, registers });
  const histogram = (name: string, help: string, buckets: number[]) => new Histogram({ name, help, labelNames, buckets, registers });
  return {
    running: gauge("vllm:num_requests_running", "Number of requests in model execution batches.", (s) => s.running),
    // Requests waiting for remote KV (WAITING_FOR_REMOTE_KVS) are waiting requests too.
    waiting: gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", (s) => s.waiting + s.transferring),
    kvUsage: gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", (s) => s.kvUsage),
    prefixQueries: counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens."),
    prefixHits: counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."),
    externalQueries: options.kvConnector
      ? counter("vllm:external_prefix_cache_queries_total", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.")
      : undefined,
    externalHits: options.kvConnector
      ? counter("vllm:external_prefix_cache_hits_total", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.")
      : undefined,
    preemptions: counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
    promptTokens: counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
    promptBySource: new Counter({
      name: "vllm:prompt_tokens_by_source_total",
      help: "Number of prompt tokens by source.",
      labelNames: ["model_name", "engine", "source"] as const,
      registers,
    }),
    generationTokens: counter("vllm:generation_tokens_total", "Number of generation tokens processed."),
    success: new Counter({
      name: "vllm:request_success_total",
      help: "Count of successfully processed requests.",
      labelNames: ["model_name", "engine", "finished_reason"] as const,
      registers,
    }),
    ttft: histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", VLLM_TTFT_BUCKETS),
    itl: histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", VLLM_ITL_BUCKETS),
    tpot: histogram("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", VLLM_ITL_BUCKETS),
    e2e: histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", VLLM_REQUEST_BUCKETS),
    queue: histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", VLLM_REQUEST_BUCKETS),
    requestPromptTokens: histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", buckets125(options.maxModelLen)),
    requestGenerationTokens: histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", buckets125(options.maxModelLen)),
    cacheConfig: new Gauge({
      name: "vllm:cache_config_info",
      help: "Information of the LLMEngine CacheConfig",
      labelNames: ["block_size", "num_gpu_blocks", "gpu_memory_utilization", "enable_prefix_caching", "engine"] as const,
      registers,
    }),
  };
}

class VllmMetrics implements EngineMetrics {
  readonly enabled = true;
  private registry = new Registry();
  private series: VllmSeries;

  constructor(private readonly options: MetricsOptions) {
    this.series = this.build(options.ranks);
  }

  private build(ranks: readonly number[]): VllmSeries {
    this.registry = new Registry();
    const series = createVllmSeries(this.registry, this.options);
    // vLLM creates every labelled child up front, so each engine's series exist (at 0) before traffic.
    for (const rank of ranks) {
      const labels = this.labels(rank);
      for (const counter of [series.prefixQueries, series.prefixHits, series.preemptions, series.promptTokens, series.generationTokens, series.externalQueries, series.externalHits]) {
        counter?.labels(labels).inc(0);
      }
      for (const histogram of [series.ttft, series.itl, series.tpot, series.e2e, series.queue, series.requestPromptTokens, series.requestGenerationTokens]) histogram.zero(labels);
      series.cacheConfig.set(
        {
          block_size: String(this.options.blockSize),
          num_gpu_blocks: String(this.options.numGpuBlocks),
          gpu_memory_utilization: String(this.options.gpuMemoryUtilization),
          enable_prefix_caching: this.options.prefixCaching ? "True" : "False",
          engine: String(rank),
        },
        1,
      );
    }
    return series;
  }

  private labels(rank: number) {
    return { model_name: this.options.modelName, engine: String(rank) };
  }

  reset(ranks: readonly number[]): void {
    this.series = this.build(ranks);
  }

  prefixLookup(rank: number, queried: number, hit: number): void {
    this.series.prefixQueries.inc(this.labels(rank), queried);
    this.series.prefixHits.inc(this.labels(rank), hit);
    this.series.promptBySource.inc({ ...this.labels(rank), source: "local_cache_hit" }, hit);
    this.series.promptBySource.inc({ ...this.labels(rank), source: "local_compute" }, queried - hit);
  }

  preempted(rank: number): void {
    this.series.preemptions.inc(this.labels(rank));
  }

  prefillBatch(): void {}

  tokensGenerated(rank: number, count: number): void {
    this.series.generationTokens.inc(this.labels(rank), count);
  }

  firstToken(rank: number, ttftSeconds: number): void {
    this.series.ttft.observe(this.labels(rank), ttftSeconds);
  }

  interToken(rank: number, seconds: number): void {
    this.series.itl.observe(this.labels(rank), seconds);
  }

  requestFinished(record: RequestRecord): void {
    const labels = this.labels(record.rank);
    this.series.promptTokens.inc(labels, record.promptTokens);
    this.series.success.inc({ ...labels, finished_reason: record.reason }, 1);
    this.series.e2e.observe(labels, record.e2eSeconds);
    this.series.queue.observe(labels, record.queueSeconds);
    this.series.requestPromptTokens.observe(labels, record.promptTokens);
    this.series.requestGenerationTokens.observe(labels, record.generationTokens);
    if (record.generationTokens > 1) {
      this.series.tpot.observe(labels, record.e2eSeconds / record.generationTokens);
    }
  }

  externalKvLookup(rank: number, queried: number, hit: number): void {
    this.series.externalQueries?.inc(this.labels(rank), queried);
    this.series.externalHits?.inc(this.labels(rank), hit);
    if (hit > 0) this.series.promptBySource.inc({ ...this.labels(rank), source: "external_kv_transfer" }, hit);
  }

  pdFailure(): void {}

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

export interface SglangMetricsOptions extends MetricsOptions {
  enabled: boolean;
  mode: DisaggregationMode;
  dataParallel: number;
}

type SglangSeries = ReturnType<typeof createSglangSeries>;

function createSglangSeries(registry: Registry, options: SglangMetricsOptions) {
  const engineType = options.mode === "null" ? "unified" : options.mode;
  const registers = [registry];
  const schedulerLabels = options.dataParallel > 1 ? (["model_name", "engine_type", "tp_rank", "pp_rank", "dp_rank"] as const) : (["model_name", "engine_type", "tp_rank", "pp_rank"] as const);
  const schedulerLabelValues = (rank: number): Record<string, string> => ({
    model_name: options.modelName,
    engine_type: engineType,
    tp_rank: "0",
    pp_rank: "0",
    ...(options.dataParallel > 1 ? { dp_rank: String(rank) } : {}),
  });
  const gauge = (name: string, help: string, pick: (state: RankState) => number) =>
    new Gauge({
      name,
      help,
      labelNames: schedulerLabels,
      registers,
      collect() {
        this.reset();
        for (const state of options.states()) this.set(schedulerLabelValues(state.rank), pick(state));
      },
    });
  const tokenizerLabels = ["model_name", "engine_type"] as const;
  const counter = (name: string, help: string, labelNames: readonly string[] = tokenizerLabels) => new Counter({ name, help, labelNames, registers });
  const histogram = (name: string, help: string, buckets: number[]) => new Histogram({ name, help, labelNames: tokenizerLabels, buckets, registers });
  return {
    tokenizerLabels: { model_name: options.modelName, engine_type: engineType },
    schedulerLabelValues,
    gauges: [
      gauge("sglang:num_running_reqs", "The number of running requests.", (s) => s.running),
      gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", (s) => s.waiting),
      gauge("sglang:num_used_tokens", "The number of used tokens.", (s) => s.usedTokens),
      gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", (s) => s.capacityTokens),
      gauge("sglang:token_usage", "The token usage.", (s) => s.kvUsage),
      gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", (s) => s.cacheHitRate),
      gauge("sglang:gen_throughput", "The generation throughput (token/s).", (s) => s.genThroughput),
      // PD queues; the prefill bootstrap queue is exported under both of its names (renamed upstream).
      gauge("sglang:num_prefill_prealloc_queue_reqs", "The number of requests in the prefill prealloc queue.", (s) => s.prefillBootstrapQueue),
      gauge("sglang:num_prefill_bootstrap_queue_reqs", "The number of requests in the prefill bootstrap queue.", (s) => s.prefillBootstrapQueue),
      gauge("sglang:num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue.", (s) => s.prefillInflightQueue),
      gauge("sglang:num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue.", (s) => s.decodePreallocQueue),
      gauge("sglang:num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue.", (s) => s.transferring),
    ],
    promptTokens: counter("sglang:prompt_tokens_total", "Number of prefill tokens processed."),
    generationTokens: counter("sglang:generation_tokens_total", "Number of generation tokens processed."),
    cachedTokens: counter("sglang:cached_tokens_total", "Number of cached prompt tokens."),
    requests: counter("sglang:num_requests_total", "Number of requests processed."),
    aborted: counter("sglang:num_aborted_requests_total", "Number of requests aborted."),
    bootstrapFailed: counter("sglang:num_bootstrap_failed_reqs_total", "Number of bootstrap failed requests.", schedulerLabels),
    transferFailed: counter("sglang:num_transfer_failed_reqs_total", "Number of transfer failed requests.", schedulerLabels),
    ttft: histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", SGLANG_TTFT_BUCKETS),
    itl: histogram("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", SGLANG_ITL_BUCKETS),
    e2e: histogram("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", SGLANG_E2E_BUCKETS),
    // A scheduler metric (per DP rank), unlike the tokenizer's latency histograms above.
    queue: new Histogram({ name: "sglang:queue_time_seconds", help: "Histogram of queueing time in seconds.", labelNames: schedulerLabels, buckets: SGLANG_QUEUE_BUCKETS, registers }),
  };
}

class SglangMetrics implements EngineMetrics {
  private registry = new Registry();
  private series: SglangSeries;

  constructor(private readonly options: SglangMetricsOptions) {
    this.series = this.build();
  }

  get enabled(): boolean {
    return this.options.enabled;
  }

  private build(): SglangSeries {
    this.registry = new Registry();
    const series = createSglangSeries(this.registry, this.options);
    const labels = series.tokenizerLabels;
    for (const counter of [series.promptTokens, series.generationTokens, series.cachedTokens, series.requests, series.aborted]) counter.labels(labels).inc(0);
    for (const histogram of [series.ttft, series.itl, series.e2e]) histogram.zero(labels);
    for (const rank of this.options.ranks) series.queue.zero(series.schedulerLabelValues(rank));
    if (this.options.mode !== "null") {
      for (const rank of this.options.ranks) {
        series.bootstrapFailed.labels(series.schedulerLabelValues(rank)).inc(0);
        series.transferFailed.labels(series.schedulerLabelValues(rank)).inc(0);
      }
    }
    return series;
  }

  reset(): void {
    this.series = this.build();
  }

  prefixLookup(): void {}
  preempted(): void {}
  prefillBatch(): void {}
  tokensGenerated(): void {}

  firstToken(_rank: number, ttftSeconds: number): void {
    this.series.ttft.observe(this.series.tokenizerLabels, ttftSeconds);
  }

  interToken(_rank: number, seconds: number): void {
    this.series.itl.observe(this.series.tokenizerLabels, seconds);
  }

  requestFinished(record: RequestRecord): void {
    const labels = this.series.tokenizerLabels;
    if (record.reason === "abort") {
      this.series.aborted.inc(labels, 1);
      return;
    }
    this.series.promptTokens.inc(labels, record.promptTokens);
    this.series.generationTokens.inc(labels, record.generationTokens);
    if (record.cachedTokens > 0) this.series.cachedTokens.inc(labels, record.cachedTokens);
    this.series.requests.inc(labels, 1);
    this.series.e2e.observe(labels, record.e2eSeconds);
    this.series.queue.observe(this.series.schedulerLabelValues(record.rank), record.queueSeconds);
  }

  externalKvLookup(): void {}

  pdFailure(kind: "bootstrap" | "transfer"): void {
    const labels = this.series.schedulerLabelValues(this.options.ranks[0] ?? 0);
    (kind === "bootstrap" ? this.series.bootstrapFailed : this.series.transferFailed).inc(labels, 1);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

export function createVllmMetrics(options: MetricsOptions): EngineMetrics {
  return new VllmMetrics(options);
}

export function createSglangMetrics(options: SglangMetricsOptions): EngineMetrics {
  return new SglangMetrics(options);
}

// One scrape of an engine pod → the values the autoscaler reads (pure), under vLLM's or SGLang's
// own names (vLLM `vllm/v1/metrics/loggers.py`, SGLang's `sglang:` metrics; docs/design.md §12). Series are summed over the
// pod's data-parallel ranks (vLLM `engine`, SGLang `dp_rank`). A field is absent only when the
// engine declares no such metric; a declared family with no series yet counts as 0.
import type { Exposition, Sample } from "./exposition.ts";

export type EngineName = "vllm" | "sglang";

export interface HistogramTotals {
  /** Σ of the observations, in seconds. */
  sum: number;
  count: number;
}

export interface EngineValues {
  running?: number;
  waiting?: number;
  /** KV-cache usage 0–1, the mean over the pod's ranks. */
  kvUsage?: number;
  ttft?: HistogramTotals;
  itl?: HistogramTotals;
  /** Time in the waiting queue before the first schedule. */
  queueTime?: HistogramTotals;
  /**
   * Tokens of each finished request (vLLM's request_prompt_tokens / request_generation_tokens,
   * observed when a request finishes). The token counters grow as tokens are computed, so their
   * ratio to finished requests is off while the load changes: generated tokens of requests still
   * running count against the requests that finished.
   */
  requestPromptTokens?: HistogramTotals;
  requestGenerationTokens?: HistogramTotals;
  promptTokens?: number;
  generationTokens?: number;
  requestsSucceeded?: number;
}

/** What tells one engine process from the next: a change means the counters started again. */
export interface EngineIdentity {
  /** `process_start_time_seconds` when exposed (vLLM with one API server; not SGLang's multiprocess registry). */
  processStartTime?: number;
  /** The DP ranks the pod reports, sorted; vLLM re-creates (and resets) its metrics when they change. */
  ranks: string[];
}

type Filter = (sample: Sample) => boolean;
const all: Filter = () => true;

/**
 * SGLang's scheduler gauges carry `tp_rank`/`pp_rank`/`moe_ep_rank`; with
 * `--enable-metrics-for-all-schedulers` every TP rank reports the same batch, so only the first
 * rank of each DP group is counted (DP groups are then summed).
 */
const sglangLeader: Filter = (sample) =>
  ["tp_rank", "pp_rank", "moe_ep_rank"].every((label) => sample.labels[label] === undefined || sample.labels[label] === "0");

/** vLLM counts aborted and errored requests under request_success too: they are not successes. */
const vllmSucceeded: Filter = (sample) => sample.labels.finished_reason !== "abort" && sample.labels.finished_reason !== "error";

function declared(exposition: Exposition, family: string): boolean {
  return exposition.families.has(family);
}

/** Σ of the series named `sample` of family `family`; undefined when the family is not declared. */
function sum(exposition: Exposition, family: string, sample = family, filter: Filter = all): number | undefined {
  if (!declared(exposition, family)) return undefined;
  let total = 0;
  for (const entry of exposition.samples(sample)) if (filter(entry)) total += entry.value;
  return total;
}

/** Mean over the series; undefined when there are none (no rank to average). */
function mean(exposition: Exposition, family: string, filter: Filter = all): number | undefined {
  const values = exposition.samples(family).filter(filter).map((entry) => entry.value);
  return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length;
}

function histogram(exposition: Exposition, family: string): HistogramTotals | undefined {
  const total = sum(exposition, family, `${family}_sum`);
  const count = sum(exposition, family, `${family}_count`);
  return total === undefined || count === undefined ? undefined : { sum: total, count };
}

/** The first of `families` the engine declares (renamed metrics: the newer name first). */
function firstDeclared(exposition: Exposition, families: readonly string[]): string | undefined {
  return families.find((family) => declared(exposition, family));
}

export function readEngineValues(exposition: Exposition, engine: EngineName): EngineValues {
  // gpu_cache_usage_perc: the same 0–1 fraction before vLLM 0.12 renamed it.
  const vllmKv = firstDeclared(exposition, ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"]);
  // 0.11 emits both names for the same observations: read one, never both.
  const vllmItl = firstDeclared(exposition, ["vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"]);
  const values: EngineValues =
    engine === "vllm"
      ? {
          running: sum(exposition, "vllm:num_requests_running"),
          waiting: sum(exposition, "vllm:num_requests_waiting"),
          kvUsage: vllmKv === undefined ? undefined : mean(exposition, vllmKv),
          ttft: histogram(exposition, "vllm:time_to_first_token_seconds"),
          itl: vllmItl === undefined ? undefined : histogram(exposition, vllmItl),
          queueTime: histogram(exposition, "vllm:request_queue_time_seconds"),
          requestPromptTokens: histogram(exposition, "vllm:request_prompt_tokens"),
          requestGenerationTokens: histogram(exposition, "vllm:request_generation_tokens"),
          promptTokens: sum(exposition, "vllm:prompt_tokens_total"),
          generationTokens: sum(exposition, "vllm:generation_tokens_total"),
          requestsSucceeded: sum(exposition, "vllm:request_success_total", "vllm:request_success_total", vllmSucceeded),
        }
      : {
          running: sum(exposition, "sglang:num_running_reqs", "sglang:num_running_reqs", sglangLeader),
          waiting: sum(exposition, "sglang:num_queue_reqs", "sglang:num_queue_reqs", sglangLeader),
          kvUsage: mean(exposition, "sglang:token_usage", sglangLeader),
          ttft: histogram(exposition, "sglang:time_to_first_token_seconds"),
          // SGLang adds each chunk's interval to _sum and its token count to the buckets: sum/count is per token.
          itl: histogram(exposition, "sglang:inter_token_latency_seconds"),
          queueTime: histogram(exposition, "sglang:queue_time_seconds"),
          promptTokens: sum(exposition, "sglang:prompt_tokens_total"),
          generationTokens: sum(exposition, "sglang:generation_tokens_total"),
          requestsSucceeded: sum(exposition, "sglang:num_requests_total"),
        };
  // Absent fields are left out rather than kept as `undefined` keys.
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as EngineValues;
}

export function readEngineIdentity(exposition: Exposition, engine: EngineName): EngineIdentity {
  const [start] = exposition.samples("process_start_time_seconds");
  const rankSamples =
    engine === "vllm"
      ? exposition.samples("vllm:num_requests_running").map((sample) => sample.labels.engine)
      : exposition
          .samples("sglang:num_running_reqs")
          .filter(sglangLeader)
          .map((sample) => sample.labels.dp_rank ?? "0");
  const ranks = [...new Set(rankSamples.filter((rank): rank is string => rank !== undefined))].sort();
  return { ...(start !== undefined ? { processStartTime: start.value } : {}), ranks };
}

// Two reads of the same engine process → that pod's interval signals (pure). Rates are counter
// differences over the time between the reads; TTFT/ITL/queue-time means are histogram Δsum/Δcount, so they
// describe exactly the requests of the interval. A restart between the reads (a counter that went
// down, a new process start time, a new container, other DP ranks) makes the differences
// meaningless: those values are then missing (`reset`), never negative and never 0.
import type { EngineIdentity, EngineValues, HistogramTotals } from "./engine.ts";
import type { EngineSignalKey, MissingReason, PodRef } from "./signals.ts";

export interface EngineSample extends EngineIdentity {
  pod: PodRef;
  /** When the read finished (ms since the epoch). */
  at: number;
  values: EngineValues;
}

export type ResetCause = "container-restarted" | "process-restarted" | "ranks-changed" | "counter-decreased";

export interface PodInterval {
  pod: PodRef;
  at: number;
  /** Seconds between the two reads; absent on a first read or after a reset. */
  seconds?: number;
  resetCause?: ResetCause;
  running?: number;
  waiting?: number;
  kvUsage?: number;
  /** Counter differences over the interval: requests finished (not aborted), prompt and generated tokens. */
  requests?: number;
  promptTokens?: number;
  generationTokens?: number;
  /** The same per second. */
  requestRate?: number;
  promptTokenRate?: number;
  generationTokenRate?: number;
  /** Histogram differences (seconds, observations): means are weighted by `count` across pods. */
  ttft?: HistogramTotals;
  itl?: HistogramTotals;
  queueTime?: HistogramTotals;
  /** Tokens of the requests that finished in the interval (Δ of the per-request histograms), when the engine has them. */
  requestPromptTokens?: HistogramTotals;
  requestGenerationTokens?: HistogramTotals;
  /** Signals this pod could not give this interval, and why. */
  missing: Array<{ key: EngineSignalKey; reason: MissingReason }>;
}

const COUNTERS = ["promptTokens", "generationTokens", "requestsSucceeded"] as const;
const HISTOGRAMS = ["ttft", "itl", "queueTime", "requestPromptTokens", "requestGenerationTokens"] as const;

/** Why `latest` is not the same process as `previous`, or undefined when it is. */
export function detectReset(previous: EngineSample, latest: EngineSample): ResetCause | undefined {
  if ((previous.pod.restarts ?? 0) !== (latest.pod.restarts ?? 0)) return "container-restarted";
  if (previous.processStartTime !== undefined && latest.processStartTime !== undefined && previous.processStartTime !== latest.processStartTime) {
    return "process-restarted";
  }
  if (previous.ranks.join(",") !== latest.ranks.join(",")) return "ranks-changed";
  for (const key of COUNTERS) {
    const before = previous.values[key];
    const after = latest.values[key];
    if (before !== undefined && after !== undefined && after < before) return "counter-decreased";
  }
  for (const key of HISTOGRAMS) {
    const before = previous.values[key];
    const after = latest.values[key];
    if (before !== undefined && after !== undefined && (after.count < before.count || after.sum < before.sum)) return "counter-decreased";
  }
  return undefined;
}

/** @param previous the last read of the same pod (same uid), if any. */
export function computeInterval(previous: EngineSample | undefined, latest: EngineSample): PodInterval {
  const { values } = latest;
  const interval: PodInterval = { pod: latest.pod, at: latest.at, missing: [] };
  const gauge = (key: "running" | "waiting" | "kvUsage") => {
    if (values[key] === undefined) interval.missing.push({ key, reason: "not-exposed" });
    else interval[key] = values[key];
  };
  gauge("running");
  gauge("waiting");
  gauge("kvUsage");

  // A base to difference from: an earlier read of this very pod.
  const hasBase = previous !== undefined && previous.pod.uid === latest.pod.uid && latest.at > previous.at;
  const resetCause = hasBase ? detectReset(previous, latest) : undefined;
  if (resetCause !== undefined) interval.resetCause = resetCause;
  const noInterval: MissingReason | undefined = !hasBase ? "first-read" : resetCause !== undefined ? "reset" : undefined;
  const seconds = hasBase ? (latest.at - previous.at) / 1000 : 0;
  if (noInterval === undefined) interval.seconds = seconds;

  // The first reason that applies, for a signal read from `fields` of both samples.
  const missingReason = (fields: ReadonlyArray<keyof EngineValues>): MissingReason | undefined => {
    // Not exposed now outweighs everything else: there is nothing to wait for.
    if (fields.some((field) => values[field] === undefined)) return "not-exposed";
    if (noInterval !== undefined) return noInterval;
    // Exposed now but not at the previous read (e.g. metrics just enabled): no difference yet.
    if (fields.some((field) => previous!.values[field] === undefined)) return "first-read";
    return undefined;
  };
  const difference = (field: (typeof COUNTERS)[number]) => values[field]! - previous!.values[field]!;
  const counters: Array<[EngineSignalKey, (typeof COUNTERS)[number], "requests" | "promptTokens" | "generationTokens", "requestRate" | "promptTokenRate" | "generationTokenRate"]> = [
    ["requestRate", "requestsSucceeded", "requests", "requestRate"],
    ["promptTokenRate", "promptTokens", "promptTokens", "promptTokenRate"],
    ["generationTokenRate", "generationTokens", "generationTokens", "generationTokenRate"],
  ];
  for (const [key, field, total, rate] of counters) {
    const reason = missingReason([field]);
    if (reason !== undefined) {
      interval.missing.push({ key, reason });
      continue;
    }
    interval[total] = difference(field);
    interval[rate] = difference(field) / seconds;
  }
  // Per-request token means need the request count as well as the token counter.
  for (const [key, field] of [["promptTokensPerRequest", "promptTokens"], ["generationTokensPerRequest", "generationTokens"]] as const) {
    const reason = missingReason([field, "requestsSucceeded"]);
    if (reason !== undefined) interval.missing.push({ key, reason });
  }
  // …and come from the per-request histograms when the engine has them (in both reads).
  for (const field of ["requestPromptTokens", "requestGenerationTokens"] as const) {
    if (noInterval !== undefined || values[field] === undefined || previous!.values[field] === undefined) continue;
    interval[field] = { sum: values[field]!.sum - previous!.values[field]!.sum, count: values[field]!.count - previous!.values[field]!.count };
  }
  for (const [key, field] of [["ttftMean", "ttft"], ["itlMean", "itl"], ["queueTimeMean", "queueTime"]] as const) {
    const reason = missingReason([field]);
    if (reason !== undefined) {
      interval.missing.push({ key, reason });
      continue;
    }
    const now = values[field]!;
    const before = previous!.values[field]!;
    interval[field] = { sum: now.sum - before.sum, count: now.count - before.count };
  }
  return interval;
}

/** Mean of an interval's observations in milliseconds; undefined when nothing was observed. */
export function meanMs(totals: HistogramTotals | undefined): number | undefined {
  return totals === undefined || totals.count <= 0 ? undefined : (totals.sum / totals.count) * 1000;
}

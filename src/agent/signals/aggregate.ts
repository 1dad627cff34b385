// Per-role aggregation of pod intervals (pure): Σ running/waiting/rates, mean KV usage, and
// TTFT/ITL means weighted by each pod's observations (ΣΔsum / ΣΔcount, so a busy pod counts for
// its requests, not once); tokens per request likewise Σ Δtokens / Σ Δrequests. A value covers the pods in `podCount`; every pod that could not give
// a signal is listed in `missing` with its reason, and a failed read never turns into a 0.
import type { PodInterval } from "./interval.ts";
import { meanMs } from "./interval.ts";
import {
  ENGINE_SIGNAL_KEYS,
  ENGINE_SIGNALS,
  type EngineSignalKey,
  type MissingReason,
  type MissingSignal,
  type PodRef,
  type RoleSignals,
  type Signal,
} from "./signals.ts";

/** A pod whose read gave no values at all. */
export interface ScrapeFailure {
  pod: PodRef;
  /** `not-exposed`: the engine answered 404 on /metrics (SGLang without --enable-metrics). */
  reason: Extract<MissingReason, "unreachable" | "not-exposed">;
  /** For logs: what went wrong (connection refused, HTTP 503, a parse error with its line). */
  detail: string;
}

/** Signals of one role from another source (the router), appended to the engine signals. */
export interface ExtraRoleSignals {
  signals: Signal[];
  missing: MissingSignal[];
}

export interface AggregateInput {
  /** The deployment's roles, in report order; roles seen only in the reads are appended. */
  roles: readonly string[];
  intervals: readonly PodInterval[];
  failures?: readonly ScrapeFailure[];
  extra?: ReadonlyMap<string, ExtraRoleSignals>;
  /** ms since the epoch: observedAt of values no read went into. */
  now: number;
}

export function aggregateRoles(input: AggregateInput): RoleSignals[] {
  const failures = input.failures ?? [];
  const roles = [...new Set([...input.roles, ...input.intervals.map((i) => i.pod.role), ...failures.map((f) => f.pod.role)])];
  return roles.map((role) => {
    const intervals = input.intervals.filter((interval) => interval.pod.role === role);
    const roleFailures = failures.filter((failure) => failure.pod.role === role);
    const signals = ENGINE_SIGNAL_KEYS.map((key) => aggregateSignal(key, intervals, input.now));
    const missing: MissingSignal[] = [];
    for (const interval of intervals) {
      for (const entry of interval.missing) missing.push({ name: ENGINE_SIGNALS[entry.key].name, pod: interval.pod.name, reason: entry.reason });
    }
    for (const failure of roleFailures) {
      for (const key of ENGINE_SIGNAL_KEYS) missing.push({ name: ENGINE_SIGNALS[key].name, pod: failure.pod.name, reason: failure.reason });
    }
    const extra = input.extra?.get(role);
    return { name: role, signals: [...signals, ...(extra?.signals ?? [])], missing: [...missing, ...(extra?.missing ?? [])] };
  });
}

function aggregateSignal(key: EngineSignalKey, intervals: readonly PodInterval[], now: number): Signal {
  const { name, unit } = ENGINE_SIGNALS[key];
  const contributing = intervals.filter((interval) => !interval.missing.some((entry) => entry.key === key));
  const observedAt = new Date(contributing.length === 0 ? now : Math.max(...contributing.map((interval) => interval.at))).toISOString();
  const signal: Signal = { name, unit, podCount: contributing.length, observedAt };
  if (contributing.length === 0) return signal;
  const total = (pick: (interval: PodInterval) => number) => contributing.reduce((sum, interval) => sum + pick(interval), 0);
  let value: number | undefined;
  switch (key) {
    case "running":
    case "waiting":
    case "requestRate":
    case "promptTokenRate":
    case "generationTokenRate":
      value = total((interval) => interval[key]!);
      break;
    case "kvUsage":
      value = total((interval) => interval.kvUsage!) / contributing.length;
      break;
    case "promptTokensPerRequest":
    case "generationTokensPerRequest": {
      // The tokens of the requests that finished, when every pod has vLLM's per-request histograms.
      const histogram = key === "promptTokensPerRequest" ? "requestPromptTokens" : "requestGenerationTokens";
      if (contributing.every((interval) => interval[histogram] !== undefined)) {
        const count = total((interval) => interval[histogram]!.count);
        value = count > 0 ? total((interval) => interval[histogram]!.sum) / count : undefined;
        break;
      }
      const tokens = key === "promptTokensPerRequest" ? "promptTokens" : "generationTokens";
      const requests = total((interval) => interval.requests!);
      // Like the latency means: no finished request, no per-request figure.
      value = requests > 0 ? total((interval) => interval[tokens]!) / requests : undefined;
      break;
    }
    case "ttftMean":
    case "itlMean":
    case "queueTimeMean": {
      const field = key === "ttftMean" ? "ttft" : key === "itlMean" ? "itl" : "queueTime";
      const count = total((interval) => interval[field]!.count);
      // No request in the interval on any pod: there is no mean, which is not a mean of 0.
      value = meanMs({ sum: total((interval) => interval[field]!.sum), count });
      signal.samples = count;
      break;
    }
  }
  if (value !== undefined) signal.value = value;
  return signal;
}

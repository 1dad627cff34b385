// The signal vocabulary the agent reports per role (`PUT /v1/agent/deployments/{id}/metrics`) and
// the autoscaler reads: names, units, and the shapes of a signal and of a missing one. A value the
// agent did not observe is left out and listed in `missing` with why, never sent as 0.

export const ENGINE_SIGNALS = {
  running: { name: "requests_running", unit: "requests" },
  waiting: { name: "requests_waiting", unit: "requests" },
  kvUsage: { name: "kv_cache_usage", unit: "ratio" },
  requestRate: { name: "requests_per_second", unit: "requests/s" },
  promptTokenRate: { name: "prompt_tokens_per_second", unit: "tokens/s" },
  generationTokenRate: { name: "generation_tokens_per_second", unit: "tokens/s" },
  promptTokensPerRequest: { name: "prompt_tokens_per_request", unit: "tokens" },
  generationTokensPerRequest: { name: "generation_tokens_per_request", unit: "tokens" },
  ttftMean: { name: "ttft_mean", unit: "ms" },
  itlMean: { name: "itl_mean", unit: "ms" },
  /** Time requests waited for a batch slot: what more replicas remove, as against the model's own latency. */
  queueTimeMean: { name: "queue_time_mean", unit: "ms" },
} as const;

export const ROUTER_SIGNALS = {
  inFlight: { name: "router_in_flight", unit: "requests" },
  held: { name: "router_held", unit: "requests" },
} as const;

export type EngineSignalKey = keyof typeof ENGINE_SIGNALS;
export type SignalName =
  | (typeof ENGINE_SIGNALS)[EngineSignalKey]["name"]
  | (typeof ROUTER_SIGNALS)[keyof typeof ROUTER_SIGNALS]["name"];
export type SignalUnit =
  | (typeof ENGINE_SIGNALS)[EngineSignalKey]["unit"]
  | (typeof ROUTER_SIGNALS)[keyof typeof ROUTER_SIGNALS]["unit"];

/** Engine signals in report order. */
export const ENGINE_SIGNAL_KEYS = Object.keys(ENGINE_SIGNALS) as EngineSignalKey[];

/**
 * - `unreachable`: the pod's endpoint did not answer with metrics (refused, timed out, non-2xx, unparsable).
 * - `reset`: the process restarted since the last read (a counter went down, a new start time,
 *   a new container, other ranks): its interval values are unknown this time.
 * - `not-exposed`: the engine answered but does not expose this metric (e.g. SGLang without --enable-metrics).
 * - `first-read`: no earlier read of this process to take a difference from.
 */
export type MissingReason = "unreachable" | "reset" | "not-exposed" | "first-read";

export interface Signal {
  name: SignalName;
  /** Absent when no pod contributed, or no requests finished in the interval (a mean of nothing). */
  value?: number;
  unit: SignalUnit;
  /** Pods (router pods for router signals) whose reads went into the value. */
  podCount: number;
  /** For an interval mean: the observations it averages. */
  samples?: number;
  /** ISO 8601: the latest read that went into the value (the aggregation time when none did). */
  observedAt: string;
}

export interface MissingSignal {
  name: SignalName;
  /** The pod whose read is missing; absent when the whole role lacks it. */
  pod?: string;
  reason: MissingReason;
}

/** One role's report, as `PUT /v1/agent/deployments/{id}/metrics` carries it (`RoleMetrics`). */
export interface RoleSignals {
  /** The role's name. */
  name: string;
  signals: Signal[];
  missing: MissingSignal[];
}

/** The pod a read came from: the same uid and restart count is the same container. */
export interface PodRef {
  uid: string;
  name: string;
  /** The deployment role's name (label `berth.dev/role`). */
  role: string;
  engine: "vllm" | "sglang";
  /** Σ of the pod's container restart counts, when the caller knows it. */
  restarts?: number;
}

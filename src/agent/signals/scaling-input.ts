// The reported role signals in the autoscaler's terms (pure): the fields of `RoleSignals` in
// src/domain/scaling-signals.ts, declared here by shape because that module is still being written.
// A field is absent when the report has no value; it is named in `missing` only when a read failed
// (no finished request in the interval is no failure: the autoscaler keeps its last workload).
import type { RouterReading } from "./router.ts";
import { ENGINE_SIGNALS, type RoleSignals } from "./signals.ts";

export interface ScalingRoleSignals {
  running?: number;
  waiting?: number;
  ttftMs?: number;
  itlMs?: number;
  requestsPerSecond?: number;
  inputTokens?: number;
  outputTokens?: number;
  podCount: number;
  observedAt: string;
  missing: readonly string[];
}

const FIELDS = [
  ["running", ENGINE_SIGNALS.running.name],
  ["waiting", ENGINE_SIGNALS.waiting.name],
  ["ttftMs", ENGINE_SIGNALS.ttftMean.name],
  ["itlMs", ENGINE_SIGNALS.itlMean.name],
  ["requestsPerSecond", ENGINE_SIGNALS.requestRate.name],
  ["inputTokens", ENGINE_SIGNALS.promptTokensPerRequest.name],
  ["outputTokens", ENGINE_SIGNALS.generationTokensPerRequest.name],
] as const;

export function toScalingSignals(role: RoleSignals): ScalingRoleSignals {
  const byName = new Map(role.signals.map((signal) => [signal.name, signal]));
  const failed = new Set(role.missing.map((entry) => entry.name));
  const running = byName.get(ENGINE_SIGNALS.running.name);
  const result: ScalingRoleSignals = { podCount: running?.podCount ?? 0, observedAt: running?.observedAt ?? new Date(0).toISOString(), missing: [] };
  const missing: string[] = [];
  for (const [field, name] of FIELDS) {
    const value = byName.get(name)?.value;
    if (value !== undefined) result[field] = value;
    else if (failed.has(name) || byName.get(name) === undefined) missing.push(field);
  }
  result.missing = missing;
  return result;
}

/** Requests the router replicas hold (scale-to-zero); undefined when no router answered. */
export function totalHeld(readings: readonly RouterReading[]): number | undefined {
  return readings.length === 0 ? undefined : readings.reduce((sum, reading) => sum + reading.view.held, 0);
}

// Elastic EP (docs/design.md §8.2), the pure half: which pods form an elastic instance, the width its engine
// runs at (the leader's `berth.dev/elastic-width` annotation: the width it started with, then each
// width the agent proved), how an engine read proves a width, and the retry schedule of refused
// resize calls. The I/O lives in resize-executor.ts.
import type { V1Pod } from "@kubernetes/client-node";
import { ANNOTATIONS, LABELS } from "../../k8s/render/index.ts";
import type { Role } from "../domain/deployment-spec.ts";
import { parseExposition, readEngineIdentity } from "./signals/index.ts";

// Label reads of plan.ts, repeated here so plan.ts can import this module without a cycle.
const label = (pod: V1Pod, key: string) => pod.metadata?.labels?.[key];
export const memberOf = (pod: V1Pod) => Number(label(pod, LABELS.member) ?? -1);

/** The width recorded on a leader pod; undefined when absent or malformed. */
export function recordedWidth(leader: V1Pod): number | undefined {
  const raw = leader.metadata?.annotations?.[ANNOTATIONS.elasticWidth];
  const width = raw !== undefined && /^\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN;
  return Number.isInteger(width) && width >= 1 ? width : undefined;
}

/** One elastic instance as observed: its live leader (if any) and every rank pod by rank. */
export interface ElasticInstance {
  replica: number;
  leader?: V1Pod;
  /** Rank → pod (terminating pods included: they still hold GPUs and a name). */
  ranks: Map<number, V1Pod>;
  /** The width the engine runs at by the record; undefined without a live leader. */
  width?: number;
}

export function elasticInstances(role: Role, pods: readonly V1Pod[]): ElasticInstance[] {
  const byReplica = new Map<number, ElasticInstance>();
  for (const pod of pods) {
    if (label(pod, LABELS.role) !== role.name) continue;
    const replica = Number(label(pod, LABELS.replica) ?? -1);
    let instance = byReplica.get(replica);
    if (!instance) byReplica.set(replica, (instance = { replica, ranks: new Map() }));
    instance.ranks.set(memberOf(pod), pod);
  }
  for (const instance of byReplica.values()) {
    const leader = instance.ranks.get(0);
    if (leader && leader.metadata?.deletionTimestamp == null) {
      instance.leader = leader;
      instance.width = recordedWidth(leader) ?? role.elastic?.width;
    }
  }
  return [...byReplica.values()].sort((a, b) => a.replica - b.replica);
}

/**
 * The DP ranks an engine's /metrics shows: vLLM labels every `vllm:` series with
 * `engine="<global DP rank>"` and re-creates them all after a resize, so the set of engine values
 * of `vllm:num_requests_running` is the width being served. Undefined when the gauge is absent; a
 * malformed text throws (a failed read, never a width).
 */
export function ranksFromMetrics(text: string): number[] | undefined {
  const exposition = parseExposition(text);
  if (exposition.samples("vllm:num_requests_running").length === 0) return undefined;
  return readEngineIdentity(exposition, "vllm")
    .ranks.filter((rank) => /^\d+$/.test(rank))
    .map(Number)
    .sort((a, b) => a - b);
}

/** Exactly ranks 0..width-1. */
export const isWidth = (ranks: readonly number[], width: number) => ranks.length === width && ranks.every((rank, i) => rank === i);

/** Resize-call retries (docs/design.md §8.2): 15 s, doubling, at most 4 min apart, 5 tries in all. */
export interface RetrySchedule {
  baseMs: number;
  capMs: number;
  tries: number;
}

export const RESIZE_RETRY: RetrySchedule = { baseMs: 15_000, capMs: 240_000, tries: 5 };

/** The wait after the `attempt`-th refusal (1-based). */
export const retryDelayMs = (schedule: RetrySchedule, attempt: number) => Math.min(schedule.capMs, schedule.baseMs * 2 ** (attempt - 1));

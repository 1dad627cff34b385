// sla: replicas from TTFT/ITL targets through the perf model the simulator and the planner share
// (serving-estimate.ts), corrected by what the engines actually showed over the interval — the
// correction factors of Dynamo's SLA planner (DESIGN reference dynamo.md §3.3).
import type { EngineName, Role } from "./deployment-spec.ts";
import { gpuProfile, type GpuType } from "./gpu-profiles.ts";
import { modelFactsForName } from "./model-sizes.ts";
import { createPerfModel, type PerfModel } from "./perf-model.ts";
import { KV_TRANSFER_GBS } from "./planner.ts";
import { engineBatchLimits, estimateAggregated, estimateDecode, estimatePrefill, type BatchLimits, type Workload } from "./serving-estimate.ts";

/** The GPU a role of "any" type is modelled on: the simulator's default (`berth sim-engine --gpu-type`). */
export const DEFAULT_SCALING_GPU: GpuType = "nvidia-h100-80gb";
/** Correction factors are clamped here: one noisy interval can at most quarter or quadruple capacity. */
export const CORRECTION_MIN = 0.25;
export const CORRECTION_MAX = 4;
/** Requests an interval must have finished for its latency means to correct the model. */
export const MIN_CORRECTION_SAMPLES = 10;
/** Highest prefill utilisation sized for (M/D/1 waits grow without bound near 1), as the planner. */
export const MAX_PREFILL_UTILISATION = 0.85;
/** Lowest, used when even an idle prefill instance misses the corrected target (as the planner). */
export const MIN_PREFILL_UTILISATION = 0.01;

/** One replica of a role as the perf model sees it: per-rank model, and how ranks, pods and GPUs make a replica. */
export interface RoleShape {
  perf: PerfModel;
  limits: BatchLimits;
  engine: EngineName;
  gpuType: GpuType;
  /** Data-parallel ranks (one TP × PP engine each) per replica: `parallelism.data`, or `elastic.width`. */
  ranksPerReplica: number;
  /** Pods per replica: `size`, or `elastic.width` (one pod per rank). */
  podsPerReplica: number;
  /** GPUs per replica: `gpus × size`, or `width × tensor × pipeline` for an elastic role. */
  gpusPerReplica: number;
}

export function gpusPerReplica(role: Role): number {
  if (role.elastic) return role.elastic.width * role.parallelism.tensor * role.parallelism.pipeline;
  return role.resources.gpus * role.size;
}

export function roleShape(modelName: string, engine: EngineName, role: Role): RoleShape {
  const gpuType = role.resources.gpuType ?? DEFAULT_SCALING_GPU;
  const gpu = gpuProfile(gpuType);
  const perf = createPerfModel({
    model: modelFactsForName(modelName),
    gpu,
    shape: { tensorParallel: role.parallelism.tensor, pipelineParallel: role.parallelism.pipeline },
  });
  return {
    perf,
    limits: engineBatchLimits(engine, gpu),
    engine,
    gpuType,
    ranksPerReplica: role.elastic ? role.elastic.width : role.parallelism.data,
    podsPerReplica: role.elastic ? role.elastic.width : role.size,
    gpusPerReplica: gpusPerReplica(role),
  };
}

/** Engine ranks behind `podCount` ready pods. */
export function servingRanks(shape: RoleShape, podCount: number): number {
  return (podCount * shape.ranksPerReplica) / shape.podsPerReplica;
}

export interface Correction {
  /** observed ÷ predicted, clamped to [CORRECTION_MIN, CORRECTION_MAX]; 1 when not applied. */
  factor: number;
  applied: boolean;
  /** Why not applied, or the raw ratio when clamped. */
  note: string;
}

/**
 * Dynamo's correction factor, observed ÷ predicted at the load the engines carried: it absorbs
 * whatever the model misses (prefix-cache hits, queueing, a slower GPU than the datasheet,
 * workload variance around the means). Ignored when the interval finished fewer than
 * MIN_CORRECTION_SAMPLES requests, clamped so one odd interval cannot swing capacity by more than 4×.
 */
export function correctionFactor(observed: number | undefined, predicted: number, samples: number): Correction {
  if (observed === undefined) return { factor: 1, applied: false, note: "no latency sample this interval" };
  if (samples < MIN_CORRECTION_SAMPLES) return { factor: 1, applied: false, note: `${samples} requests finished, fewer than ${MIN_CORRECTION_SAMPLES}` };
  if (!(predicted > 0)) return { factor: 1, applied: false, note: "no prediction at this load" };
  const raw = observed / predicted;
  const factor = Math.min(CORRECTION_MAX, Math.max(CORRECTION_MIN, raw));
  return { factor, applied: true, note: factor === raw ? "" : `clamped from ${round(raw)}` };
}

/** Largest integer c in [1, hi] with ok(c), ok monotone (true then false); 0 if none. */
export function largestConcurrency(hi: number, ok: (c: number) => boolean): number {
  const top0 = Math.floor(hi);
  if (top0 < 1 || !ok(1)) return 0;
  if (ok(top0)) return top0;
  let lo = 1;
  let top = top0;
  while (top - lo > 1) {
    const mid = Math.floor((lo + top) / 2);
    if (ok(mid)) lo = mid;
    else top = mid;
  }
  return lo;
}

/** Requests one rank can hold at once: the engine's sequence limit, or what its KV cache holds at full length. */
function concurrencyLimit(shape: RoleShape, w: Workload): number {
  const kv = Math.floor(shape.perf.kvCapacityTokens / (w.inputTokens + w.outputTokens));
  return Math.max(1, Math.min(shape.limits.maxRunning, kv));
}

export interface SlaRecommendation {
  replicas: number;
  reason: "SlaCapacity" | "SlaUnreachable";
  message: string;
  /** Corrected per-replica capacity, in `capacityUnit`. */
  capacityPerReplica: number;
  capacityUnit: "requests" | "requests/s";
  ttftCorrection?: Correction;
  itlCorrection?: Correction;
}

export interface ObservedLatency {
  ttftMs?: number;
  itlMs?: number;
  /** Requests in the engines per serving rank (Σ(running + waiting) ÷ ranks); undefined with no ranks. */
  concurrencyPerRank?: number;
  /** Requests finished in the interval. */
  samples: number;
}

function describeCorrection(name: string, c: Correction): string {
  if (!c.applied) return `${name} correction off (${c.note})`;
  return `${name} × ${round(c.factor)}${c.note ? ` (${c.note})` : ""}`;
}

/**
 * An aggregated (`server`) role. Per-rank capacity c* is the largest concurrency at which the
 * corrected predictions meet both targets: k_ttft × TTFT(c) ≤ ttftMs and k_itl × ITL(c) ≤ itlMs
 * (equivalently Dynamo's `itl* = target ÷ d_corr`), within what the KV cache and the engine's
 * sequence limit hold. desired = ⌈Σ(running + waiting) ÷ (c* × ranks per replica)⌉. When even
 * one request per rank misses the corrected targets, c* = 1 (reason SlaUnreachable): more
 * replicas cannot fix a latency floor, but one request per rank is the least any rank can carry,
 * and a stricter SLA must never get fewer replicas than a looser one.
 */
export function recommendSlaAggregated(
  shape: RoleShape,
  w: Workload,
  demand: number,
  observed: ObservedLatency,
  target: { ttftMs: number; itlMs: number },
): SlaRecommendation {
  const estimate = (c: number) => estimateAggregated(shape.perf, w, c, shape.limits, shape.engine);
  const at = observed.concurrencyPerRank !== undefined && observed.concurrencyPerRank > 0 ? estimate(observed.concurrencyPerRank) : undefined;
  const kTtft = correctionFactor(observed.ttftMs, at?.ttftMs ?? 0, at ? observed.samples : 0);
  const kItl = correctionFactor(observed.itlMs, at?.itlMs ?? 0, at ? observed.samples : 0);
  const limit = concurrencyLimit(shape, w);
  const meets = (c: number) => {
    const e = estimate(c);
    return kTtft.factor * e.ttftMs <= target.ttftMs && kItl.factor * e.itlMs <= target.itlMs;
  };
  const found = largestConcurrency(limit, meets);
  const perRank = Math.max(1, found);
  const capacity = perRank * shape.ranksPerReplica;
  const replicas = Math.ceil(demand / capacity);
  const corrections = `${describeCorrection("TTFT", kTtft)}, ${describeCorrection("ITL", kItl)}`;
  const head = `${demand} requests ÷ ${capacity} per replica = ${replicas}`;
  if (found === 0) {
    const e = estimate(1);
    return {
      replicas,
      reason: "SlaUnreachable",
      message: `${head}; even one request per rank misses the targets (corrected TTFT ${round(kTtft.factor * e.ttftMs)} ms vs ${target.ttftMs} ms, ITL ${round(kItl.factor * e.itlMs)} ms vs ${target.itlMs} ms); ${corrections}`,
      capacityPerReplica: capacity,
      capacityUnit: "requests",
      ttftCorrection: kTtft,
      itlCorrection: kItl,
    };
  }
  return {
    replicas,
    reason: "SlaCapacity",
    message: `${head}: ${perRank} per rank meets TTFT ≤ ${target.ttftMs} ms and ITL ≤ ${target.itlMs} ms; ${corrections}`,
    capacityPerReplica: capacity,
    capacityUnit: "requests",
    ttftCorrection: kTtft,
    itlCorrection: kItl,
  };
}

/**
 * A prefill role (PD), sized by TTFT: prompts are throughput work. One rank serves
 * `capacityRps` prompts per second at full utilisation (estimatePrefill: token-budget steps) and
 * its TTFT at utilisation u is the M/D/1 wait plus service plus KV handoff, ttftAt(u). u* is the
 * highest utilisation (0.01 steps, at most 0.85) with k_ttft × ttftAt(u) ≤ ttftMs, k_ttft
 * measured at the observed utilisation R ÷ (ranks × capacityRps). desired = ⌈R ÷ (capacityRps ×
 * u* × ranks per replica)⌉ with R the request rate (each request one prompt of the mean input
 * length). Unreachable: u* = 0.01, as the planner.
 */
export function recommendSlaPrefill(
  shape: RoleShape,
  w: Workload,
  requestsPerSecond: number,
  observed: { ttftMs?: number; ranks: number; samples: number },
  ttftMs: number,
): SlaRecommendation {
  const prefill = estimatePrefill(shape.perf, w, shape.limits, KV_TRANSFER_GBS);
  const observedU = observed.ranks > 0 ? requestsPerSecond / (observed.ranks * prefill.capacityRps) : undefined;
  const k = correctionFactor(observed.ttftMs, observedU !== undefined ? prefill.ttftAt(observedU) : 0, observedU !== undefined ? observed.samples : 0);
  let u = 0;
  // Whole hundredths, from the top: the first that meets the target is u*.
  for (let hundredths = Math.round(MAX_PREFILL_UTILISATION * 100); hundredths >= 1; hundredths--) {
    if (k.factor * prefill.ttftAt(hundredths / 100) <= ttftMs) {
      u = hundredths / 100;
      break;
    }
  }
  const unreachable = u === 0;
  const utilisation = unreachable ? MIN_PREFILL_UTILISATION : u;
  const capacity = prefill.capacityRps * utilisation * shape.ranksPerReplica;
  const replicas = Math.ceil(requestsPerSecond / capacity);
  const head = `${round(requestsPerSecond)} requests/s of ${w.inputTokens}-token prompts ÷ ${round(capacity)} per replica = ${replicas}`;
  if (unreachable) {
    return {
      replicas,
      reason: "SlaUnreachable",
      message: `${head}; an idle prefill rank already misses TTFT (corrected ${round(k.factor * prefill.ttftAt(0))} ms vs ${ttftMs} ms), sized at ${MIN_PREFILL_UTILISATION * 100}% utilisation; ${describeCorrection("TTFT", k)}`,
      capacityPerReplica: capacity,
      capacityUnit: "requests/s",
      ttftCorrection: k,
    };
  }
  return {
    replicas,
    reason: "SlaCapacity",
    message: `${head}: ${Math.round(u * 100)}% of ${round(prefill.capacityRps)} prompts/s per rank meets TTFT ≤ ${ttftMs} ms; ${describeCorrection("TTFT", k)}`,
    capacityPerReplica: capacity,
    capacityUnit: "requests/s",
    ttftCorrection: k,
  };
}

/**
 * A decode role (PD), sized by ITL: concurrent decode streams. c* is the largest concurrency with
 * k_itl × ITL_decode(c) ≤ itlMs (no prefill in its steps), within KV and sequence limits;
 * desired = ⌈Σ(running + waiting) ÷ (c* × ranks per replica)⌉; unreachable → c* = 1.
 */
export function recommendSlaDecode(shape: RoleShape, w: Workload, demand: number, observed: ObservedLatency, itlMs: number): SlaRecommendation {
  const itlAt = (c: number) => estimateDecode(shape.perf, w, c).itlMs;
  const cObs = observed.concurrencyPerRank;
  const k = correctionFactor(observed.itlMs, cObs !== undefined && cObs > 0 ? itlAt(cObs) : 0, cObs !== undefined && cObs > 0 ? observed.samples : 0);
  const found = largestConcurrency(concurrencyLimit(shape, w), (c) => k.factor * itlAt(c) <= itlMs);
  const perRank = Math.max(1, found);
  const capacity = perRank * shape.ranksPerReplica;
  const replicas = Math.ceil(demand / capacity);
  const head = `${demand} decode streams ÷ ${capacity} per replica = ${replicas}`;
  if (found === 0) {
    return {
      replicas,
      reason: "SlaUnreachable",
      message: `${head}; one stream per rank already misses ITL (corrected ${round(k.factor * itlAt(1))} ms vs ${itlMs} ms); ${describeCorrection("ITL", k)}`,
      capacityPerReplica: capacity,
      capacityUnit: "requests",
      itlCorrection: k,
    };
  }
  return {
    replicas,
    reason: "SlaCapacity",
    message: `${head}: ${perRank} per rank meets ITL ≤ ${itlMs} ms; ${describeCorrection("ITL", k)}`,
    capacityPerReplica: capacity,
    capacityUnit: "requests",
    itlCorrection: k,
  };
}

function round(x: number): number {
  return Number(x.toFixed(2));
}

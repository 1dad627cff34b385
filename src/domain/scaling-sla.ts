// sla: replicas from TTFT/ITL targets through the perf model the simulator and the planner share
// (serving-estimate.ts), corrected by what the engines actually showed over the interval — the
// correction factors of Dynamo's SLA planner (its throughput-based mode, https://github.com/ai-dynamo/dynamo; docs/design.md §7.3, §12.3).
import type { EngineName, Role } from "./deployment-spec.ts";
import { gpuProfile, type GpuType } from "./gpu-profiles.ts";
import { modelFactsForName } from "./model-sizes.ts";
import { readFlags } from "./flag-reader.ts";
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
    limits: batchLimitsOf(engine, engineBatchLimits(engine, gpu), role.extraArgs ?? []),
    engine,
    gpuType,
    ranksPerReplica: role.elastic ? role.elastic.width : role.parallelism.data,
    podsPerReplica: role.elastic ? role.elastic.width : role.size,
    gpusPerReplica: gpusPerReplica(role),
  };
}

/** The engine's flags for its step limits, by engine (the names each engine's argparse takes). */
const LIMIT_FLAGS: Readonly<Record<EngineName, { maxRunning: string; maxBatchedTokens: string }>> = {
  vllm: { maxRunning: "--max-num-seqs", maxBatchedTokens: "--max-num-batched-tokens" },
  sglang: { maxRunning: "--max-running-requests", maxBatchedTokens: "--chunked-prefill-size" },
};

/**
 * The engine's defaults overridden by the role's `extraArgs`, read as the simulator reads an
 * engine command line (readFlags: `--flag N` or `--flag=N`, the last one winning as in argparse,
 * `_` for `-`). A bench or user who caps the batch at 32 sequences must not be sized as if it held
 * the default 1024.
 */
export function batchLimitsOf(engine: EngineName, defaults: BatchLimits, extraArgs: readonly string[]): BatchLimits {
  const { values } = readFlags(extraArgs, {});
  const limits = { ...defaults };
  for (const key of ["maxRunning", "maxBatchedTokens"] as const) {
    const value = Number(values.get(LIMIT_FLAGS[engine][key])?.at(-1));
    if (Number.isInteger(value) && value > 0) limits[key] = value;
  }
  return limits;
}

/** Engine ranks behind `podCount` ready pods. */
export function servingRanks(shape: RoleShape, podCount: number): number {
  return (podCount * shape.ranksPerReplica) / shape.podsPerReplica;
}

export interface Correction {
  /** observed ÷ predicted, clamped to [CORRECTION_MIN, CORRECTION_MAX]; the carried one, or 1, when not measured. */
  factor: number;
  /** The factor is in use: measured this interval, or carried from the last interval that measured it. */
  applied: boolean;
  /** Measured this interval (else carried, or not applied). */
  measured: boolean;
  /** Why not measured, or the raw ratio when clamped. */
  note: string;
}

/**
 * Dynamo's correction factor, observed ÷ predicted at the load the engines carried: it absorbs
 * whatever the model misses (prefix-cache hits, a slower GPU than the datasheet, workload
 * variance around the means). Not measured when the interval finished fewer than
 * MIN_CORRECTION_SAMPLES requests; the factor last measured (`carried`) then stays in use, since
 * what it measures is the model's error, which one quiet interval does not change. Clamped so one
 * odd interval cannot swing capacity by more than 4×. With a carried factor, a measurement moves
 * it halfway (geometric mean): near a latency floor capacity is steep in the factor (at ITL 10 ms
 * over a floor of 8.4 ms, ITL × 0.93 means 26 requests per rank, × 1.1 means 8), so one noisy
 * interval must not swing it, while a lasting error is absorbed within a few intervals.
 */
export function correctionFactor(observed: number | undefined, predicted: number, samples: number, carried?: number, unusable?: string): Correction {
  const notMeasured = (why: string): Correction =>
    carried === undefined
      ? { factor: 1, applied: false, measured: false, note: why }
      : { factor: carried, applied: true, measured: false, note: `kept from an earlier interval: ${why}` };
  if (unusable !== undefined) return notMeasured(unusable);
  if (observed === undefined) return notMeasured("no latency sample this interval");
  if (samples < MIN_CORRECTION_SAMPLES) return notMeasured(`${samples} requests finished, fewer than ${MIN_CORRECTION_SAMPLES}`);
  if (!(predicted > 0)) return notMeasured("no prediction at this load");
  const raw = observed / predicted;
  const clamped = Math.min(CORRECTION_MAX, Math.max(CORRECTION_MIN, raw));
  const factor = carried === undefined ? clamped : Math.sqrt(carried * clamped);
  const notes = [...(clamped === raw ? [] : [`clamped from ${round(raw)}`]), ...(carried === undefined ? [] : [`measured ${round(clamped)}, moved halfway from ${round(carried)}`])];
  return { factor, applied: true, measured: true, note: notes.join("; ") };
}

/** Mean queue time, as a share of the TTFT target, up to which an interval counts as free of queueing. */
export const QUEUE_FREE_SHARE = 0.1;

/**
 * The TTFT the model may be corrected by: only that of an interval free of slot queueing. The
 * perf model predicts a first token from the moment a request is scheduled; a wait for a batch
 * slot before that is queueing, which more replicas remove. Counted as model error it would
 * shrink the per-replica capacity exactly while requests queue during a scale-up, and the
 * autoscaler would overshoot (it did, ×4, in bench:scaling). Subtracting the queue time is not
 * enough: engines observe it when a request finishes, so under a growing queue it belongs to an
 * older cohort than the first tokens of the interval. Queueing shows as requests waiting at the
 * read or, when the engine reports it, a mean queue time above QUEUE_FREE_SHARE of the TTFT
 * target (a wait of a step or two for the next batch is no queue).
 */
export function queueFreeTtft(observed: ObservedLatency, ttftTargetMs: number): { ttftMs?: number; note?: string } {
  if (observed.ttftMs === undefined) return {};
  if ((observed.waiting ?? 0) > 0) return { note: `${observed.waiting} requests waiting for a slot: latencies measure queueing` };
  if (observed.queueTimeMs !== undefined && observed.queueTimeMs > QUEUE_FREE_SHARE * ttftTargetMs) {
    return { note: `requests waited ${round(observed.queueTimeMs)} ms for a slot: latencies measure queueing` };
  }
  return { ttftMs: observed.ttftMs };
}

/**
 * What an aggregated role is asked to carry. `arrivalsPerSecond` is the interval's arrival rate:
 * requests finished per second plus the growth per second of the requests in the engines (Σ
 * running + waiting), so a growing queue counts as the arrivals it is, not as steady concurrency.
 */
export interface AggregatedDemand {
  /** Σ(running + waiting) at the read. */
  inEngines: number;
  /** Undefined on a first interval (no earlier count of the requests in the engines). */
  arrivalsPerSecond?: number;
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
  /** The load over the per-replica capacity, unrounded: what the tolerance band compares with the current count. */
  needed: number;
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
  /** Mean wait for a batch slot over the interval; undefined when the engine does not report it. */
  queueTimeMs?: number;
  /** Requests in the batch per serving rank (Σ running ÷ ranks): the load latencies are predicted at; undefined with no ranks. */
  concurrencyPerRank?: number;
  /** Requests waiting for a slot at the read. */
  waiting?: number;
  /** Requests finished in the interval. */
  samples: number;
  /** Factors last measured, used while this interval cannot measure one. */
  carried?: { ttft?: number; itl?: number };
  /** Why this interval cannot measure a correction at all (e.g. replicas just joined); undefined when it can. */
  unsteady?: string;
}

function describeCorrection(name: string, c: Correction): string {
  if (!c.applied) return `${name} correction off (${c.note})`;
  if (!c.measured) return `${name} × ${round(c.factor)} (${c.note})`;
  return `${name} × ${round(c.factor)}${c.note ? ` (${c.note})` : ""}`;
}

/**
 * An aggregated (`server`) role. Per-rank capacity c* is the largest concurrency at which the
 * corrected predictions meet both targets: k_ttft × TTFT(c) ≤ ttftMs and k_itl × ITL(c) ≤ itlMs
 * (equivalently Dynamo's `itl* = target ÷ d_corr`), within what the KV cache and the engine's
 * sequence limit hold. The concurrency to carry is Little's law at that operating point, λ × W*
 * with λ the arrival rate and W* = k_ttft × TTFT(c*) + (output − 1) × k_itl × ITL(c*); on a first
 * interval (no rate yet) it is Σ(running + waiting). desired = ⌈concurrency ÷ (c* × ranks per
 * replica)⌉. A backlog is not sized for: once the replicas for λ are up, the engines' batch
 * slots (well above c*) take it in at once, and sizing for it would hold replicas the
 * stabilization window long for a queue that is gone in seconds. When even
 * one request per rank misses the corrected targets, c* = 1 (reason SlaUnreachable): more
 * replicas cannot fix a latency floor, but one request per rank is the least any rank can carry,
 * and a stricter SLA must never get fewer replicas than a looser one.
 */
export function recommendSlaAggregated(
  shape: RoleShape,
  w: Workload,
  demand: AggregatedDemand,
  observed: ObservedLatency,
  target: { ttftMs: number; itlMs: number },
): SlaRecommendation {
  const estimate = (c: number) => estimateAggregated(shape.perf, w, c, shape.limits, shape.engine);
  const at = observed.concurrencyPerRank !== undefined && observed.concurrencyPerRank > 0 ? estimate(observed.concurrencyPerRank) : undefined;
  const queueFree = queueFreeTtft(observed, target.ttftMs);
  const unusable = observed.unsteady ?? queueFree.note;
  const kTtft = correctionFactor(queueFree.ttftMs, at?.ttftMs ?? 0, at ? observed.samples : 0, observed.carried?.ttft, unusable);
  // A queue being taken in also skews ITL: every admitted request brings a prompt, so its steps
  // carry more prefill than the steady state the model predicts.
  const kItl = correctionFactor(observed.itlMs, at?.itlMs ?? 0, at ? observed.samples : 0, observed.carried?.itl, unusable);
  const limit = concurrencyLimit(shape, w);
  const meets = (c: number) => {
    const e = estimate(c);
    return kTtft.factor * e.ttftMs <= target.ttftMs && kItl.factor * e.itlMs <= target.itlMs;
  };
  const found = largestConcurrency(limit, meets);
  const perRank = Math.max(1, found);
  const capacity = perRank * shape.ranksPerReplica;
  const atTarget = estimate(perRank);
  const requestSeconds = (kTtft.factor * atTarget.ttftMs + (w.outputTokens - 1) * kItl.factor * atTarget.itlMs) / 1000;
  const concurrency = demand.arrivalsPerSecond === undefined ? demand.inEngines : demand.arrivalsPerSecond * requestSeconds;
  // A hair of float noise must not cost a replica (ceil(2.0000000001) = 3).
  const needed = concurrency / capacity;
  const replicas = Math.ceil(round(needed, 6));
  const corrections = `${describeCorrection("TTFT", kTtft)}, ${describeCorrection("ITL", kItl)}`;
  const head =
    demand.arrivalsPerSecond === undefined
      ? `${demand.inEngines} requests in the engines (no arrival rate yet) ÷ ${capacity} per replica = ${replicas}`
      : `${round(demand.arrivalsPerSecond)} requests/s × ${round(requestSeconds)} s each = ${round(concurrency)} concurrent ÷ ${capacity} per replica = ${replicas}`;
  if (found === 0) {
    const e = estimate(1);
    return {
      replicas,
      needed,
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
    needed,
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
  observed: { ttftMs?: number; ranks: number; samples: number; carried?: { ttft?: number }; unsteady?: string },
  ttftMs: number,
): SlaRecommendation {
  const prefill = estimatePrefill(shape.perf, w, shape.limits, KV_TRANSFER_GBS);
  const observedU = observed.ranks > 0 ? requestsPerSecond / (observed.ranks * prefill.capacityRps) : undefined;
  // The prefill model is a queue (M/D/1): its TTFT includes the wait, so the observed one is compared whole.
  const k = correctionFactor(observed.ttftMs, observedU !== undefined ? prefill.ttftAt(observedU) : 0, observedU !== undefined ? observed.samples : 0, observed.carried?.ttft, observed.unsteady);
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
  const needed = requestsPerSecond / capacity;
  const replicas = Math.ceil(round(needed, 6));
  const head = `${round(requestsPerSecond)} requests/s of ${w.inputTokens}-token prompts ÷ ${round(capacity)} per replica = ${replicas}`;
  if (unreachable) {
    return {
      replicas,
      needed,
      reason: "SlaUnreachable",
      message: `${head}; an idle prefill rank already misses TTFT (corrected ${round(k.factor * prefill.ttftAt(0))} ms vs ${ttftMs} ms), sized at ${MIN_PREFILL_UTILISATION * 100}% utilisation; ${describeCorrection("TTFT", k)}`,
      capacityPerReplica: capacity,
      capacityUnit: "requests/s",
      ttftCorrection: k,
    };
  }
  return {
    replicas,
    needed,
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
  const k = correctionFactor(observed.itlMs, cObs !== undefined && cObs > 0 ? itlAt(cObs) : 0, cObs !== undefined && cObs > 0 ? observed.samples : 0, observed.carried?.itl, observed.unsteady);
  const found = largestConcurrency(concurrencyLimit(shape, w), (c) => k.factor * itlAt(c) <= itlMs);
  const perRank = Math.max(1, found);
  const capacity = perRank * shape.ranksPerReplica;
  const needed = demand / capacity;
  const replicas = Math.ceil(round(needed, 6));
  const head = `${demand} decode streams ÷ ${capacity} per replica = ${replicas}`;
  if (found === 0) {
    return {
      replicas,
      needed,
      reason: "SlaUnreachable",
      message: `${head}; one stream per rank already misses ITL (corrected ${round(k.factor * itlAt(1))} ms vs ${itlMs} ms); ${describeCorrection("ITL", k)}`,
      capacityPerReplica: capacity,
      capacityUnit: "requests",
      itlCorrection: k,
    };
  }
  return {
    replicas,
    needed,
    reason: "SlaCapacity",
    message: `${head}: ${perRank} per rank meets ITL ≤ ${itlMs} ms; ${describeCorrection("ITL", k)}`,
    capacityPerReplica: capacity,
    capacityUnit: "requests",
    itlCorrection: k,
  };
}

function round(x: number, digits = 2): number {
  return Number(x.toFixed(digits));
}

// The deployment-request planner (docs/design.md §11): searches engines × GPU types × tensor/pipeline degrees
// × aggregated vs prefill/decode, sizes replicas for the workload within the SLA, and ranks what
// fits by GPUs used, then headroom. Pure: the model catalogue, the perf model and the free
// inventory in, a plan out; every candidate spec passes deployment admission, every rejected shape
// carries its reason, and AIConfigurator's memory-fit fallback is always evaluated as a baseline.
import { admitDeploymentSpec } from "./admission.ts";
import type { DeploymentRequest, Prediction, ShapeSummary, Sla } from "./deployment-request.ts";
import { applySpecDefaults, type DeploymentSpecInput, type EngineName, type RoleInput } from "./deployment-spec.ts";
import { InvalidSpec } from "./errors.ts";
import { GPU_PROFILES, GPU_TYPES, type GpuFacts, type GpuType } from "./gpu-profiles.ts";
import { architectureFromHfConfig, findCatalogModel, modelWeightBytes, type ModelArchitecture } from "./model-catalog.ts";
import { modelFactsFromArchitecture, type ModelFacts } from "./model-sizes.ts";
import { createPerfModel, type PerfModel } from "./perf-model.ts";
import {
  engineBatchLimits,
  estimateAggregated,
  estimateDecode,
  estimatePrefill,
  type BatchLimits,
  type ServingEstimate,
  type Workload,
} from "./serving-estimate.ts";

export const DEFAULT_IMAGES: Readonly<Record<EngineName, string>> = {
  vllm: "vllm/vllm-openai:v0.11.0",
  sglang: "lmsysorg/sglang:v0.5.4",
};

/** Tensor-parallel degrees searched (one node at most: TP across hosts is never worth its all-reduce). */
export const TENSOR_DEGREES = [1, 2, 4, 8] as const;
/** Pipeline degrees tried when a whole node cannot hold the model (multi-host, one stage per node). */
export const PIPELINE_DEGREES = [2, 4, 8] as const;
/**
 * KV handoff bandwidth between a prefill and a decode instance, GB/s: one 400 Gb/s RDMA NIC per
 * GPU group (AIConfigurator's `inter_node_bw` for H100/H200 is 50 GB/s per GPU). An assumption,
 * not a measurement; it only moves disaggregated TTFT by prompt KV bytes ÷ this.
 */
export const KV_TRANSFER_GBS = 50;
/** Highest prefill-instance utilisation planned for (M/D/1 waits grow without bound near 1). */
const MAX_PREFILL_UTILISATION = 0.85;
/** Candidates kept in a plan; the rest are counted. */
export const MAX_CANDIDATES = 20;

export interface PlanInventory {
  /** Free GPUs per node, by type (from the cluster's last heartbeat). */
  nodes: readonly { name: string; gpuType: string; gpuFree: number }[];
}

export interface PlanCandidate {
  rank: number;
  gpus: number;
  shape: ShapeSummary;
  spec: DeploymentSpecInput;
  predicted: Prediction;
  /** Smallest relative margin under the SLA bounds at the operating point (0.2 = 20% to spare). */
  headroom: number;
  why: string;
}

export interface PlanRejection {
  shape: ShapeSummary;
  reason: string;
}

export interface PlanBaseline {
  label: string;
  shape: ShapeSummary;
  fits: boolean;
  gpus: number;
  meetsSla: boolean;
  predicted?: Prediction;
  why: string;
}

export interface Plan {
  phase: "Ready" | "Failed";
  reason?: string;
  model: { id: string; from: "catalog" | "architecture"; totalParamsB: number; activeParamsB: number; attention: string; weightGiB: number };
  candidates: PlanCandidate[];
  /** Feasible shapes beyond MAX_CANDIDATES, not listed. */
  moreCandidates: number;
  rejected: PlanRejection[];
  /** On Failed: the shape nearest to feasible and what it lacks. */
  closest?: { shape: ShapeSummary; shortfall: string; predicted?: Prediction };
  baseline: PlanBaseline;
  /** Shapes evaluated. */
  searched: number;
}

const GIB = 1024 ** 3;
const round = (x: number, digits = 1) => Number(x.toFixed(digits));

/** The catalogue entry, or the user's architecture; neither → 422 naming the fields needed. */
export function resolveModel(request: Pick<DeploymentRequest, "model">): { arch: ModelArchitecture; from: "catalog" | "architecture" } {
  if (request.model.architecture) return { arch: architectureFromHfConfig(request.model.name, request.model.architecture), from: "architecture" };
  const known = findCatalogModel(request.model.name);
  if (known) return { arch: known, from: "catalog" };
  throw new InvalidSpec(`model ${request.model.name} is not in the catalogue (GET /v1/catalog/models): describe it`, [
    {
      pointer: "/model/architecture",
      message:
        "required for a model the catalogue does not know: give its Hugging Face config.json fields num_hidden_layers, hidden_size, num_attention_heads, and num_key_value_heads, intermediate_size (or totalParamsB), vocab_size; for MoE also num_experts and num_experts_per_tok; for MLA kv_lora_rank and qk_rope_head_dim",
    },
  ]);
}

// ---------------------------------------------------------------------------------------------
// SLA arithmetic

interface Bounds {
  ttftMs?: number;
  itlMs?: number;
  e2eMs?: number;
}

function boundsOf(sla: Sla): Bounds {
  if ("ttftMs" in sla) return { ttftMs: sla.ttftMs, itlMs: sla.itlMs };
  if ("e2eMs" in sla) return { e2eMs: sla.e2eMs };
  return {};
}

interface Point {
  ttftMs: number;
  itlMs: number;
  e2eMs: number;
}

/** Largest predicted ÷ bound over the bounded metrics (≤ 1 meets the SLA), with the worst metric named. */
function pressure(p: Point, b: Bounds): { ratio: number; worst: string } {
  let ratio = 0;
  let worst = "";
  const check = (name: string, value: number, bound: number | undefined) => {
    if (bound === undefined) return;
    const r = value / bound;
    if (r > ratio) {
      ratio = r;
      worst = `${name} ${round(value)} ms > ${bound} ms`;
    }
  };
  check("TTFT", p.ttftMs, b.ttftMs);
  check("ITL", p.itlMs, b.itlMs);
  check("E2E", p.e2eMs, b.e2eMs);
  return { ratio, worst };
}

/** Largest integer c in [1, hi] with ok(c), given ok is monotone (true then false); 0 if none. */
function largest(hi: number, ok: (c: number) => boolean): number {
  if (hi < 1 || !ok(1)) return 0;
  let lo = 1;
  let top = Math.floor(hi);
  if (ok(top)) return top;
  while (top - lo > 1) {
    const mid = Math.floor((lo + top) / 2);
    if (ok(mid)) lo = mid;
    else top = mid;
  }
  return lo;
}

// ---------------------------------------------------------------------------------------------
// Capacity

/** Free GPUs usable by pods of `perPod` GPUs each: whole pods per node, summed. */
function podsThatFit(inventory: PlanInventory | undefined, gpuType: GpuType, perPod: number): number {
  if (!inventory) return Infinity;
  return inventory.nodes.filter((n) => n.gpuType === gpuType).reduce((sum, n) => sum + Math.floor(n.gpuFree / perPod), 0);
}

function gpuTypesToSearch(request: DeploymentRequest, inventory: PlanInventory | undefined): GpuType[] {
  if (request.hardware.gpuType) return [request.hardware.gpuType];
  if (inventory) return GPU_TYPES.filter((t) => inventory.nodes.some((n) => n.gpuType === t && n.gpuFree > 0));
  return [...GPU_TYPES];
}

// ---------------------------------------------------------------------------------------------
// Evaluating one shape

interface Evaluated {
  shape: ShapeSummary;
  gpus: number;
  pods: { perPod: number; count: number }[];
  predicted: Prediction;
  point: Point;
  headroom: number;
  notes: string[];
}

type Outcome = { ok: true; value: Evaluated } | { ok: false; reason: string; score: number; predicted?: Prediction };

interface Context {
  request: DeploymentRequest;
  facts: ModelFacts;
  workload: Workload;
  bounds: Bounds;
}

/**
 * How far a memory failure is from fitting, as needed ÷ available − 1, offset so that any shape
 * that fits memory (however slow) counts as closer than one that cannot even load.
 */
function memoryScore(perf: PerfModel, gpu: GpuFacts, w: Workload): number {
  const usable = gpu.memoryGb * GIB * perf.shape.gpuMemoryUtilization;
  const needed = perf.weightBytesPerGpu + perf.calibration.activationReserveGb * GIB + perf.kvBytesPerTokenPerGpu * (w.inputTokens + w.outputTokens);
  return MEMORY_SCORE_OFFSET + needed / usable - 1;
}
const MEMORY_SCORE_OFFSET = 1000;

function memoryReason(perf: PerfModel, gpu: GpuFacts, w: Workload): string {
  const weights = perf.weightBytesPerGpu / GIB;
  const usable = gpu.memoryGb * perf.shape.gpuMemoryUtilization;
  if (!perf.fits) {
    return `does not fit memory: ${round(weights)} GiB of weights per GPU + ${perf.calibration.activationReserveGb} GiB activations > ${round(usable)} GiB usable (${Math.round(perf.shape.gpuMemoryUtilization * 100)}% of ${gpu.memoryGb} GiB)`;
  }
  return `does not fit memory: the KV cache left after ${round(weights)} GiB of weights per GPU holds ${perf.kvCapacityTokens} tokens, one request needs ${w.inputTokens + w.outputTokens}`;
}

/**
 * Per-replica concurrency the SLA allows, and the replica count the load needs. With concurrency
 * C: ⌈C ÷ c_max⌉. With a rate R: ⌈R ÷ rate(c_max)⌉ (Little's law, rate = c ÷ E2E). With neither:
 * one replica run at its SLA capacity. `optimize: latency` caps a replica at the knee (ITL within
 * 10% of batch 1); `optimize: throughput` fills it to what the KV cache and the engine hold.
 */
function sizeAggregated(ctx: Context, estimate: (c: number) => ServingEstimate, cap: number): { cMax: number; replicas: number; cOp: number; fail?: string; failScore?: number } {
  const { request, bounds } = ctx;
  let cMax: number;
  if ("optimize" in request.sla) {
    const base = estimate(1).itlMs;
    cMax = request.sla.optimize === "latency" ? largest(cap, (c) => estimate(c).itlMs <= base * 1.1) : Math.floor(cap);
  } else {
    cMax = largest(cap, (c) => pressure(estimate(c), bounds).ratio <= 1);
    if (cMax === 0) {
      const p = pressure(estimate(1), bounds);
      return { cMax: 0, replicas: 0, cOp: 0, fail: `misses the SLA even at concurrency 1: ${p.worst}`, failScore: p.ratio - 1 };
    }
  }
  const { concurrency, requestsPerSecond } = request.workload;
  if (concurrency !== undefined) {
    const replicas = Math.ceil(concurrency / cMax);
    return { cMax, replicas, cOp: Math.ceil(concurrency / replicas) };
  }
  if (requestsPerSecond !== undefined) {
    const replicas = Math.ceil(requestsPerSecond / estimate(cMax).requestsPerSecond);
    const target = requestsPerSecond / replicas;
    // The operating concurrency c where c ÷ E2E(c) = the per-replica rate (rate grows with c).
    let lo = 1;
    let hi = cMax;
    for (let i = 0; i < 30 && hi - lo > 0.01; i++) {
      const mid = (lo + hi) / 2;
      if (estimate(mid).requestsPerSecond < target) lo = mid;
      else hi = mid;
    }
    return { cMax, replicas, cOp: hi };
  }
  return { cMax, replicas: 1, cOp: cMax };
}

function headroomOf(p: Point, b: Bounds): number {
  const { ratio } = pressure(p, b);
  return ratio === 0 ? 0 : 1 / ratio - 1;
}

function evaluateAggregated(ctx: Context, engine: EngineName, gpu: GpuFacts, tensor: number, pipeline: number): Outcome {
  const { workload: w } = ctx;
  const shape: ShapeSummary = { engine, gpuType: gpu.id, mode: "aggregated", tensor, pipeline };
  const perf = createPerfModel({ model: ctx.facts, gpu, shape: { tensorParallel: tensor, pipelineParallel: pipeline } });
  const perInstance = tensor * pipeline;
  const limits = engineBatchLimits(engine, gpu);
  const cap = Math.min(limits.maxRunning, Math.floor(perf.kvCapacityTokens / (w.inputTokens + w.outputTokens)));
  if (cap < 1) return { ok: false, reason: memoryReason(perf, gpu, w), score: memoryScore(perf, gpu, w) };
  const estimate = (c: number) => estimateAggregated(perf, w, c, limits, engine);
  const sized = sizeAggregated(ctx, estimate, cap);
  if (sized.fail) return { ok: false, reason: sized.fail, score: sized.failScore!, predicted: predictionOf(estimate(1), 1, perInstance) };
  const e = estimate(sized.cOp);
  const gpus = sized.replicas * perInstance;
  return {
    ok: true,
    value: {
      shape: { ...shape, replicas: sized.replicas },
      gpus,
      pods: [{ perPod: tensor, count: sized.replicas * pipeline }],
      predicted: predictionOf(e, sized.replicas, gpus),
      point: e,
      headroom: headroomOf(e, ctx.bounds),
      notes: [
        `${round(perf.weightBytesPerGpu / GIB)} GiB of weights per GPU leave KV room for ${cap} requests of ${w.inputTokens + w.outputTokens} tokens per replica`,
        `each replica runs at concurrency ${round(sized.cOp)} (SLA allows up to ${sized.cMax})`,
      ],
    },
  };
}

function predictionOf(e: { ttftMs: number; itlMs: number; outputTokensPerSecond: number; concurrency: number }, replicas: number, gpus: number): Prediction {
  const total = e.outputTokensPerSecond * replicas;
  return {
    ttftMs: round(e.ttftMs),
    itlMs: round(e.itlMs, 2),
    outputTokensPerSecond: round(total),
    outputTokensPerSecondPerGpu: round(total / gpus),
    concurrencyPerReplica: round(e.concurrency, 2),
  };
}

/**
 * Prefill/decode disaggregation: prefill instances (TP p) take prompts, hand the KV cache to
 * decode instances (TP d) over the network, which only decode. Decode replicas hold the
 * concurrency at the ITL bound with no prefill tax; prefill replicas keep utilisation low enough
 * for the TTFT bound (M/D/1 wait plus the KV handoff). Planned only under a TTFT/ITL SLA, where the
 * split pays off; with no load given, one decode replica at its capacity.
 */
function evaluateDisaggregated(ctx: Context, engine: EngineName, gpu: GpuFacts, prefillTp: number, decodeTp: number): Outcome {
  const { workload: w, bounds } = ctx;
  const shape: ShapeSummary = { engine, gpuType: gpu.id, mode: "disaggregated", tensor: decodeTp, pipeline: 1, prefillTensor: prefillTp };
  const prefillPerf = createPerfModel({ model: ctx.facts, gpu, shape: { tensorParallel: prefillTp } });
  const decodePerf = createPerfModel({ model: ctx.facts, gpu, shape: { tensorParallel: decodeTp } });
  const limits: BatchLimits = engineBatchLimits(engine, gpu);
  if (Math.floor(prefillPerf.kvCapacityTokens / w.inputTokens) < 1) return { ok: false, reason: `prefill role ${memoryReason(prefillPerf, gpu, w)}`, score: memoryScore(prefillPerf, gpu, w) };
  const cap = Math.min(limits.maxRunning, Math.floor(decodePerf.kvCapacityTokens / (w.inputTokens + w.outputTokens)));
  if (cap < 1) return { ok: false, reason: `decode role ${memoryReason(decodePerf, gpu, w)}`, score: memoryScore(decodePerf, gpu, w) };
  const itlBound = bounds.itlMs!;
  const ttftBound = bounds.ttftMs!;
  const cMax = largest(cap, (c) => estimateDecode(decodePerf, w, c).itlMs <= itlBound);
  if (cMax === 0) {
    const itl = estimateDecode(decodePerf, w, 1).itlMs;
    return { ok: false, reason: `misses ITL on the decode role even at concurrency 1: ${round(itl)} ms > ${itlBound} ms`, score: itl / itlBound - 1 };
  }
  const prefill = estimatePrefill(prefillPerf, w, limits, KV_TRANSFER_GBS);
  if (prefill.ttftAt(0) > ttftBound) {
    return { ok: false, reason: `misses TTFT on the prefill role: ${round(prefill.ttftAt(0))} ms > ${ttftBound} ms`, score: prefill.ttftAt(0) / ttftBound - 1 };
  }
  // Highest utilisation whose M/D/1 TTFT stays under the bound.
  let uMax = 0;
  for (let u = MAX_PREFILL_UTILISATION; u > 0; u -= 0.01) {
    if (prefill.ttftAt(u) <= ttftBound) {
      uMax = u;
      break;
    }
  }
  if (uMax <= 0) uMax = 0.01;
  const { concurrency, requestsPerSecond } = ctx.request.workload;
  const e2eAt = (c: number) => prefill.ttftAt(uMax) + (w.outputTokens - 1) * estimateDecode(decodePerf, w, c).itlMs;
  const totalConcurrency = concurrency ?? (requestsPerSecond !== undefined ? Math.ceil((requestsPerSecond * e2eAt(cMax)) / 1000) : cMax);
  const decodeReplicas = Math.ceil(totalConcurrency / cMax);
  const cOp = totalConcurrency / decodeReplicas;
  const decode = estimateDecode(decodePerf, w, cOp);
  const rate = requestsPerSecond ?? (totalConcurrency * 1000) / (prefill.ttftAt(uMax) + (w.outputTokens - 1) * decode.itlMs);
  const prefillReplicas = Math.max(1, Math.ceil(rate / (prefill.capacityRps * uMax)));
  const ttftMs = prefill.ttftAt(rate / (prefillReplicas * prefill.capacityRps));
  const point = { ttftMs, itlMs: decode.itlMs, e2eMs: ttftMs + (w.outputTokens - 1) * decode.itlMs };
  const gpus = prefillReplicas * prefillTp + decodeReplicas * decodeTp;
  const perReplicaTokens = (cOp * w.outputTokens * 1000) / point.e2eMs;
  return {
    ok: true,
    value: {
      shape: { ...shape, replicas: decodeReplicas, prefillReplicas },
      gpus,
      pods: [
        { perPod: prefillTp, count: prefillReplicas },
        { perPod: decodeTp, count: decodeReplicas },
      ],
      predicted: predictionOf({ ...point, outputTokensPerSecond: perReplicaTokens, concurrency: cOp }, decodeReplicas, gpus),
      point,
      headroom: headroomOf(point, bounds),
      notes: [
        `decode TP ${decodeTp} holds concurrency ${round(cOp)} per replica at ITL ${round(decode.itlMs, 2)} ms with no prefill in its steps`,
        `prefill TP ${prefillTp} serves a ${w.inputTokens}-token prompt in ${round(prefill.serviceMs)} ms + ${round(prefill.transferMs)} ms KV handoff at ${KV_TRANSFER_GBS} GB/s (assumed)`,
      ],
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Specs

function generateSpec(request: DeploymentRequest, shape: ShapeSummary): DeploymentSpecInput {
  const extraArgs = request.overrides?.extraArgs ?? [];
  const role = (name: string, kind: RoleInput["kind"], replicas: number, tensor: number, pipeline: number): RoleInput => ({
    name,
    kind,
    replicas,
    ...(pipeline > 1 && { size: pipeline }),
    resources: { gpus: tensor, gpuType: shape.gpuType },
    parallelism: { tensor, pipeline },
    ...(extraArgs.length > 0 && { extraArgs: [...extraArgs] }),
  });
  const disaggregated = shape.mode === "disaggregated";
  const replicas = shape.replicas ?? 1;
  return {
    ...(request.hardware.clusterId !== undefined && { clusterId: request.hardware.clusterId }),
    model: { name: request.model.name },
    engine: { name: shape.engine, image: request.overrides?.image ?? DEFAULT_IMAGES[shape.engine] },
    ...((disaggregated || replicas > 1) && { router: { kind: "builtin" as const, policy: "least_load" as const } }),
    ...(disaggregated && { kvTransfer: { connector: "nixl" as const, protocol: "rdma" as const } }),
    roles: disaggregated
      ? [role("prefill", "prefill", shape.prefillReplicas ?? 1, shape.prefillTensor ?? 1, 1), role("decode", "decode", replicas, shape.tensor, 1)]
      : [role("server", "server", replicas, shape.tensor, shape.pipeline)],
  };
}

function describeShape(s: ShapeSummary): string {
  const gpu = s.gpuType;
  const times = (n: number | undefined) => (n === undefined ? "" : `${n}× `);
  if (s.mode === "disaggregated") return `${s.engine} PD on ${gpu}: ${times(s.prefillReplicas)}prefill TP ${s.prefillTensor} + ${times(s.replicas)}decode TP ${s.tensor}`;
  const pp = s.pipeline > 1 ? ` PP ${s.pipeline}` : "";
  return `${s.engine} on ${gpu}: ${times(s.replicas)}TP ${s.tensor}${pp}`;
}

// ---------------------------------------------------------------------------------------------
// Baseline: AIConfigurator's naive memory-fit fallback

/**
 * What Dynamo falls back to outside AIConfigurator's support matrix (aiconfigurator
 * generator/naive.py, https://github.com/ai-dynamo/aiconfigurator; docs/design.md §12.3): the smallest power-of-two TP whose GPUs hold
 * 1.5 × the weights, capped at one node, vLLM, aggregated, no SLA consideration. berth predicts
 * how it would serve the same workload, sized like any aggregated shape.
 */
function evaluateBaseline(ctx: Context, arch: ModelArchitecture, gpu: GpuFacts): PlanBaseline {
  const weights = modelWeightBytes(arch);
  let tensor = 1;
  while (tensor < gpu.gpusPerNode && tensor * gpu.memoryGb * GIB <= 1.5 * weights) tensor *= 2;
  const fits = tensor * gpu.memoryGb * GIB > 1.5 * weights;
  const label = "memory-fit fallback (AIConfigurator naive: smallest power-of-two TP with TP × GPU memory > 1.5 × weights)";
  const shape: ShapeSummary = { engine: "vllm", gpuType: gpu.id, mode: "aggregated", tensor, pipeline: 1 };
  if (!fits) return { label, shape, fits, gpus: tensor, meetsSla: false, why: `1.5 × ${round(weights / GIB)} GiB of weights exceeds one node of ${gpu.gpusPerNode} × ${gpu.memoryGb} GiB` };
  const outcome = evaluateAggregated(ctx, "vllm", gpu, tensor, 1);
  if (!outcome.ok) return { label, shape, fits, gpus: tensor, meetsSla: false, ...(outcome.predicted && { predicted: outcome.predicted }), why: `TP ${tensor} ${outcome.reason}` };
  return {
    label,
    shape: outcome.value.shape,
    fits,
    gpus: outcome.value.gpus,
    meetsSla: true,
    predicted: outcome.value.predicted,
    why: `TP ${tensor} (${round((tensor * gpu.memoryGb) / (weights / GIB), 2)} × the weights in memory); ${outcome.value.notes.join("; ")}`,
  };
}

// ---------------------------------------------------------------------------------------------
// The search

export function planDeploymentRequest(request: DeploymentRequest, options: { inventory?: PlanInventory } = {}): Plan {
  const { arch, from } = resolveModel(request);
  const facts = modelFactsFromArchitecture(arch);
  const workload: Workload = { inputTokens: request.workload.inputTokens, outputTokens: request.workload.outputTokens };
  const ctx: Context = { request, facts, workload, bounds: boundsOf(request.sla) };
  const engines: EngineName[] = request.engine === "auto" ? ["vllm", "sglang"] : [request.engine];
  const gpuTypes = gpuTypesToSearch(request, options.inventory);
  const maxGpus = request.hardware.maxGpus ?? Infinity;
  const latencyBounded = "ttftMs" in request.sla;

  const feasible: Evaluated[] = [];
  const rejected: PlanRejection[] = [];
  let closest: { score: number; shape: ShapeSummary; shortfall: string; predicted?: Prediction } | undefined;
  const consider = (shape: ShapeSummary, outcome: Outcome) => {
    if (outcome.ok) {
      const v = outcome.value;
      const problem =
        v.gpus > maxGpus
          ? { reason: `exceeds maxGpus: needs ${v.gpus} > ${maxGpus}`, score: v.gpus / maxGpus - 1 }
          : v.pods.some((p) => podsThatFit(options.inventory, shape.gpuType, p.perPod) < p.count) ||
              v.pods.reduce((n, p) => n + p.perPod * p.count, 0) > freeOfType(options.inventory, shape.gpuType)
            ? { reason: `exceeds the free inventory: needs ${v.gpus} ${shape.gpuType} GPUs in pods of ${v.pods.map((p) => p.perPod).join("/")}, ${freeOfType(options.inventory, shape.gpuType)} free`, score: v.gpus / Math.max(1, freeOfType(options.inventory, shape.gpuType)) - 1 }
            : undefined;
      if (!problem) {
        feasible.push(v);
        return;
      }
      rejected.push({ shape: v.shape, reason: problem.reason });
      if (!closest || problem.score < closest.score) closest = { score: problem.score, shape: v.shape, shortfall: problem.reason, predicted: v.predicted };
      return;
    }
    rejected.push({ shape, reason: outcome.reason });
    if (!closest || outcome.score < closest.score) closest = { score: outcome.score, shape, shortfall: outcome.reason, ...(outcome.predicted && { predicted: outcome.predicted }) };
  };

  let searched = 0;
  for (const gpuType of gpuTypes) {
    const gpu = GPU_PROFILES[gpuType];
    for (const engine of engines) {
      for (const tensor of TENSOR_DEGREES) {
        if (tensor > gpu.gpusPerNode) continue;
        searched++;
        const shape: ShapeSummary = { engine, gpuType, mode: "aggregated", tensor, pipeline: 1 };
        const outcome = evaluateAggregated(ctx, engine, gpu, tensor, 1);
        consider(shape, outcome);
        // A full node that cannot hold the model: pipeline stages across hosts.
        if (tensor === gpu.gpusPerNode && !outcome.ok && outcome.reason.startsWith("does not fit memory")) {
          for (const pipeline of PIPELINE_DEGREES) {
            searched++;
            const deeper = evaluateAggregated(ctx, engine, gpu, tensor, pipeline);
            consider({ ...shape, pipeline }, deeper);
            if (deeper.ok || !deeper.reason.startsWith("does not fit memory")) break;
          }
        }
      }
      if (!latencyBounded) continue;
      for (const prefillTp of TENSOR_DEGREES) {
        for (const decodeTp of TENSOR_DEGREES) {
          if (Math.max(prefillTp, decodeTp) > gpu.gpusPerNode) continue;
          searched++;
          consider({ engine, gpuType, mode: "disaggregated", tensor: decodeTp, pipeline: 1, prefillTensor: prefillTp }, evaluateDisaggregated(ctx, engine, gpu, prefillTp, decodeTp));
        }
      }
    }
  }

  // Every candidate must pass the same admission as a hand-written deployment.
  const admitted: { v: Evaluated; spec: DeploymentSpecInput }[] = [];
  for (const v of feasible) {
    const spec = generateSpec(request, v.shape);
    const errors = admitDeploymentSpec(request.name, applySpecDefaults(spec), {});
    if (errors.length > 0) rejected.push({ shape: v.shape, reason: `refused by admission: ${errors.map((e) => `${e.pointer} ${e.message}`).join("; ")}` });
    else admitted.push({ v, spec });
  }
  admitted.sort((a, b) => compare(request.sla, a.v, b.v));

  const candidates = admitted.slice(0, MAX_CANDIDATES).map(({ v, spec }, i): PlanCandidate => ({
    rank: i + 1,
    gpus: v.gpus,
    shape: v.shape,
    spec,
    predicted: v.predicted,
    headroom: round(v.headroom, 3),
    why: explain(request.sla, v, i, admitted[0]!.v, admitted.length),
  }));
  const baselineGpu = GPU_PROFILES[candidates[0]?.shape.gpuType ?? request.hardware.gpuType ?? gpuTypes[0] ?? "nvidia-h100-80gb"];
  const baseline = evaluateBaseline(ctx, arch, baselineGpu);
  const model = { id: arch.id, from, totalParamsB: arch.totalParamsB, activeParamsB: arch.activeParamsB, attention: arch.attention, weightGiB: round(modelWeightBytes(arch) / GIB) };
  if (candidates.length === 0) {
    return {
      phase: "Failed",
      reason: gpuTypes.length === 0 ? "no GPU type to plan for: the cluster reports no free GPUs" : `no shape meets the request: ${closest ? `closest is ${describeShape(closest.shape)}, which ${closest.shortfall}` : "nothing was evaluated"}`,
      model,
      candidates: [],
      moreCandidates: 0,
      rejected,
      ...(closest && { closest: { shape: closest.shape, shortfall: closest.shortfall, ...(closest.predicted && { predicted: closest.predicted }) } }),
      baseline,
      searched,
    };
  }
  return { phase: "Ready", model, candidates, moreCandidates: Math.max(0, admitted.length - MAX_CANDIDATES), rejected, baseline, searched };
}

function freeOfType(inventory: PlanInventory | undefined, gpuType: GpuType): number {
  if (!inventory) return Infinity;
  return inventory.nodes.filter((n) => n.gpuType === gpuType).reduce((sum, n) => sum + n.gpuFree, 0);
}

/**
 * Ranking: under a latency SLA, fewest GPUs, then most headroom, then aggregated before
 * disaggregated (fewer moving parts), then engine order. `optimize: latency` ranks by predicted
 * end-to-end latency, `optimize: throughput` by output tokens per second per GPU.
 */
function compare(sla: Sla, a: Evaluated, b: Evaluated): number {
  if ("optimize" in sla) {
    const primary = sla.optimize === "latency" ? a.point.e2eMs - b.point.e2eMs : b.predicted.outputTokensPerSecondPerGpu - a.predicted.outputTokensPerSecondPerGpu;
    if (primary !== 0) return primary;
    return a.gpus - b.gpus;
  }
  return (
    a.gpus - b.gpus ||
    b.headroom - a.headroom ||
    Number(a.shape.mode === "disaggregated") - Number(b.shape.mode === "disaggregated") ||
    a.shape.engine.localeCompare(b.shape.engine)
  );
}

function explain(sla: Sla, v: Evaluated, index: number, best: Evaluated, total: number): string {
  const p = v.predicted;
  const slaText =
    "ttftMs" in sla
      ? `TTFT ${p.ttftMs} ms ≤ ${sla.ttftMs}, ITL ${p.itlMs} ms ≤ ${sla.itlMs} (headroom ${Math.round(v.headroom * 100)}%)`
      : "e2eMs" in sla
        ? `E2E ${round(v.point.e2eMs)} ms ≤ ${sla.e2eMs} (headroom ${Math.round(v.headroom * 100)}%)`
        : `E2E ${round(v.point.e2eMs)} ms, ${p.outputTokensPerSecondPerGpu} output tok/s per GPU`;
  const standing =
    index === 0
      ? "optimize" in sla
        ? `best of ${total} feasible shapes for ${sla.optimize}`
        : `fewest GPUs (${v.gpus}) of ${total} feasible shapes${total > 1 ? ", most headroom among equals" : ""}`
      : "optimize" in sla
        ? `ranks below ${describeShape(best.shape)} on ${sla.optimize}`
        : v.gpus > best.gpus
          ? `needs ${v.gpus - best.gpus} more GPU${v.gpus - best.gpus === 1 ? "" : "s"} than rank 1`
          : `same GPUs as rank 1, ${v.headroom < best.headroom ? "less headroom" : "ties on headroom; simpler or earlier engine ranks first"}`;
  return `${describeShape(v.shape)} — ${standing}; ${slaText}; ${v.notes.join("; ")}`;
}

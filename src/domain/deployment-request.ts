// A deployment request (docs/design.md §11): model + workload + SLA + hardware bounds in, a ranked list of
// generated deployment specs out. This module owns the request's schema with its defaults and the
// shape of a plan; planner.ts computes plans. Field names follow docs/design.md §3 and §11.
import { z } from "zod";
import { DeploymentSpecInput, GpuType, isDns1035Label, strictObject } from "./deployment-spec.ts";
import { isId } from "./ids.ts";
import { HfArchitectureInput } from "./model-catalog.ts";
import { MAX_CANDIDATES } from "./planner.ts";
import { LIMITS, boundedInt, counter, id, timestamp } from "./limits.ts";

const ms = (what: string) => z.number().positive().max(3_600_000).describe(what);

export const RequestModel = strictObject({
  name: z.string().min(1).max(256).describe("Hugging Face model id; also the served name of the generated deployment."),
  architecture: HfArchitectureInput.optional().describe("config.json fields, required when the catalogue does not know `name`."),
});

export const Workload = strictObject({
  inputTokens: boundedInt(1, 1_048_576).default(4000).describe("Prompt tokens per request; defaults to 4000."),
  outputTokens: boundedInt(1, 1_048_576).default(1000).describe("Generated tokens per request; defaults to 1000."),
  requestsPerSecond: z.number().positive().max(1_000_000).optional().describe("Arrival rate to serve within the SLA."),
  concurrency: boundedInt(1, 10_000_000).optional().describe("Requests in flight to serve within the SLA."),
});
export type Workload = z.infer<typeof Workload>;

export const LatencySla = strictObject({
  ttftMs: ms("Mean time to first token, ms."),
  itlMs: ms("Mean inter-token latency, ms."),
});
export const EndToEndSla = strictObject({ e2eMs: ms("Mean end-to-end request latency, ms.") });
export const OptimizeSla = strictObject({
  optimize: z.enum(["latency", "throughput"]).describe("No bound: favour low latency (replicas near their batch-1 speed) or throughput per GPU (full batches)."),
});
export const Sla = z
  .union([LatencySla, EndToEndSla, OptimizeSla], { error: "must be exactly one of { ttftMs, itlMs }, { e2eMs } or { optimize }" })
  .describe("Service-level objective; defaults to { ttftMs: 2000, itlMs: 30 }.");
export type Sla = z.infer<typeof Sla>;

export const Hardware = strictObject({
  clusterId: z.string().max(LIMITS.id).refine((v) => isId("cluster", v), { error: "must be a cluster id (clu_…)" }).optional().describe("Plan against this cluster's free inventory."),
  gpuType: GpuType.optional().describe("Only this GPU type; absent means every type available."),
  maxGpus: boundedInt(1, 100_000).optional().describe("Most GPUs the deployment may use."),
});
export type Hardware = z.infer<typeof Hardware>;

export const RequestOverrides = strictObject({
  image: z.string().min(1).max(512).regex(/^\S+$/).optional().describe("Engine image for the generated spec; defaults per engine."),
  extraArgs: z.array(z.string().max(4096)).max(256).optional().describe("Appended to every generated role's engine arguments."),
});

export const DeploymentRequestInput = strictObject({
  name: z.string().min(1).max(63).refine(isDns1035Label, { error: "must be a DNS-1035 label" }).describe("Name of the request, and of the deployment it generates."),
  projectId: z.string().max(LIMITS.id).optional().describe("Project; implied by a project-bound key."),
  model: RequestModel,
  engine: z.enum(["auto", "vllm", "sglang"]).default("auto").describe("Engine to plan for; `auto` tries both."),
  workload: Workload.default({ inputTokens: 4000, outputTokens: 1000 }),
  sla: Sla.default({ ttftMs: 2000, itlMs: 30 }),
  hardware: Hardware.default({}),
  autoApply: z.boolean().default(false).describe("Create the first candidate's deployment as soon as planning is done."),
  overrides: RequestOverrides.optional(),
})
  .describe("A deployment request: model, workload and SLA in, ranked deployment candidates out.")
  .meta({ id: "DeploymentRequestInput" });
/** As written by a user (defaults optional). */
export type DeploymentRequestBody = z.input<typeof DeploymentRequestInput>;
/** With every default filled in. */
export type DeploymentRequest = z.output<typeof DeploymentRequestInput>;

export const ShapeSummary = z
  .object({
    engine: z.enum(["vllm", "sglang"]),
    gpuType: GpuType,
    mode: z.enum(["aggregated", "disaggregated"]),
    tensor: counter().describe("TP of the server role, or of the decode role when disaggregated."),
    pipeline: counter(),
    prefillTensor: counter().optional().describe("TP of the prefill role (disaggregated)."),
    replicas: counter().optional().describe("Server (or decode) replicas, once sized."),
    prefillReplicas: counter().optional(),
  })
  .meta({ id: "PlanShape" });
export type ShapeSummary = z.infer<typeof ShapeSummary>;

export const Prediction = z
  .object({
    ttftMs: z.number(),
    itlMs: z.number(),
    outputTokensPerSecond: z.number().describe("Whole deployment."),
    outputTokensPerSecondPerGpu: z.number(),
    concurrencyPerReplica: z.number().describe("Requests in flight on each serving replica at the operating point."),
  })
  .meta({ id: "PlanPrediction" });
export type Prediction = z.infer<typeof Prediction>;

// ---------------------------------------------------------------------------------------------
// The stored resource: the defaulted request (immutable once planning started) and its status.

const PlanRejection = z.object({ shape: ShapeSummary, reason: z.string().max(LIMITS.text) }).meta({ id: "PlanRejection" });

export const PlanCandidate = z
  .object({
    rank: counter().describe("1 is the best."),
    gpus: counter().describe("GPUs the whole deployment holds."),
    shape: ShapeSummary,
    spec: DeploymentSpecInput.describe("The generated deployment spec; apply creates exactly this."),
    predicted: Prediction,
    headroom: z.number().describe("Smallest relative margin under the SLA bounds at the operating point (0.2 = 20% to spare)."),
    why: z.string().max(LIMITS.text).describe("Why this shape ranks where it does."),
  })
  .meta({ id: "PlanCandidate" });

export const PlanBaseline = z
  .object({
    label: z.string().max(LIMITS.name),
    shape: ShapeSummary,
    fits: z.boolean().describe("Whether the fallback's TP holds 1.5 × the weights within one node."),
    gpus: counter(),
    meetsSla: z.boolean(),
    predicted: Prediction.optional(),
    why: z.string().max(LIMITS.text),
  })
  .describe("Dynamo's memory-fit fallback, priced by berth's model for comparison.")
  .meta({ id: "PlanBaseline" });

export const REQUEST_PHASES = ["Planning", "Ready", "Deploying", "Deployed", "Failed"] as const;
export type RequestPhase = (typeof REQUEST_PHASES)[number];

export const DeploymentRequestStatus = z
  .object({
    phase: z.enum(REQUEST_PHASES).describe("Planning → Ready (candidates computed) → Deploying → Deployed (the deployment exists), or Failed."),
    reason: z.string().max(LIMITS.text).optional().describe("Why it failed."),
    model: z.object({
      id: z.string().max(LIMITS.name),
      from: z.enum(["catalog", "architecture"]),
      totalParamsB: z.number(),
      activeParamsB: z.number(),
      attention: z.string().max(LIMITS.name),
      weightGiB: z.number(),
    }),
    candidates: z.array(PlanCandidate).max(MAX_CANDIDATES).describe("Feasible shapes, best first (at most 20)."),
    moreCandidates: counter().describe("Feasible shapes not listed."),
    rejected: z.array(PlanRejection).describe("Shapes that were evaluated and refused, with the reason."),
    closest: z
      .object({ shape: ShapeSummary, shortfall: z.string().max(LIMITS.text), predicted: Prediction.optional() })
      .optional()
      .describe("On Failed: the shape nearest to feasible and what it lacks."),
    baseline: PlanBaseline,
    searched: counter().describe("Shapes evaluated."),
    selected: counter().optional().describe("Rank of the applied candidate."),
    deploymentId: z.string().max(LIMITS.id).optional().describe("The deployment apply created (dep_…)."),
    plannedAt: timestamp().describe("When planning finished."),
  })
  .meta({ id: "DeploymentRequestStatus" });
export type DeploymentRequestStatus = z.infer<typeof DeploymentRequestStatus>;

export const DeploymentRequestResource = z
  .object({
    id: id().describe("dreq_…"),
    name: z.string().max(LIMITS.name),
    projectId: z.string().max(LIMITS.id),
    spec: DeploymentRequestInput.describe("The request with its defaults; immutable."),
    status: DeploymentRequestStatus,
    resourceVersion: counter(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
  })
  .meta({ id: "DeploymentRequest" });
export type DeploymentRequestResource = z.infer<typeof DeploymentRequestResource>;

export const ApplyRequest = strictObject({
  candidate: boundedInt(1, 1000).optional().describe("Rank of the candidate to deploy; defaults to 1."),
}).meta({ id: "ApplyDeploymentRequest" });
export type ApplyRequest = z.infer<typeof ApplyRequest>;

/** Label the generated deployment carries, pointing back at its request. */
export const REQUEST_LABEL = "berth.dev/deployment-request";

// The ModelDeployment contract (docs/design.md §3.1, §3.2): what a user may send as `spec`, the defaulted
// spec that is stored and returned, the status the agent writes, and the conversion of zod issues
// into JSON-pointer field errors. Invariant: applySpecDefaults(x) parses under DeploymentSpecInput.
import { GPU_TYPES } from "./gpu-profiles.ts";
import { z } from "zod";
import type { FieldError } from "./errors.ts";
import { isId } from "./ids.ts";
import { LIMITS, boundedInt, timestamp } from "./limits.ts";

// ---------------------------------------------------------------------------------------------
// Names and small shared shapes

export const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const QUANTITY = /^(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+)?$/;
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+$/;
const CONDITION_REASON = /^[A-Z][A-Za-z0-9]*$/;

/** True for a Kubernetes DNS-1035 label: lower-case letters, digits and '-', starting with a letter, ≤ 63. */
export function isDns1035Label(value: string): boolean {
  return value.length <= 63 && DNS1035_LABEL.test(value);
}

/** True for a Kubernetes DNS-1123 label: lower-case letters, digits and '-', ≤ 63. */
export function isDns1123Label(value: string): boolean {
  return value.length <= 63 && DNS1123_LABEL.test(value);
}

function isDns1123Subdomain(value: string): boolean {
  return value.length <= 253 && DNS1123_SUBDOMAIN.test(value);
}

/** True for a Kubernetes label key: an optional DNS-subdomain prefix and '/', then a name of ≤ 63 characters. */
export function isLabelKey(key: string): boolean {
  const slash = key.indexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && !isDns1123Subdomain(prefix)) return false;
  return name.length >= 1 && name.length <= 63 && LABEL_NAME.test(name);
}

/** True for a Kubernetes label value: empty, or ≤ 63 characters of letters, digits, '-', '_', '.'. */
export function isLabelValue(value: string): boolean {
  return value === "" || (value.length <= 63 && LABEL_NAME.test(value));
}

/**
 * A strict object whose unknown-field error lists the allowed fields, so that
 * zodIssuesToFieldErrors can tell the user what they may write instead.
 */
export function strictObject<T extends z.core.$ZodLooseShape>(shape: T) {
  const allowed = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys" ? `unknown field; remove it (allowed fields: ${allowed})` : undefined,
  });
}

export { GPU_TYPES };
export const GpuType = z
  .enum(GPU_TYPES)
  .describe("GPU type as `<vendor>-<model>-<memory>` in lower case; absent means any type.");
export type GpuType = z.infer<typeof GpuType>;

export const ENGINE_NAMES = ["vllm", "sglang"] as const;
export const EngineName = z.enum(ENGINE_NAMES).describe("Serving engine.");
export type EngineName = z.infer<typeof EngineName>;

export const ROLE_KINDS = ["server", "prefill", "decode", "encode"] as const;
export const RoleKind = z
  .enum(ROLE_KINDS)
  .describe("`server` serves whole requests alone; `prefill`/`decode`(/`encode`) form a disaggregated (PD/EPD) pipeline.");
export type RoleKind = z.infer<typeof RoleKind>;

export const ROUTER_KINDS = ["builtin", "vllm-router", "sglang-gateway"] as const;
export const ROUTER_POLICIES = ["round_robin", "least_load", "cache_aware", "session_affinity"] as const;

export const DeploymentName = z
  .string()
  .min(1)
  .max(63)
  .regex(DNS1035_LABEL, {
    error: "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit",
  })
  .describe("Deployment name: a DNS-1035 label, unique in its project.")
  .meta({ id: "DeploymentName" });
export type DeploymentName = z.infer<typeof DeploymentName>;

export const DeploymentLabels = z
  .record(
    // The refinements enforce the lengths (and say so in one message); meta declares them.
    z.string().meta({ maxLength: LIMITS.labelKey }).refine(isLabelKey, {
      error:
        "must be a Kubernetes label key: an optional DNS-subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit",
    }),
    z.string().meta({ maxLength: LIMITS.labelValue }).refine(isLabelValue, {
      error:
        "must be a Kubernetes label value: empty, or at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit",
    }),
  )
  .refine((labels) => Object.keys(labels).length <= 64, {
    error: "must have at most 64 labels; remove some",
  })
  .meta({ maxProperties: LIMITS.mapEntries })
  .describe("Free-form labels for selection and grouping, with Kubernetes label syntax; at most 64.")
  .meta({ id: "DeploymentLabels" });
export type DeploymentLabels = z.infer<typeof DeploymentLabels>;

const kubeName = (what: string) =>
  z
    .string()
    .min(1)
    .max(253)
    .refine(isDns1123Subdomain, { error: `must be a Kubernetes ${what} name (a DNS-1123 subdomain)` });

const quantity = (what: string) =>
  z
    .string()
    .max(64)
    .regex(QUANTITY, { error: "must be a Kubernetes quantity such as 8, 500m, 64Gi or 16G" })
    .describe(`${what} as a Kubernetes quantity (e.g. \`8\`, \`500m\`, \`64Gi\`).`);

const count = (min: number, max: number) => boundedInt(min, max);

// ---------------------------------------------------------------------------------------------
// Model, engine, router, KV transfer

const HuggingFaceSourceInput = strictObject({
  huggingFace: strictObject({
    repository: z.string().min(1).max(256).describe("Hugging Face repository id, e.g. `Qwen/Qwen3-8B`."),
    revision: z.string().min(1).max(256).describe("Branch, tag or commit; defaults to `main`.").optional(),
  }),
});
const PvcSource = strictObject({
  pvc: strictObject({
    claimName: kubeName("PersistentVolumeClaim").describe("PersistentVolumeClaim in the project namespace holding the weights."),
    path: z.string().min(1).max(1024).describe("Directory inside the claim; absent means its root.").optional(),
  }),
});
const UriSource = strictObject({
  uri: z.string().max(2048).regex(URI, { error: "must be a URI with a scheme, e.g. s3://bucket/path" }).describe("Where the engine loads the weights from, e.g. `s3://bucket/path`."),
});
const SOURCE_ERROR = "must be exactly one of { huggingFace: { repository, revision? } }, { pvc: { claimName, path? } } or { uri }";

export const ModelSourceInput = z
  .union([HuggingFaceSourceInput, PvcSource, UriSource], { error: SOURCE_ERROR })
  .describe("Where the weights come from; exactly one of `huggingFace`, `pvc`, `uri`. Defaults to the Hugging Face repository named `model.name` at `main`.")
  .meta({ id: "ModelSourceInput" });

const HuggingFaceSource = strictObject({
  huggingFace: HuggingFaceSourceInput.shape.huggingFace.required(),
});
export const ModelSource = z
  .union([HuggingFaceSource, PvcSource, UriSource], { error: SOURCE_ERROR })
  .describe("Where the weights come from; exactly one of `huggingFace`, `pvc`, `uri`.")
  .meta({ id: "ModelSource" });
export type ModelSource = z.infer<typeof ModelSource>;

const SecretKeyRef = strictObject({
  name: kubeName("Secret").describe("Secret in the project namespace."),
  key: z.string().min(1).max(253).regex(SECRET_KEY, { error: "must be a Secret key: letters, digits, '-', '_' or '.'" }).describe("Key inside the Secret."),
});

const ModelInput = strictObject({
  name: z.string().min(1).max(256).describe("Served model name; every role serves exactly this name. Immutable."),
  source: ModelSourceInput.optional(),
  hfTokenSecret: SecretKeyRef.describe("Secret holding a Hugging Face token; a reference, never the token itself.").optional(),
});
const Model = ModelInput.extend({ source: ModelSource });

const Engine = strictObject({
  name: EngineName.describe("Serving engine. Immutable."),
  image: z.string().min(1).max(512).regex(/^\S+$/, { error: "must be an image reference without spaces" }).describe("Engine container image, e.g. `vllm/vllm-openai:v0.11.0`."),
});

const RouterInput = strictObject({
  kind: z.enum(ROUTER_KINDS).describe("Router implementation; defaults to `builtin`. Immutable.").optional(),
  policy: z.enum(ROUTER_POLICIES).describe("Load-balancing policy; defaults to `round_robin`.").optional(),
  replicas: count(1, 16).describe("Router pods; defaults to 1.").optional(),
});
const Router = RouterInput.required();

const KvTransferInput = strictObject({
  connector: z.enum(["nixl", "mooncake"]).describe("KV-cache transfer connector; defaults to `nixl`.").optional(),
  protocol: z.enum(["tcp", "rdma"]).describe("Transport of the KV transfer; defaults to `tcp`.").optional(),
});
const KvTransfer = KvTransferInput.required();

// ---------------------------------------------------------------------------------------------
// Roles

const ResourcesInput = strictObject({
  gpus: count(0, 1024).describe("GPUs per pod; defaults to 1 (an elastic role: tensor × pipeline).").optional(),
  gpuType: GpuType.optional(),
  cpu: quantity("CPU request per pod").optional(),
  memory: quantity("Memory request per pod").optional(),
  sharedMemory: quantity("Size of the memory-backed /dev/shm per pod").optional(),
});
const Resources = ResourcesInput.required({ gpus: true });

const ParallelismInput = strictObject({
  tensor: count(1, 1024).describe("Tensor-parallel degree; defaults to gpus × size ÷ (pipeline × data).").optional(),
  pipeline: count(1, 1024).describe("Pipeline-parallel degree; defaults to 1.").optional(),
  data: count(1, 1024).describe("Data-parallel ranks per instance; defaults to 1. Ignored by an elastic role.").optional(),
  dataLocal: count(1, 1024).describe("Data-parallel ranks per pod; defaults to data ÷ size (at least 1).").optional(),
  expert: z.boolean().describe("Expert parallelism for MoE layers; defaults to false.").optional(),
  externalDP: z.boolean().describe("One pod and endpoint per DP rank, balanced by the router; defaults to false.").optional(),
});
const Parallelism = ParallelismInput.required();

const Elastic = strictObject({
  width: count(1, 1024).describe("Current data-parallel width (ranks, one pod each); 2..maxWidth. Changed by the resize verb."),
  maxWidth: count(1, 1024).describe("Largest width a resize may reach. Immutable."),
});

/** Kubernetes' Secret key rule (a ConfigMap/Secret data key). */
const SECRET_KEY_NAME = /^[-._a-zA-Z0-9]+$/;

const SecretKeySelector = strictObject({
  name: kubeName("Secret").describe("A Secret in the deployment's namespace (its project's); berth never reads it."),
  key: z
    .string()
    .min(1)
    .max(253)
    .regex(SECRET_KEY_NAME, { error: "must be a Secret key: letters, digits, '-', '_' and '.'" })
    .describe("The key in the Secret's data."),
  optional: z.boolean().describe("Start the container even when the Secret or key is missing; defaults to false.").optional(),
});

// Kubernetes' EnvVar, restricted to what berth renders: a literal value or a Secret's key.
const EnvVar = strictObject({
  name: z.string().min(1).max(256).regex(ENV_NAME, { error: "must be an environment variable name: letters, digits and '_', not starting with a digit" }).describe("Variable name."),
  value: z.string().max(32768).describe("Variable value. Not with valueFrom.").optional(),
  valueFrom: strictObject({
    secretKeyRef: SecretKeySelector.describe("Read the value from a key of a Secret when the pod starts."),
  })
    .describe("Where the value comes from instead of `value` (Kubernetes' shape): only secretKeyRef.")
    .optional(),
}).superRefine((env, ctx) => {
  if (env.value !== undefined && env.valueFrom !== undefined) {
    ctx.addIssue({ code: "custom", path: ["valueFrom"], message: "is mutually exclusive with value; keep one of them" });
  } else if (env.value === undefined && env.valueFrom === undefined) {
    ctx.addIssue({ code: "custom", path: ["value"], message: "is required; add it, or read it from a Secret with valueFrom.secretKeyRef" });
  }
});

const RolloutInput = strictObject({
  maxSurge: count(0, 64)
    .describe("Extra instances a spec change may start above `replicas` (at indexes replicas…replicas+maxSurge-1) before old ones leave; defaults to 1. Falls back to one at a time when the cluster lacks the GPUs.")
    .optional(),
  maxUnavailable: count(0, 1024)
    .describe("Instances that may be out of service during a spec change, below `replicas`; defaults to 0. Not both 0.")
    .optional(),
});
/** The stored strategy: both counts present. */
export const Rollout = RolloutInput.required();
export type Rollout = z.infer<typeof Rollout>;
/** docs/design.md §5: a new instance serves before an old one leaves. */
export const DEFAULT_ROLLOUT: Rollout = { maxSurge: 1, maxUnavailable: 0 };

const argList = (what: string) =>
  z.array(z.string().max(4096)).max(256).describe(what);

export const RoleInput = strictObject({
  name: z.string().min(1).max(63).describe("Role name: a DNS-1035 label, unique in the deployment. Immutable."),
  kind: RoleKind.describe("Role kind; defaults to `server`. Immutable.").optional(),
  replicas: count(0, 1024).describe("Serving instances; defaults to 1.").optional(),
  size: count(1, 64).describe("Pods per instance (multi-host); defaults to 1. Above 1: leader m0 plus workers.").optional(),
  resources: ResourcesInput.describe("Per-pod resources.").optional(),
  parallelism: ParallelismInput.describe("Parallel degrees, rendered to the engine's flags.").optional(),
  elastic: Elastic.describe("Elastic expert parallelism (vLLM only; the deployment's only role).").optional(),
  extraArgs: argList("Arguments appended to the engine command; flags berth owns are refused.").optional(),
  env: z.array(EnvVar).max(256).describe("Extra environment variables; names berth owns are refused.").optional(),
  command: argList("Replaces the whole engine command: the role becomes unmanaged (no probes, no drain).").optional(),
  terminationGracePeriodSeconds: count(0, 86400).describe("Pod termination grace period; defaults to 30.").optional(),
  rollout: RolloutInput.describe("How a spec change replaces instances (surge first, then retire the old ones); changing it alone rolls nothing.").optional(),
}).meta({ id: "RoleInput" });
export type RoleInput = z.infer<typeof RoleInput>;

export const Role = RoleInput.extend({
  resources: Resources.describe("Per-pod resources."),
  // Optional in the stored shape: specs stored before the field existed read as DEFAULT_ROLLOUT.
  rollout: Rollout.describe("How a spec change replaces instances (surge first, then retire the old ones); changing it alone rolls nothing.").optional(),
  parallelism: Parallelism.describe("Parallel degrees, rendered to the engine's flags."),
})
  .required({
    kind: true,
    replicas: true,
    size: true,
    extraArgs: true,
    env: true,
    command: true,
    terminationGracePeriodSeconds: true,
  })
  .meta({ id: "Role" });
export type Role = z.infer<typeof Role>;

// ---------------------------------------------------------------------------------------------
// Scaling

const ScalingRoleInput = strictObject({
  name: z.string().min(1).max(63).describe("A role of this deployment."),
  minReplicas: count(0, 1024).describe("Fewest replicas the autoscaler may set; defaults to 1.").optional(),
  maxReplicas: count(1, 1024).describe("Most replicas the autoscaler may set."),
});
const ScalingRole = ScalingRoleInput.required();

const QueueDepthInput = strictObject({
  type: z.literal("queue_depth"),
  targetPerReplica: z.number().positive().max(1_000_000).describe("Running + waiting requests one replica should hold; defaults to 8.").optional(),
  tolerance: z.number().min(0).max(1).describe("Relative band around the target inside which nothing changes; defaults to 0.1.").optional(),
});
const Sla = strictObject({
  type: z.literal("sla"),
  ttftMs: z.number().positive().max(3_600_000).describe("Target time to first token, ms."),
  itlMs: z.number().positive().max(3_600_000).describe("Target inter-token latency, ms."),
});
const ALGORITHM_ERROR = "must have type queue_depth or sla";
const ScalingAlgorithmInput = z.discriminatedUnion("type", [QueueDepthInput, Sla], { error: ALGORITHM_ERROR });
const ScalingAlgorithm = z.discriminatedUnion("type", [QueueDepthInput.required(), Sla], { error: ALGORITHM_ERROR });

const RetirementInput = strictObject({
  withdrawSeconds: count(0, 86400).describe("Budget for every router to stop sending to the replica; defaults to 30.").optional(),
  drainSeconds: count(0, 86400).describe("Budget for in-flight requests to finish; defaults to 240.").optional(),
  settleSeconds: count(0, 86400).describe("Budget for the pods to go and their GPUs to show free; defaults to 30.").optional(),
});

const PdRatio = strictObject({
  min: z.number().positive().max(1000).describe("Lowest prefill:decode replica ratio."),
  max: z.number().positive().max(1000).describe("Highest prefill:decode replica ratio."),
});

export const ScalingInput = strictObject({
  mode: z.enum(["off", "shadow", "active"]).describe("`shadow` only reports recommendations, `active` applies them; defaults to `off`.").optional(),
  intervalSeconds: count(1, 3600).describe("Seconds between evaluations; defaults to 15.").optional(),
  roles: z.array(ScalingRoleInput).max(16).describe("Roles the autoscaler may resize, with their bounds; defaults to none.").optional(),
  algorithm: ScalingAlgorithmInput.describe("How desired replicas are computed; defaults to queue_depth (target 8, tolerance 0.1).").optional(),
  pdRatio: PdRatio.describe("Bounds on prefill:decode replicas (PD only).").optional(),
  scaleDownStabilizationSeconds: count(0, 86400).describe("A lower recommendation must hold this long before it applies; defaults to 300.").optional(),
  retirement: RetirementInput.describe("Per-step budgets of the retirement protocol.").optional(),
}).meta({ id: "ScalingInput" });

export const Scaling = ScalingInput.extend({
  roles: z.array(ScalingRole).max(16).describe("Roles the autoscaler may resize, with their bounds."),
  algorithm: ScalingAlgorithm.describe("How desired replicas are computed."),
  retirement: RetirementInput.required().describe("Per-step budgets of the retirement protocol."),
})
  .required({ mode: true, intervalSeconds: true, scaleDownStabilizationSeconds: true })
  .meta({ id: "Scaling" });

// ---------------------------------------------------------------------------------------------
// The spec

const clusterId = z
  .string()
  .max(LIMITS.id)
  .refine((value) => isId("cluster", value), { error: "must be a cluster id (clu_…)" })
  .describe("Cluster the deployment runs in; optional while only one cluster exists.");

export const DeploymentSpecInput = strictObject({
  clusterId: clusterId.optional(),
  model: ModelInput,
  engine: Engine,
  router: RouterInput.describe("Request router; required for PD/EPD and external DP.").optional(),
  kvTransfer: KvTransferInput.describe("KV-cache transfer between prefill and decode (PD/EPD only).").optional(),
  roles: z.array(RoleInput).min(1).max(16).describe("Roles of the deployment: one `server`, or prefill + decode (+ encode)."),
  scaling: ScalingInput.optional(),
})
  .describe("A model deployment as a user writes it; omitted fields take their defaults.")
  .meta({ id: "DeploymentSpecInput" });
export type DeploymentSpecInput = z.infer<typeof DeploymentSpecInput>;

export const DeploymentSpec = DeploymentSpecInput.extend({
  model: Model,
  router: Router.describe("Request router.").optional(),
  kvTransfer: KvTransfer.describe("KV-cache transfer between prefill and decode.").optional(),
  roles: z.array(Role).min(1).max(16).describe("Roles of the deployment."),
  scaling: Scaling.optional(),
})
  .describe("A model deployment with every default filled in, as stored and returned.")
  .meta({ id: "DeploymentSpec" });
export type DeploymentSpec = z.infer<typeof DeploymentSpec>;

// ---------------------------------------------------------------------------------------------
// Defaults

const DISAGGREGATED_KINDS: ReadonlySet<RoleKind> = new Set(["prefill", "decode", "encode"]);

/** Whether the spec splits serving across prefill/decode(/encode) roles. */
export function isDisaggregated(roles: readonly { kind?: RoleKind }[]): boolean {
  return roles.some((role) => role.kind !== undefined && DISAGGREGATED_KINDS.has(role.kind));
}

/** `a ÷ b` when it is a positive whole number, else `fallback`. */
function evenQuotient(a: number, b: number, fallback: number): number {
  const q = a / b;
  return Number.isInteger(q) && q >= 1 ? q : fallback;
}

function defaultRole(role: RoleInput): Role {
  const p = role.parallelism ?? {};
  const r = role.resources ?? {};
  const size = role.size ?? 1;
  const pipeline = p.pipeline ?? 1;
  const data = p.data ?? 1;
  let tensor: number;
  let gpus: number;
  if (role.elastic) {
    // Each elastic pod is one DP rank holding a whole TP × PP group.
    tensor = p.tensor ?? (r.gpus !== undefined ? evenQuotient(r.gpus, pipeline, 1) : 1);
    gpus = r.gpus ?? tensor * pipeline;
  } else {
    gpus = r.gpus ?? 1;
    // A degree that does not divide evenly is left at 1 for the fit rule to refuse.
    tensor = p.tensor ?? evenQuotient(gpus * size, pipeline * data, 1);
  }
  return {
    name: role.name,
    kind: role.kind ?? "server",
    replicas: role.replicas ?? 1,
    size,
    resources: {
      gpus,
      ...(r.gpuType !== undefined && { gpuType: r.gpuType }),
      ...(r.cpu !== undefined && { cpu: r.cpu }),
      ...(r.memory !== undefined && { memory: r.memory }),
      ...(r.sharedMemory !== undefined && { sharedMemory: r.sharedMemory }),
    },
    parallelism: {
      tensor,
      pipeline,
      data,
      dataLocal: p.dataLocal ?? Math.max(1, Math.floor(data / size)),
      expert: p.expert ?? false,
      externalDP: p.externalDP ?? false,
    },
    ...(role.elastic && { elastic: { width: role.elastic.width, maxWidth: role.elastic.maxWidth } }),
    extraArgs: [...(role.extraArgs ?? [])],
    env: (role.env ?? []).map((e) =>
      e.valueFrom ? { name: e.name, valueFrom: { secretKeyRef: { ...e.valueFrom.secretKeyRef } } } : { name: e.name, value: e.value ?? "" },
    ),
    command: [...(role.command ?? [])],
    terminationGracePeriodSeconds: role.terminationGracePeriodSeconds ?? 30,
    rollout: {
      maxSurge: role.rollout?.maxSurge ?? DEFAULT_ROLLOUT.maxSurge,
      maxUnavailable: role.rollout?.maxUnavailable ?? DEFAULT_ROLLOUT.maxUnavailable,
    },
  };
}

function defaultSource(model: DeploymentSpecInput["model"]): ModelSource {
  const source = model.source;
  if (source === undefined) return { huggingFace: { repository: model.name, revision: "main" } };
  if ("huggingFace" in source) {
    return { huggingFace: { repository: source.huggingFace.repository, revision: source.huggingFace.revision ?? "main" } };
  }
  if ("pvc" in source) {
    return { pvc: { claimName: source.pvc.claimName, ...(source.pvc.path !== undefined && { path: source.pvc.path }) } };
  }
  return { uri: source.uri };
}

function defaultScaling(scaling: NonNullable<DeploymentSpecInput["scaling"]>): NonNullable<DeploymentSpec["scaling"]> {
  const algorithm = scaling.algorithm ?? { type: "queue_depth" };
  return {
    mode: scaling.mode ?? "off",
    intervalSeconds: scaling.intervalSeconds ?? 15,
    roles: (scaling.roles ?? []).map((r) => ({ name: r.name, minReplicas: r.minReplicas ?? 1, maxReplicas: r.maxReplicas })),
    algorithm:
      algorithm.type === "queue_depth"
        ? { type: "queue_depth", targetPerReplica: algorithm.targetPerReplica ?? 8, tolerance: algorithm.tolerance ?? 0.1 }
        : { type: "sla", ttftMs: algorithm.ttftMs, itlMs: algorithm.itlMs },
    ...(scaling.pdRatio && { pdRatio: { min: scaling.pdRatio.min, max: scaling.pdRatio.max } }),
    scaleDownStabilizationSeconds: scaling.scaleDownStabilizationSeconds ?? 300,
    retirement: {
      withdrawSeconds: scaling.retirement?.withdrawSeconds ?? 30,
      drainSeconds: scaling.retirement?.drainSeconds ?? 240,
      settleSeconds: scaling.retirement?.settleSeconds ?? 30,
    },
  };
}

/**
 * Fills in every default of docs/design.md §3.1. Pure and idempotent: a defaulted spec comes back equal,
 * and the result parses under DeploymentSpecInput (a merge patch is applied to it and re-validated).
 */
export function applySpecDefaults(input: DeploymentSpecInput): DeploymentSpec {
  const disaggregated = isDisaggregated(input.roles);
  const kvTransfer = input.kvTransfer ?? (disaggregated ? {} : undefined);
  return {
    ...(input.clusterId !== undefined && { clusterId: input.clusterId }),
    model: {
      name: input.model.name,
      source: defaultSource(input.model),
      ...(input.model.hfTokenSecret && {
        hfTokenSecret: { name: input.model.hfTokenSecret.name, key: input.model.hfTokenSecret.key },
      }),
    },
    engine: { name: input.engine.name, image: input.engine.image },
    ...(input.router && {
      router: {
        kind: input.router.kind ?? "builtin",
        policy: input.router.policy ?? "round_robin",
        replicas: input.router.replicas ?? 1,
      },
    }),
    ...(kvTransfer && {
      kvTransfer: { connector: kvTransfer.connector ?? "nixl", protocol: kvTransfer.protocol ?? "tcp" },
    }),
    roles: input.roles.map(defaultRole),
    ...(input.scaling && { scaling: defaultScaling(input.scaling) }),
  };
}

// ---------------------------------------------------------------------------------------------
// Status (written by the agent)

export const CONDITION_TYPES = [
  "Accepted",
  "Scheduled",
  "RolesReady",
  "RouterReady",
  "RouterCoverage",
  "UpToDate",
  "Scaling",
  "Retiring",
  "Resizing",
  "Ready",
] as const;

export const Condition = strictObject({
  type: z.enum(CONDITION_TYPES).describe("Aspect of the deployment this condition reports."),
  status: z.enum(["True", "False", "Unknown"]).describe("Whether the condition holds."),
  reason: z
    .string()
    .min(1)
    .max(128)
    .regex(CONDITION_REASON, { error: "must be a CamelCase word such as InsufficientGPU" })
    .describe("Machine-readable cause in CamelCase, e.g. `InsufficientGPU`, `WeightsLoading`."),
  message: z.string().max(32768).describe("Human-readable detail: what is wrong and what is needed."),
  observedGeneration: count(0, Number.MAX_SAFE_INTEGER).describe("Spec generation this condition was computed from.").optional(),
  lastTransitionTime: timestamp().describe("When `status` last changed."),
}).meta({ id: "Condition" });
export type Condition = z.infer<typeof Condition>;

const observedCount = (what: string) =>
  count(0, Number.MAX_SAFE_INTEGER).describe(`${what}, in instances; absent when not observed.`).optional();

const rankCount = (what: string) => count(0, Number.MAX_SAFE_INTEGER).describe(what);

export const RankCoverage = strictObject({
  declared: rankCount("Data-parallel ranks the spec declares: parallelism.data × replicas (elastic: elastic.width × replicas)."),
  eligible: rankCount(
    "Ranks whose pods are Ready and that the agent lists as eligible to the router (elastic: Ready rank pods within the width each engine runs at).",
  ),
  serving: rankCount(
    "External DP: ranks every Ready router pod confirms (the endpoint listed eligible at the pod's current address with its /v1/models read and naming the model); absent when the router could not be read. Elastic: the widths the engines run at, as started or as last proven after a resize, summed over instances with a Ready leader.",
  ).optional(),
})
  .describe("External DP and elastic EP roles: how many data-parallel ranks are declared, eligible and serving; absent for other roles.")
  .meta({ id: "RankCoverage" });
export type RankCoverage = z.infer<typeof RankCoverage>;

export const RoleStatus = strictObject({
  name: z.string().min(1).max(63).describe("Role name."),
  kind: RoleKind,
  desired: observedCount("Instances the agent is converging on"),
  ready: observedCount("Instances ready to serve"),
  updated: observedCount("Instances running the current spec"),
  draining: observedCount("Instances being retired"),
  ranks: RankCoverage.optional(),
}).meta({ id: "RoleStatus" });
export type RoleStatus = z.infer<typeof RoleStatus>;

export const DEPLOYMENT_PHASES = ["Pending", "Starting", "Ready", "Degraded", "Deleting", "Failed"] as const;

export const SCALING_MODES = ["off", "shadow", "active"] as const;

/** One signal an autoscaler decision rests on, as the agent read it. */
export const ScalingSignal = strictObject({
  name: z.string().min(1).max(128).describe("e.g. `requests_running`, `requests_waiting`, `ttft_p90`."),
  value: z.number().finite().describe("The aggregate the decision used."),
  unit: z.string().min(1).max(32).describe("e.g. `requests`, `ms`."),
  observedAt: timestamp().describe("When it was read."),
}).meta({ id: "ScalingSignal" });
export type ScalingSignal = z.infer<typeof ScalingSignal>;

export const ScalingRoleStatus = strictObject({
  name: z.string().min(1).max(63).describe("Role name."),
  current: count(0, Number.MAX_SAFE_INTEGER).describe("Replicas in the spec now."),
  recommended: count(0, Number.MAX_SAFE_INTEGER)
    .describe("Replicas the algorithm recommends; absent when it could not decide (e.g. metrics missing), never a made-up number.")
    .optional(),
  desired: count(0, Number.MAX_SAFE_INTEGER)
    .describe("What the autoscaler sets (active) or would set (shadow) after bounds, stabilization, PD ratio and one retirement at a time.")
    .optional(),
  reason: z.string().min(1).max(128).describe("Why, as a CamelCase word, e.g. `QueueDepth`, `WithinTolerance`, `MetricsMissing`."),
  message: z.string().max(4096).describe("Why, in words: the formula's inputs and result, or what held it back.").optional(),
  limitedBy: z
    .string()
    .min(1)
    .max(64)
    .describe("What held the recommendation back, if anything, in CamelCase: e.g. `MinReplicas`, `MaxReplicas`, `PdRatio`, `Stabilization`, `RetirementInFlight`.")
    .optional(),
  signals: z.array(ScalingSignal).max(64).describe("The signals the recommendation rests on."),
}).meta({ id: "ScalingRoleStatus" });
export type ScalingRoleStatus = z.infer<typeof ScalingRoleStatus>;

export const ScalingStatus = strictObject({
  mode: z.enum(SCALING_MODES).describe("The mode the autoscaler ran in: `shadow` only recommends, `active` applies."),
  roles: z.array(ScalingRoleStatus).max(16).describe("Per scaled role: current and recommended replicas and why."),
  lastScaleAt: timestamp().describe("When the autoscaler last changed replicas.").optional(),
})
  .describe("The autoscaler's latest evaluation (written by the agent with the status).")
  .meta({ id: "ScalingStatus" });
export type ScalingStatus = z.infer<typeof ScalingStatus>;

export const DeploymentStatus = strictObject({
  phase: z.enum(DEPLOYMENT_PHASES).describe("`Pending` until an agent takes the deployment."),
  observedGeneration: count(0, Number.MAX_SAFE_INTEGER).describe("Spec generation the agent has acted on.").optional(),
  endpoint: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .describe("Base URL without a path (`http://host:port`) of the router, or of the role Service when there is no router.")
    .optional(),
  roles: z.array(RoleStatus).max(16).describe("Per-role instance counts.").optional(),
  conditions: z.array(Condition).max(64).describe("Current conditions, one per type.").optional(),
  scaling: ScalingStatus.optional(),
  replicas: z.array(z.looseObject({})).max(16384).describe("Per-replica state; agent-defined.").optional(),
  message: z.string().max(32768).describe("Summary of why the deployment is in its phase.").optional(),
})
  .describe("Observed state, written only by the agent.")
  .meta({ id: "DeploymentStatus" });
export type DeploymentStatus = z.infer<typeof DeploymentStatus>;

/** The status of a newly admitted deployment that no agent has taken yet. */
export function pendingStatus(now: Date): DeploymentStatus {
  return {
    phase: "Pending",
    conditions: [
      {
        type: "Accepted",
        status: "True",
        reason: "Admitted",
        message: "spec admitted; waiting for an agent to take it",
        lastTransitionTime: now.toISOString(),
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// zod issues → field errors

type Path = readonly PropertyKey[];

/** RFC 6901 pointer: `~` → `~0`, `/` → `~1`. */
export function toJsonPointer(prefix: string, path: Path): string {
  return prefix + path.map((segment) => "/" + String(segment).replaceAll("~", "~0").replaceAll("/", "~1")).join("");
}

function prefixSegments(prefix: string): string[] {
  if (prefix === "") return [];
  return prefix
    .split("/")
    .slice(1)
    .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** `spec.roles[1].replicas`: how a message names a field. */
function fieldName(segments: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of segments) {
    if (typeof segment === "number" || /^\d+$/.test(String(segment))) out += `[${String(segment)}]`;
    else out += out === "" ? String(segment) : `.${String(segment)}`;
  }
  return out === "" ? "the body" : out;
}

/** How to get under an upper bound, by field. */
const WAY_DOWN: Record<string, string> = {
  replicas: "lower replicas or split the deployment",
  size: "use fewer pods per instance, each with more GPUs",
  gpus: "lower gpus, or raise size to spread the instance over more pods",
  roles: "a deployment has at most 16 roles; split it into several deployments",
  extraArgs: "move settings into a config file the engine reads",
  env: "move settings into a config file the engine reads",
  command: "wrap the command in a script inside the image",
  terminationGracePeriodSeconds: "lower it; a day is the longest berth waits",
};

const isDefaultMessage = (message: string) => /^(Invalid|Too (big|small)|Unrecognized key)/.test(message);

function article(word: string): string {
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

function describeExpected(expected: string): string {
  switch (expected) {
    case "int":
      return "a whole number";
    case "array":
      return "a list";
    case "record":
      return "an object";
    default:
      return article(expected);
  }
}

function quoteList(values: readonly unknown[]): string {
  return values.map((v) => JSON.stringify(v)).join(", ");
}

/** An issue about a field that is simply absent ("received undefined"). */
function isMissing(issue: z.core.$ZodIssue): boolean {
  return issue.code === "invalid_type" && / received undefined$/.test(issue.message);
}

function messageFor(issue: z.core.$ZodIssue, field: string, lastKey: string): string {
  switch (issue.code) {
    case "invalid_type": {
      if (isMissing(issue)) return `${field} is required; add it`;
      const received = /received (\w+)$/.exec(issue.message)?.[1];
      if (issue.expected === "int") return `${field} must be a whole number`;
      return `${field} must be ${describeExpected(issue.expected)}${received ? `, not ${received}` : ""}`;
    }
    case "too_big": {
      const bound = Number(issue.maximum);
      if (issue.origin === "string") return `${field} must be at most ${bound} characters long; shorten it`;
      if (issue.origin === "array" || issue.origin === "set") {
        return `${field} must have at most ${bound} items; ${WAY_DOWN[lastKey] ?? "remove some"}`;
      }
      const limit = issue.inclusive ? `at most ${bound}` : `less than ${bound}`;
      return `${field} must be ${limit}; ${WAY_DOWN[lastKey] ?? `lower ${lastKey || "it"}`}`;
    }
    case "too_small": {
      const bound = Number(issue.minimum);
      if (issue.origin === "string") {
        return bound <= 1 ? `${field} must not be empty` : `${field} must be at least ${bound} characters long`;
      }
      if (issue.origin === "array" || issue.origin === "set") {
        return lastKey === "roles"
          ? `${field} needs at least ${bound} role; add one, e.g. { "name": "server" }`
          : `${field} needs at least ${bound} item${bound === 1 ? "" : "s"}; add ${bound === 1 ? "one" : "more"}`;
      }
      const limit = issue.inclusive ? `at least ${bound}` : `greater than ${bound}`;
      return `${field} must be ${limit}; raise ${lastKey || "it"}`;
    }
    case "invalid_value":
      return issue.values.length === 1
        ? `${field} must be ${JSON.stringify(issue.values[0])}`
        : `${field} must be one of ${quoteList(issue.values)}`;
    case "invalid_format":
      if (!isDefaultMessage(issue.message)) return `${field} ${issue.message}`;
      return issue.format === "regex"
        ? `${field} must match the pattern ${issue.pattern ?? ""}`
        : `${field} must be a valid ${issue.format}`;
    case "not_multiple_of":
      return `${field} must be a multiple of ${Number(issue.divisor)}`;
    case "invalid_element":
      return `${field} has an invalid element`;
    case "custom":
      return isDefaultMessage(issue.message) ? `${field} is not valid` : `${field} ${issue.message}`;
    default:
      return `${field}: ${issue.message}`;
  }
}

/** The union options that matched the value's shape: their problems all lie inside the value. */
function matchingOptions(issue: z.core.$ZodIssueInvalidUnion): z.core.$ZodIssue[][] {
  return issue.errors.filter(
    (option) =>
      option.length > 0 &&
      option.every((inner) => inner.path.length > 0 && !(inner.path.length === 1 && isMissing(inner))),
  );
}

function convert(issue: z.core.$ZodIssue, base: Path, prefix: string, out: FieldError[]): void {
  const path = [...base, ...issue.path];
  const segments = [...prefixSegments(prefix), ...path];
  const field = fieldName(segments);
  const lastKey = String([...segments].reverse().find((s) => typeof s === "string" && !/^\d+$/.test(s)) ?? "");

  switch (issue.code) {
    case "unrecognized_keys": {
      const allowed = /\(allowed fields: [^)]*\)/.exec(issue.message)?.[0];
      for (const key of issue.keys) {
        out.push({
          pointer: toJsonPointer(prefix, [...path, key]),
          message: `unknown field ${JSON.stringify(key)}; remove it${allowed ? ` ${allowed}` : ""}`,
        });
      }
      return;
    }
    case "invalid_union": {
      if (issue.discriminator !== undefined && issue.errors.length === 0) {
        const options = "options" in issue ? issue.options : undefined;
        out.push({
          pointer: toJsonPointer(prefix, path),
          message: options ? `${field} must be one of ${quoteList(options)}` : `${field} ${issue.message}`,
        });
        return;
      }
      const matching = matchingOptions(issue);
      if (matching.length > 0) {
        const best = matching.reduce((a, b) => (b.length < a.length ? b : a));
        for (const inner of best) convert(inner, path, prefix, out);
        return;
      }
      out.push({
        pointer: toJsonPointer(prefix, path),
        message: isDefaultMessage(issue.message) ? `${field} does not match any allowed form` : `${field} ${issue.message}`,
      });
      return;
    }
    case "invalid_key": {
      const key = String(issue.path[issue.path.length - 1] ?? "");
      const parent = fieldName(segments.slice(0, -1));
      const inner = issue.issues.find((i) => !isDefaultMessage(i.message));
      out.push({
        pointer: toJsonPointer(prefix, path),
        message: `${parent} key ${JSON.stringify(key)} ${inner ? inner.message : "is not a valid key"}`,
      });
      return;
    }
    default:
      out.push({ pointer: toJsonPointer(prefix, path), message: messageFor(issue, field, lastKey) });
  }
}

/**
 * Turns zod issues into RFC 6901 field errors under `prefix` (e.g. "/spec"), with messages that
 * name the field, the limit and the way out. An unknown field is reported at the field itself.
 */
export function zodIssuesToFieldErrors(issues: readonly z.core.$ZodIssue[], prefix = ""): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of issues) convert(issue, [], prefix, out);
  return out;
}

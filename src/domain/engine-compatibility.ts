// Engine compatibility as data (docs/design.md §5.3): per engine, the features berth renders with
// the release each first appears in, the KV transports with their status, and known failures —
// every fact with its source. Where a first release could not be established it is "unknown" and
// admission does not gate on it; `absentIn` (a release known to lack the flag) still refuses.
import { z } from "zod";
import type { DeploymentSpec, EngineName, Role } from "./deployment-spec.ts";
import { EngineName as EngineNameSchema } from "./deployment-spec.ts";
import { LIMITS } from "./limits.ts";

export const ENGINE_FEATURES = [
  "pd-nixl",
  "pd-mooncake",
  "pd-lmcache",
  "epd",
  "elastic-ep",
  "external-dp",
  "hybrid-lb",
  "multi-node-dp",
  "multi-node-tp",
  "lora",
  "sleep-mode",
] as const;
export const EngineFeature = z.enum(ENGINE_FEATURES).describe("A feature berth renders (or reads from extraArgs) that needs engine support.");
export type EngineFeature = z.infer<typeof EngineFeature>;

const ReleaseText = z.string().max(LIMITS.text).regex(/^\d+(\.\d+){1,3}$/).describe("An engine release, e.g. `0.9.0`.");

export const FeatureSupport = z
  .object({
    feature: EngineFeature,
    summary: z.string().max(LIMITS.text).describe("What the feature is, in berth's words."),
    flags: z.array(z.string().max(LIMITS.name)).max(LIMITS.mapEntries).describe("The engine flags (or spec shape) that use it: what berth renders, or what extraArgs carry."),
    renderedByBerth: z.boolean().describe("true when berth renders these flags from the spec; false when only a user's extraArgs carry them."),
    minimum: z.union([ReleaseText, z.literal("unknown")]).describe("First release with the feature; `unknown` where no source establishes it (admission then does not gate on it)."),
    absentIn: ReleaseText.optional().describe("A release known to lack the feature: this release and older ones are refused even while `minimum` is unknown."),
    source: z.string().max(LIMITS.text).describe("Release notes, pull request or source file the release facts come from."),
  })
  .meta({ id: "EngineFeatureSupport" });
export type FeatureSupport = z.infer<typeof FeatureSupport>;

export const TRANSPORT_STATUSES = ["works", "works-with-known-failure", "not-verified", "unsupported"] as const;
export const TransportSupport = z
  .object({
    connector: z.enum(["nixl", "mooncake"]).describe("`spec.kvTransfer.connector`."),
    protocol: z.enum(["tcp", "rdma"]).describe("`spec.kvTransfer.protocol`."),
    status: z.enum(TRANSPORT_STATUSES).describe("What has been observed: blocks actually moved (`works`), or not."),
    note: z.string().max(LIMITS.text),
    source: z.string().max(LIMITS.text),
  })
  .meta({ id: "EngineTransportSupport" });
export type TransportSupport = z.infer<typeof TransportSupport>;

export const KnownFailure = z
  .object({
    id: z.string().max(LIMITS.id).describe("Stable id of the failure."),
    summary: z.string().max(LIMITS.text).describe("What goes wrong."),
    appliesTo: z.string().max(LIMITS.text).describe("Which specs it matches (admission warns on those)."),
    releases: z
      .object({
        from: ReleaseText.optional().describe("First release affected, inclusive."),
        after: ReleaseText.optional().describe("Releases strictly after this one may be affected."),
      })
      .describe("Releases affected; an unreadable image tag is treated as possibly affected."),
    workaround: z.string().max(LIMITS.text),
    source: z.string().max(LIMITS.text),
  })
  .meta({ id: "EngineKnownFailure" });
export type KnownFailure = z.infer<typeof KnownFailure>;

export const EngineCompatibility = z
  .object({
    engine: EngineNameSchema,
    officialRepositories: z.array(z.string().max(LIMITS.name)).max(LIMITS.mapEntries).describe("Image repositories whose tags are read as releases (any registry or mirror in front)."),
    features: z.array(FeatureSupport).max(LIMITS.page),
    transports: z.array(TransportSupport).max(LIMITS.page),
    knownFailures: z.array(KnownFailure).max(LIMITS.page),
  })
  .meta({ id: "EngineCompatibility" });
export type EngineCompatibility = z.infer<typeof EngineCompatibility>;

// Sources used below, once each.
const VLLM_MD = "vllm/engine/arg_utils.py and vllm/config/parallel.py read at https://github.com/vllm-project/vllm/tree/v0.16.0 and at main of 2026-05-27";
const GPUSTACK_ENGINES = "https://docs.gpustack.ai/gpustack-operator/main/docs/modules/model-deployment/engine-versions/";
const NOT_ESTABLISHED = "first release not established from release notes or tags";

export const ENGINE_COMPATIBILITY: readonly EngineCompatibility[] = [
  {
    engine: "vllm",
    officialRepositories: ["vllm/vllm-openai"],
    features: [
      {
        feature: "pd-nixl",
        summary: "Prefill/decode KV transfer through NIXL",
        flags: ['--kv-transfer-config {"kv_connector":"NixlConnector",…}'],
        renderedByBerth: true,
        minimum: "0.9.0",
        source: "https://github.com/vllm-project/vllm/releases/tag/v0.9.0 (NIXL integration for P/D, https://github.com/vllm-project/vllm/pull/17751)",
      },
      {
        feature: "pd-mooncake",
        summary: "Prefill/decode KV transfer through the Mooncake transfer engine",
        flags: ['--kv-transfer-config {"kv_connector":"MooncakeConnector",…}'],
        renderedByBerth: true,
        minimum: "unknown",
        source: `${NOT_ESTABLISHED}; the v0.15.0 docs carry its usage guide (https://docs.vllm.ai/en/v0.15.0/features/mooncake_connector_usage/)`,
      },
      {
        feature: "pd-lmcache",
        summary: "KV transfer or offload through LMCache",
        flags: ['--kv-transfer-config {"kv_connector":"LMCacheConnectorV1",…}'],
        renderedByBerth: false,
        minimum: "unknown",
        source: `${NOT_ESTABLISHED}; berth's kvTransfer.connector offers nixl and mooncake only`,
      },
      {
        feature: "epd",
        summary: "Encoder disaggregation: encode roles hand encoder outputs to prefill (the connector is ECSharedStorageConnector up to 0.12.0, ECExampleConnector after https://github.com/vllm-project/vllm/pull/30201; berth renders the name of the image's release)",
        flags: ['--ec-transfer-config {"ec_connector":"ECExampleConnector",…}'],
        renderedByBerth: true,
        minimum: "unknown",
        source: `https://github.com/vllm-project/vllm/pull/25233 (${NOT_ESTABLISHED}); present in the v0.11.2 and v0.12.0 API docs (https://docs.vllm.ai/en/v0.11.2/api/vllm/distributed/ec_transfer/ec_connector/)`,
      },
      {
        feature: "elastic-ep",
        summary: "Elastic expert parallelism: a running instance changes its DP width",
        flags: ["--enable-elastic-ep", "--enable-eplb", "--data-parallel-backend ray"],
        renderedByBerth: true,
        minimum: "unknown",
        absentIn: "0.16.0",
        source: `https://github.com/vllm-project/vllm/pull/34861 added --enable-elastic-ep on 2026-02-28; it is not in v0.16.0 (${VLLM_MD}). GPUStack records Elastic EP running on 0.29.0 (${GPUSTACK_ENGINES})`,
      },
      {
        feature: "external-dp",
        summary: "External DP: one API server per DP rank, balanced by the router",
        flags: ["--data-parallel-rank"],
        renderedByBerth: true,
        minimum: "unknown",
        source: `${NOT_ESTABLISHED}; present at vLLM main of 2025-09-27 (about v0.11.0), where --data-parallel-rank alone selects external load balancing (vllm/engine/arg_utils.py)`,
      },
      {
        feature: "hybrid-lb",
        summary: "Hybrid DP load balancing: one API server per pod over its local ranks",
        flags: ["--data-parallel-hybrid-lb", "--data-parallel-start-rank"],
        renderedByBerth: true,
        minimum: "unknown",
        source: NOT_ESTABLISHED,
      },
      {
        feature: "multi-node-dp",
        summary: "DP ranks across pods behind one API server: the other pods run headless",
        flags: ["--headless", "--data-parallel-address", "--data-parallel-start-rank"],
        renderedByBerth: true,
        minimum: "unknown",
        source: NOT_ESTABLISHED,
      },
      {
        feature: "multi-node-tp",
        summary: "One tensor × pipeline group spanning pods with the mp executor",
        flags: ["--nnodes", "--node-rank", "--master-addr", "--master-port"],
        renderedByBerth: true,
        minimum: "unknown",
        absentIn: "0.11.0",
        source:
          `https://github.com/vllm-project/vllm/pull/23691 added --nnodes/--node-rank for the mp executor on 2025-11-16, after v0.11.0 (released 2025-10-02, https://github.com/vllm-project/vllm/releases/tag/v0.11.0); v0.16.0 has it (--data-parallel-external-lb from the same pull request is there, ${VLLM_MD}); the first release between is not established`,
      },
      {
        feature: "lora",
        summary: "LoRA adapters, from a role's extraArgs",
        flags: ["--enable-lora"],
        renderedByBerth: false,
        minimum: "unknown",
        source: NOT_ESTABLISHED,
      },
      {
        feature: "sleep-mode",
        summary: "Sleep mode (offload weights while idle), from a role's extraArgs",
        flags: ["--enable-sleep-mode"],
        renderedByBerth: false,
        minimum: "unknown",
        source: NOT_ESTABLISHED,
      },
    ],
    transports: [
      { connector: "nixl", protocol: "tcp", status: "not-verified", note: "no recorded transfer; NIXL picks its UCX transport itself", source: GPUSTACK_ENGINES },
      { connector: "nixl", protocol: "rdma", status: "not-verified", note: "berth requests no RDMA device for engine pods", source: GPUSTACK_ENGINES },
      { connector: "mooncake", protocol: "tcp", status: "works", note: "direct transfer over TCP moved blocks (GPUStack, vLLM 0.29.0)", source: GPUSTACK_ENGINES },
      { connector: "mooncake", protocol: "rdma", status: "not-verified", note: "berth requests no RDMA device for engine pods", source: GPUSTACK_ENGINES },
    ],
    knownFailures: [
      {
        id: "vllm-official-image-without-ray",
        summary: "The official vllm/vllm-openai image no longer ships Ray, which berth's elastic EP starts on every pod (`ray start`)",
        appliesTo: "elastic roles",
        releases: { from: "0.18.0" },
        workaround: "build an image FROM vllm/vllm-openai that installs ray (pip install ray) and use it as engine.image",
        source: `Ray is not a default dependency since https://github.com/vllm-project/vllm/pull/36170 (2026-03-08); GPUStack: "the official vLLM image has no Ray (vLLM ≥ 0.18)", ${GPUSTACK_ENGINES}`,
      },
      {
        id: "vllm-dp-rank-moe-only",
        summary: "--data-parallel-rank (external DP, one rank per pod) raises a ValueError for a non-MoE model (\"launch independent vLLM instances instead\")",
        appliesTo: "external-DP roles with one rank per pod and parallelism.expert false",
        releases: { after: "0.16.0" },
        workaround: "for a dense model use replicas (independent instances) instead of externalDP, or set dataLocal above 1 (hybrid LB)",
        source: `https://github.com/vllm-project/vllm/pull/40839 (2026-05-04), vllm/engine/arg_utils.py; not in v0.16.0 (${VLLM_MD})`,
      },
    ],
  },
  {
    engine: "sglang",
    officialRepositories: ["lmsysorg/sglang"],
    features: [
      {
        feature: "pd-nixl",
        summary: "Prefill/decode KV transfer through NIXL",
        flags: ["--disaggregation-mode", "--disaggregation-transfer-backend nixl"],
        renderedByBerth: true,
        minimum: "unknown",
        source: NOT_ESTABLISHED,
      },
      {
        feature: "pd-mooncake",
        summary: "Prefill/decode KV transfer through the Mooncake transfer engine",
        flags: ["--disaggregation-mode", "--disaggregation-transfer-backend mooncake"],
        renderedByBerth: true,
        minimum: "unknown",
        source: `${NOT_ESTABLISHED}; GPUStack runs it from 0.5.18 (${GPUSTACK_ENGINES})`,
      },
      {
        feature: "epd",
        summary: "Encoder disaggregation: encode roles serve encoder outputs to prefill",
        flags: ["--encoder-only", "--language-only", "--encoder-urls"],
        renderedByBerth: true,
        minimum: "unknown",
        source: `https://github.com/sgl-project/sglang/pull/12263 (${NOT_ESTABLISHED})`,
      },
      {
        feature: "multi-node-dp",
        summary: "DP ranks across pods behind node 0's server",
        flags: ["--nnodes", "--node-rank", "--dist-init-addr"],
        renderedByBerth: true,
        minimum: "unknown",
        source: NOT_ESTABLISHED,
      },
      {
        feature: "multi-node-tp",
        summary: "One tensor × pipeline group spanning pods",
        flags: ["--nnodes", "--node-rank", "--dist-init-addr"],
        renderedByBerth: true,
        minimum: "unknown",
        source: NOT_ESTABLISHED,
      },
      {
        feature: "lora",
        summary: "LoRA adapters, from a role's extraArgs",
        flags: ["--enable-lora", "--lora-paths"],
        renderedByBerth: false,
        minimum: "unknown",
        source: NOT_ESTABLISHED,
      },
    ],
    transports: [
      { connector: "nixl", protocol: "tcp", status: "not-verified", note: "no recorded transfer", source: GPUSTACK_ENGINES },
      { connector: "nixl", protocol: "rdma", status: "not-verified", note: "berth requests no RDMA device for engine pods", source: GPUSTACK_ENGINES },
      {
        connector: "mooncake",
        protocol: "tcp",
        status: "works-with-known-failure",
        note: "blocks move, but sustained load exhausts local ports (known failure sglang-pd-tcp-port-exhaustion)",
        source: GPUSTACK_ENGINES,
      },
      {
        connector: "mooncake",
        protocol: "rdma",
        status: "not-verified",
        note: "GPUStack records the direct leg over RDMA as unsupported where no RDMA device is granted; berth requests none",
        source: GPUSTACK_ENGINES,
      },
    ],
    knownFailures: [
      {
        id: "sglang-pd-tcp-port-exhaustion",
        summary:
          "SGLang PD over TCP opens a new connection per transfer; TIME-WAIT sockets exhaust local ports and every request fails until the pods restart (the gateway answers 503 \"No available prefill workers\")",
        appliesTo: "prefill/decode deployments with kvTransfer mooncake over tcp",
        releases: {},
        workaround: "allow and set net.ipv4.tcp_tw_reuse=1 for the engine pods (a kubelet --allowed-unsafe-sysctls change), or transfer over rdma",
        source: `${GPUSTACK_ENGINES} (Known failures at the minimum)`,
      },
    ],
  },
];

export function compatibilityOf(engine: EngineName): EngineCompatibility {
  return ENGINE_COMPATIBILITY.find((entry) => entry.engine === engine)!;
}

const has = (role: Role, ...flags: string[]) => role.extraArgs.some((arg) => flags.includes(arg.split("=", 1)[0]!));

/**
 * The features a spec uses, read the way k8s/render/engine-{vllm,sglang}.ts render it. A role
 * with `command` is the user's own argv: berth renders nothing for it, so it uses nothing here.
 */
export function featuresOfSpec(spec: DeploymentSpec): EngineFeature[] {
  const used = new Set<EngineFeature>();
  const engine = spec.engine.name;
  const managed = spec.roles.filter((role) => role.command.length === 0);
  for (const role of managed) {
    const { size } = role;
    const { data, dataLocal, externalDP } = role.parallelism;
    if (role.kind === "prefill" || role.kind === "decode") used.add(spec.kvTransfer?.connector === "mooncake" ? "pd-mooncake" : "pd-nixl");
    if (role.kind === "encode") used.add("epd");
    if (role.elastic) {
      used.add("elastic-ep");
    } else if (size > 1 && data > 1 && externalDP) {
      if (engine === "vllm") used.add(dataLocal === 1 ? "external-dp" : "hybrid-lb"); // SGLang: independent servers, no flag
    } else if (size > 1) {
      used.add(data > 1 ? "multi-node-dp" : "multi-node-tp");
    }
    if (has(role, "--enable-lora", "--lora-paths")) used.add("lora");
    if (has(role, "--enable-sleep-mode")) used.add("sleep-mode");
  }
  return ENGINE_FEATURES.filter((feature) => used.has(feature));
}

/** Which known failures a spec's shape matches (before looking at releases), by failure id. */
export const KNOWN_FAILURE_MATCHES: Record<string, (spec: DeploymentSpec, features: readonly EngineFeature[]) => boolean> = {
  "vllm-official-image-without-ray": (_spec, features) => features.includes("elastic-ep"),
  "vllm-dp-rank-moe-only": (spec, features) =>
    features.includes("external-dp") &&
    spec.roles.some((r) => r.command.length === 0 && r.parallelism.externalDP && r.parallelism.dataLocal === 1 && r.size > 1 && !r.parallelism.expert),
  "sglang-pd-tcp-port-exhaustion": (spec, features) =>
    features.includes("pd-mooncake") && spec.kvTransfer?.connector === "mooncake" && spec.kvTransfer.protocol === "tcp",
};

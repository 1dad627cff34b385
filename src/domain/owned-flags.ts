// The engine flags and environment variables berth renders itself, per engine, each naming the
// spec field that controls it. Admission refuses them in a role's extraArgs/env: one setting,
// one source. A role with an explicit `command` (take-over tier) is exempt.
import type { EngineName } from "./deployment-spec.ts";

export interface OwnedFlag {
  /** Canonical spelling, e.g. `--tensor-parallel-size`. */
  flag: string;
  /** Other spellings the engine accepts for the same flag (`-tp`, `--tp-size`, …). */
  aliases: readonly string[];
  /** The spec field (or fixed choice) that decides the value, as a user would look it up. */
  controlledBy: string;
  /** Why berth owns it. */
  reason: string;
}

export interface OwnedEnv {
  /** Variable name; a trailing `*` owns every name with that prefix. */
  name: string;
  controlledBy: string;
  reason: string;
}

const FIXED_ADDRESS = "berth itself (engines listen on 0.0.0.0 at a fixed port)";
const MULTI_HOST = "spec.roles[].size (berth wires leader and members of a multi-host instance)";

const VLLM_FLAGS: readonly OwnedFlag[] = [
  { flag: "--host", aliases: [], controlledBy: FIXED_ADDRESS, reason: "probes, Services and the router reach the engine on the pod IP" },
  { flag: "--port", aliases: [], controlledBy: FIXED_ADDRESS, reason: "probes, Services and the router address the engine on berth's port" },
  { flag: "--uds", aliases: [], controlledBy: FIXED_ADDRESS, reason: "a Unix socket would hide the engine from probes and the router" },
  { flag: "--served-model-name", aliases: [], controlledBy: "spec.model.name", reason: "every role serves exactly spec.model.name; the router and metrics match on it" },
  { flag: "--model", aliases: [], controlledBy: "spec.model.source", reason: "berth passes the weights' location from spec.model.source" },
  { flag: "--tensor-parallel-size", aliases: ["-tp"], controlledBy: "spec.roles[].parallelism.tensor", reason: "the parallel degrees are typed fields checked against the role's GPUs" },
  { flag: "--pipeline-parallel-size", aliases: ["-pp"], controlledBy: "spec.roles[].parallelism.pipeline", reason: "the parallel degrees are typed fields checked against the role's GPUs" },
  { flag: "--data-parallel-size", aliases: ["-dp"], controlledBy: "spec.roles[].parallelism.data (elastic.width for an elastic role)", reason: "the parallel degrees are typed fields checked against the role's GPUs" },
  { flag: "--data-parallel-size-local", aliases: ["-dpl"], controlledBy: "spec.roles[].parallelism.dataLocal", reason: "the DP ranks per pod must match the pod layout berth renders" },
  { flag: "--data-parallel-rank", aliases: ["-dpn"], controlledBy: "spec.roles[].parallelism.externalDP", reason: "berth gives each external-DP pod its own rank" },
  { flag: "--data-parallel-start-rank", aliases: ["-dpr"], controlledBy: MULTI_HOST, reason: "berth computes each member's first DP rank from dataLocal and the member index" },
  { flag: "--data-parallel-address", aliases: ["-dpa"], controlledBy: MULTI_HOST, reason: "berth points every member at the leader's address" },
  { flag: "--data-parallel-rpc-port", aliases: ["-dpp"], controlledBy: MULTI_HOST, reason: "berth opens and wires the leader's handshake port" },
  { flag: "--data-parallel-backend", aliases: ["-dpb"], controlledBy: "spec.roles[].elastic", reason: "elastic EP needs the ray backend; other roles use mp" },
  { flag: "--data-parallel-hybrid-lb", aliases: ["-dph"], controlledBy: "spec.roles[].parallelism.externalDP", reason: "the load-balancing mode decides which endpoints the router sees" },
  { flag: "--data-parallel-external-lb", aliases: ["-dpe"], controlledBy: "spec.roles[].parallelism.externalDP", reason: "the load-balancing mode decides which endpoints the router sees" },
  { flag: "--data-parallel-multi-port-external-lb", aliases: ["-dpm"], controlledBy: "spec.roles[].parallelism.externalDP", reason: "extra per-rank listeners are outside the endpoint contract" },
  { flag: "--headless", aliases: [], controlledBy: MULTI_HOST, reason: "only members after the leader run headless" },
  { flag: "--enable-expert-parallel", aliases: ["-ep"], controlledBy: "spec.roles[].parallelism.expert", reason: "the parallel degrees are typed fields" },
  { flag: "--enable-eplb", aliases: [], controlledBy: "spec.roles[].elastic", reason: "elastic EP needs expert load balancing, and berth sets it with the elastic profile" },
  { flag: "--enable-elastic-ep", aliases: [], controlledBy: "spec.roles[].elastic", reason: "berth's resize verb drives elastic EP" },
  { flag: "--kv-transfer-config", aliases: [], controlledBy: "spec.kvTransfer", reason: "prefill and decode must agree on the connector the router speaks" },
  { flag: "--nnodes", aliases: ["-n"], controlledBy: MULTI_HOST, reason: "the node count is the role's size" },
  { flag: "--node-rank", aliases: ["-r"], controlledBy: MULTI_HOST, reason: "each member's rank is its index in the instance" },
  { flag: "--master-addr", aliases: [], controlledBy: MULTI_HOST, reason: "berth points every member at the leader's address" },
  { flag: "--master-port", aliases: [], controlledBy: MULTI_HOST, reason: "berth wires the leader's rendezvous port" },
];

const SGLANG_FLAGS: readonly OwnedFlag[] = [
  { flag: "--model-path", aliases: ["--model"], controlledBy: "spec.model.source", reason: "berth passes the weights' location from spec.model.source" },
  { flag: "--host", aliases: [], controlledBy: FIXED_ADDRESS, reason: "SGLang binds 127.0.0.1 by default, unreachable from probes and the router" },
  { flag: "--port", aliases: [], controlledBy: FIXED_ADDRESS, reason: "probes, Services and the router address the engine on berth's port" },
  { flag: "--served-model-name", aliases: [], controlledBy: "spec.model.name", reason: "every role serves exactly spec.model.name; the router and metrics match on it" },
  { flag: "--tp-size", aliases: ["--tensor-parallel-size", "--tp"], controlledBy: "spec.roles[].parallelism.tensor", reason: "the parallel degrees are typed fields checked against the role's GPUs" },
  { flag: "--dp-size", aliases: ["--data-parallel-size", "--dp"], controlledBy: "spec.roles[].parallelism.data", reason: "the parallel degrees are typed fields checked against the role's GPUs" },
  { flag: "--ep-size", aliases: ["--expert-parallel-size", "--ep"], controlledBy: "spec.roles[].parallelism.expert", reason: "the parallel degrees are typed fields" },
  { flag: "--pp-size", aliases: ["--pipeline-parallel-size", "--pp"], controlledBy: "spec.roles[].parallelism.pipeline", reason: "the parallel degrees are typed fields checked against the role's GPUs" },
  { flag: "--nnodes", aliases: [], controlledBy: MULTI_HOST, reason: "the node count is the role's size" },
  { flag: "--node-rank", aliases: [], controlledBy: MULTI_HOST, reason: "each member's rank is its index in the instance" },
  { flag: "--dist-init-addr", aliases: ["--nccl-init-addr"], controlledBy: MULTI_HOST, reason: "berth points every member at the leader's address" },
  { flag: "--disaggregation-mode", aliases: [], controlledBy: "spec.roles[].kind", reason: "a role's kind decides whether it prefills or decodes" },
  { flag: "--disaggregation-transfer-backend", aliases: [], controlledBy: "spec.kvTransfer.connector", reason: "prefill and decode must agree on the transfer backend" },
  { flag: "--disaggregation-bootstrap-port", aliases: [], controlledBy: "berth itself (a fixed bootstrap port)", reason: "the router tells decode where each prefill's bootstrap server listens" },
  { flag: "--enable-metrics", aliases: [], controlledBy: "berth itself (always on)", reason: "the autoscaler and status read the engine's metrics, which SGLang serves only with this flag" },
];

const BERTH_ENV: OwnedEnv = { name: "BERTH_*", controlledBy: "berth itself", reason: "berth's own variables (leader address, group size, member index, pod IP)" };
const HF_TOKEN_REASON = "a token belongs in a Secret; name it in spec.model.hfTokenSecret";

const VLLM_ENV: readonly OwnedEnv[] = [
  { name: "VLLM_NIXL_SIDE_CHANNEL_HOST", controlledBy: "spec.kvTransfer", reason: "berth sets it to the pod IP so decode can reach prefill" },
  { name: "VLLM_NIXL_SIDE_CHANNEL_PORT", controlledBy: "spec.kvTransfer", reason: "the router and peers must know the side-channel port" },
  { name: "VLLM_HOST_IP", controlledBy: FIXED_ADDRESS, reason: "berth sets it to the pod IP for multi-host and DP wiring" },
  { name: "VLLM_PORT", controlledBy: FIXED_ADDRESS, reason: "berth reserves the engine's internal port range" },
  { name: "VLLM_DP_RANK", controlledBy: "spec.roles[].parallelism.data", reason: "berth assigns DP ranks" },
  { name: "VLLM_DP_RANK_LOCAL", controlledBy: "spec.roles[].parallelism.dataLocal", reason: "berth assigns DP ranks" },
  { name: "VLLM_DP_SIZE", controlledBy: "spec.roles[].parallelism.data", reason: "the parallel degrees are typed fields" },
  { name: "VLLM_DP_MASTER_IP", controlledBy: MULTI_HOST, reason: "berth points every member at the leader's address" },
  { name: "VLLM_DP_MASTER_PORT", controlledBy: MULTI_HOST, reason: "berth wires the leader's port" },
  { name: "HF_TOKEN", controlledBy: "spec.model.hfTokenSecret", reason: HF_TOKEN_REASON },
  { name: "HUGGING_FACE_HUB_TOKEN", controlledBy: "spec.model.hfTokenSecret", reason: HF_TOKEN_REASON },
  BERTH_ENV,
];

const SGLANG_ENV: readonly OwnedEnv[] = [
  { name: "SGLANG_PORT", controlledBy: FIXED_ADDRESS, reason: "berth reserves the engine's internal port range" },
  { name: "HF_TOKEN", controlledBy: "spec.model.hfTokenSecret", reason: HF_TOKEN_REASON },
  { name: "HUGGING_FACE_HUB_TOKEN", controlledBy: "spec.model.hfTokenSecret", reason: HF_TOKEN_REASON },
  BERTH_ENV,
];

export const OWNED_FLAGS: Readonly<Record<EngineName, readonly OwnedFlag[]>> = { vllm: VLLM_FLAGS, sglang: SGLANG_FLAGS };
export const OWNED_ENV: Readonly<Record<EngineName, readonly OwnedEnv[]>> = { vllm: VLLM_ENV, sglang: SGLANG_ENV };

const spellings = (entry: OwnedFlag) => [entry.flag, ...entry.aliases];

/**
 * The owned flag an argument sets, if any. Recognises `--flag`, `--flag=value`, `--no-flag`
 * (boolean negation), underscore spellings (`--tensor_parallel_size`), dotted sub-keys
 * (`--kv-transfer-config.kv_role`), short aliases (`-tp`, `-tp=2`) and unique-prefix
 * abbreviations that argparse expands (`--tensor-parallel`). Values (`2`) are never flags.
 */
export function findOwnedFlag(engine: EngineName, arg: string): OwnedFlag | undefined {
  if (!arg.startsWith("-") || arg === "-" || arg === "--" || /^-\d/.test(arg)) return undefined;
  const table = OWNED_FLAGS[engine];
  const name = arg.split("=", 1)[0]!;
  if (!name.startsWith("--")) return table.find((entry) => entry.aliases.includes(name));

  // Group flags accept dotted sub-keys; argparse-style parsers accept '_' for '-'.
  const base = name.slice(2).split(".", 1)[0]!.replaceAll("_", "-");
  const candidates = [`--${base}`];
  if (base.startsWith("no-")) candidates.push(`--${base.slice(3)}`);

  for (const candidate of candidates) {
    const exact = table.find((entry) => spellings(entry).includes(candidate));
    if (exact) return exact;
  }
  // Python's argparse expands an unambiguous prefix of a long option to the whole option.
  for (const candidate of candidates) {
    if (candidate.length < 4) continue;
    const byPrefix = table.find((entry) => spellings(entry).some((s) => s.startsWith("--") && s.startsWith(candidate)));
    if (byPrefix) return byPrefix;
  }
  return undefined;
}

/** The owned environment variable a name sets, if any (exact name, or a `PREFIX_*` entry). */
export function findOwnedEnv(engine: EngineName, name: string): OwnedEnv | undefined {
  return OWNED_ENV[engine].find((entry) =>
    entry.name.endsWith("*") ? name.startsWith(entry.name.slice(0, -1)) : entry.name === name,
  );
}

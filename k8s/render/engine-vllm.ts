// vLLM's pod arguments for every shape berth supports (vLLM `vllm/engine/arg_utils.py`, the DP, NIXL and elastic EP recipes; docs/design.md §5.1, §12.1):
//   aggregated   vllm serve M --host 0.0.0.0 --port P --served-model-name N -tp T [-pp P] [-dp D]
//   multi-host   DP across pods: leader -dp D -dpl L --data-parallel-address <leader> -dpp 29550,
//                followers add --headless --data-parallel-start-rank m×L;
//                TP/PP across pods (data 1): --nnodes S --node-rank m --master-addr <leader> --master-port 29501
//   external DP  one API server per pod: --data-parallel-rank r (dataLocal 1), or hybrid LB
//                (-dpl L -dpr m×L --data-parallel-hybrid-lb) when a pod holds several ranks
//   PD / EPD     --kv-transfer-config {NixlConnector|MooncakeConnector, kv_both}, side channel on the pod IP;
//                encode/prefill exchange encoder outputs through --ec-transfer-config (ECExampleConnector,
//                ECSharedStorageConnector up to vLLM 0.12.0)
//   elastic EP   member 0: a Ray head, then one API server with -dp <width> --data-parallel-backend ray
//                --enable-expert-parallel --enable-eplb --enable-elastic-ep; members 1…: Ray workers
// Long flag spellings throughout, so logs and `ps` read plainly.
import type { V1EnvVar } from "@kubernetes/client-node";
import {
  everyMemberServes,
  httpPort,
  isGroup,
  isLeader,
  LEADER_ADDRESS,
  POD_IP,
  podIpEnv,
  type EngineContext,
  type EnginePlan,
} from "./engine.ts";
import { ANNOTATIONS, PORTS } from "./names.ts";
import { compareReleases, readImageRelease, release } from "../../src/domain/engine-image.ts";

const KV_CONNECTORS = { nixl: "NixlConnector", mooncake: "MooncakeConnector" } as const;

/** Where encoders leave their outputs for prefill (vLLM's shared-storage EC connector). */
export const EC_CACHE_PATH = "/ec-cache";
export const ecCacheClaimName = (deployment: string) => `${deployment}-ec-cache`;

function baseArgs(ctx: EngineContext): string[] {
  const { spec, role, options } = ctx;
  const { tensor, pipeline } = role.parallelism;
  const source = spec.model.source;
  return [
    ctx.model,
    "--host",
    "0.0.0.0",
    "--port",
    String(options.enginePort),
    "--served-model-name",
    spec.model.name,
    ...("huggingFace" in source ? ["--revision", source.huggingFace.revision] : []),
    "--tensor-parallel-size",
    String(tensor),
    ...(pipeline > 1 ? ["--pipeline-parallel-size", String(pipeline)] : []),
  ];
}

/** Data-parallel and multi-host flags for a non-elastic role. */
function topologyArgs(ctx: EngineContext): { args: string[]; serves: boolean } {
  const { role, member } = ctx;
  const { data, dataLocal, externalDP } = role.parallelism;
  const rendezvous = ["--data-parallel-address", LEADER_ADDRESS, "--data-parallel-rpc-port", String(PORTS.vllmDataParallelRpc)];

  if (externalDP && role.size > 1 && data > 1) {
    if (dataLocal === 1) {
      // External LB: this pod is exactly DP rank `member`; the DP coordinator runs with rank 0.
      return { args: ["--data-parallel-size", String(data), "--data-parallel-rank", String(member), ...rendezvous], serves: true };
    }
    // Hybrid LB: an API server per pod balancing its own dataLocal ranks; the router spreads across pods.
    return {
      args: [
        "--data-parallel-size",
        String(data),
        "--data-parallel-size-local",
        String(dataLocal),
        "--data-parallel-start-rank",
        String(member * dataLocal),
        ...rendezvous,
        "--data-parallel-hybrid-lb",
      ],
      serves: true,
    };
  }
  if (role.size > 1 && data > 1) {
    // Internal LB across pods: one HTTP entrypoint on the leader, headless engines elsewhere.
    const dp = ["--data-parallel-size", String(data), "--data-parallel-size-local", String(dataLocal)];
    if (member === 0) return { args: [...dp, ...rendezvous], serves: true };
    return { args: ["--headless", ...dp, "--data-parallel-start-rank", String(member * dataLocal), ...rendezvous], serves: false };
  }
  if (role.size > 1) {
    // One TP × PP group spanning pods (mp executor, vLLM ≥ 2025-11).
    const nodes = ["--nnodes", String(role.size), "--node-rank", String(member), "--master-addr", LEADER_ADDRESS, "--master-port", String(PORTS.vllmMaster)];
    return member === 0 ? { args: nodes, serves: true } : { args: [...nodes, "--headless"], serves: false };
  }
  if (data > 1) return { args: ["--data-parallel-size", String(data)], serves: true };
  return { args: [], serves: true };
}

function kvTransferArgs(ctx: EngineContext): { args: string[]; env: V1EnvVar[] } {
  const { spec, role } = ctx;
  if (role.kind !== "prefill" && role.kind !== "decode") return { args: [], env: [] };
  const connector = KV_CONNECTORS[spec.kvTransfer?.connector ?? "nixl"];
  const config = JSON.stringify({ kv_connector: connector, kv_role: "kv_both" });
  // NIXL's side channel must be reachable from other pods: advertise the pod IP, not "localhost".
  const env = connector === "NixlConnector" ? [podIpEnv("VLLM_NIXL_SIDE_CHANNEL_HOST")] : [];
  return { args: ["--kv-transfer-config", config], env };
}

/**
 * The shared-storage EC connector's name for the image's release: vLLM renamed
 * ECSharedStorageConnector to ECExampleConnector after 0.12.0
 * (https://github.com/vllm-project/vllm/pull/30201; v0.12.0 still ships shared_storage_connector,
 * https://docs.vllm.ai/en/v0.12.0/api/vllm/distributed/ec_transfer/ec_connector/), and releases
 * with the rename refuse the old name ("Unsupported connector type"). An image whose release
 * cannot be read (latest, nightly, a digest, a custom build) gets today's name.
 */
export function ecConnectorFor(image: string): string {
  const read = readImageRelease("vllm", image);
  return read.readable && compareReleases(read.release, release("0.12.0")) <= 0 ? "ECSharedStorageConnector" : "ECExampleConnector";
}

function ecTransferArgs(ctx: EngineContext): string[] {
  const { spec, role } = ctx;
  const epd = spec.roles.some((r) => r.kind === "encode");
  if (!epd || (role.kind !== "encode" && role.kind !== "prefill")) return [];
  const config = {
    ec_connector: ecConnectorFor(spec.engine.image),
    ec_role: role.kind === "encode" ? "ec_producer" : "ec_consumer",
    ec_connector_extra_config: { shared_storage_path: EC_CACHE_PATH },
  };
  return ["--ec-transfer-config", JSON.stringify(config)];
}

function ecCacheVolume(ctx: EngineContext): EnginePlan["volumes"] {
  const { spec, role } = ctx;
  if (!spec.roles.some((r) => r.kind === "encode") || (role.kind !== "encode" && role.kind !== "prefill")) return [];
  return [
    {
      volume: { name: "ec-cache", persistentVolumeClaim: { claimName: ecCacheClaimName(ctx.deploymentName) } },
      mount: { name: "ec-cache", mountPath: EC_CACHE_PATH },
    },
  ];
}

/** Ray's head must start before `vllm serve`, in the container holding rank 0's GPUs. */
export const ELASTIC_LEADER_SCRIPT =
  'ray start --head --port=' + PORTS.rayGcs + ' --node-ip-address="$BERTH_POD_IP" --num-gpus="$BERTH_RAY_GPUS" --disable-usage-stats && exec "$@"';

function renderElastic(ctx: EngineContext): EnginePlan {
  const { role } = ctx;
  const width = role.elastic!.width;
  const gpus = String(role.resources.gpus);
  const common: V1EnvVar[] = [podIpEnv("VLLM_HOST_IP")];
  if (!isLeader(ctx)) {
    // A DP rank is a Ray worker holding one tensor × pipeline group; the leader's engine places it.
    return {
      command: ["ray", "start"],
      args: [`--address=${LEADER_ADDRESS}:${PORTS.rayGcs}`, `--node-ip-address=${POD_IP}`, `--num-gpus=${gpus}`, "--disable-usage-stats", "--block"],
      acceptsExtraArgs: false,
      env: common,
      defaultEnv: [],
      ports: [],
      serves: false,
      steadyProbe: "http",
      annotations: {},
      volumes: [],
    };
  }
  const args = [
    "vllm",
    "serve",
    ...baseArgs(ctx),
    "--data-parallel-size",
    String(width),
    "--data-parallel-size-local",
    "1",
    "--data-parallel-backend",
    "ray",
    "--enable-expert-parallel",
    "--enable-eplb",
    "--enable-elastic-ep",
  ];
  return {
    command: ["/bin/sh", "-c", ELASTIC_LEADER_SCRIPT, "berth-elastic-leader"],
    args,
    acceptsExtraArgs: true,
    env: [...common, { name: "BERTH_RAY_GPUS", value: gpus }],
    // Recent vLLM drains in-flight requests before a resize only when told to (`VLLM_ELASTIC_EP_DRAIN_REQUESTS`, vLLM `vllm/v1/engine/async_llm.py`).
    defaultEnv: [{ name: "VLLM_ELASTIC_EP_DRAIN_REQUESTS", value: "1" }],
    ports: [httpPort(ctx), { name: "ray-gcs", containerPort: PORTS.rayGcs, protocol: "TCP" }],
    serves: true,
    // /health (every path) answers 503 for the whole resize; a TCP connect still proves the server is up.
    steadyProbe: "tcp",
    annotations: { [ANNOTATIONS.elasticWidth]: String(width) },
    volumes: [],
  };
}

export function renderVllm(ctx: EngineContext): EnginePlan {
  if (ctx.role.elastic) return renderElastic(ctx);
  const { role } = ctx;
  const topology = topologyArgs(ctx);
  const kv = kvTransferArgs(ctx);
  const args = [
    ...baseArgs(ctx),
    ...topology.args,
    ...(role.parallelism.expert ? ["--enable-expert-parallel"] : []),
    ...kv.args,
    ...ecTransferArgs(ctx),
  ];
  const env: V1EnvVar[] = [...kv.env];
  if (isGroup(role)) env.push(podIpEnv("VLLM_HOST_IP"));
  const ports = [httpPort(ctx)];
  if (kv.env.length > 0) ports.push({ name: "nixl", containerPort: PORTS.vllmNixlSideChannel, protocol: "TCP" });
  if (isGroup(role) && isLeader(ctx)) {
    const rendezvous = role.parallelism.data > 1 ? PORTS.vllmDataParallelRpc : PORTS.vllmMaster;
    ports.push({ name: "rendezvous", containerPort: rendezvous, protocol: "TCP" });
  }
  return {
    command: ["vllm", "serve"],
    args,
    acceptsExtraArgs: true,
    env,
    defaultEnv: [],
    ports,
    serves: topology.serves || everyMemberServes(role),
    steadyProbe: "http",
    annotations: {},
    volumes: ecCacheVolume(ctx),
  };
}

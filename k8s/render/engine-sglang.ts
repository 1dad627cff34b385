// SGLang's pod arguments for every shape berth supports (SGLang `python/sglang/srt/server_args.py` and its PD flags; docs/design.md §5.1, §12.2):
//   python3 -m sglang.launch_server --model-path M --host 0.0.0.0 --port P --served-model-name N
//     --tp-size T [--pp-size P] [--dp-size D] [--ep-size T] … --enable-metrics (metrics are off without it)
//   multi-host   --nnodes S --node-rank m --dist-init-addr <leader>:20000 (the same value on every node);
//                only node 0 serves HTTP, the others run SGLang's dummy health server
//   external DP  every pod an independent server of dataLocal ranks, each its own endpoint
//   PD           --disaggregation-mode prefill|decode --disaggregation-transfer-backend <mooncake|nixl>
//                --disaggregation-bootstrap-port 8998 (the prefill's bootstrap server binds --host)
//   EPD          encode: --encoder-only; prefill: --language-only --encoder-urls <encode role Service>
// Expert parallelism lives inside the TP group in SGLang: --ep-size equals --tp-size.
import type { V1EnvVar } from "@kubernetes/client-node";
import { everyMemberServes, httpPort, isLeader, LEADER_ADDRESS, type EngineContext, type EnginePlan } from "./engine.ts";
import { ANNOTATIONS, PORTS, roleServiceName, serviceHost } from "./names.ts";

/** SGLang's default encoder-output transport (zmq to the prefill scheduler). */
export const ENCODER_TRANSFER_BACKEND = "zmq_to_scheduler";

function parallelArgs(ctx: EngineContext): string[] {
  const { role } = ctx;
  const { tensor, pipeline, data, dataLocal, expert } = role.parallelism;
  const ranks = everyMemberServes(role) ? dataLocal : data;
  return [
    "--tp-size",
    String(tensor),
    ...(pipeline > 1 ? ["--pp-size", String(pipeline)] : []),
    ...(ranks > 1 ? ["--dp-size", String(ranks)] : []),
    ...(expert ? ["--ep-size", String(tensor)] : []),
  ];
}

function multiHostArgs(ctx: EngineContext): string[] {
  const { role, member } = ctx;
  if (role.size <= 1 || everyMemberServes(role)) return [];
  return ["--nnodes", String(role.size), "--node-rank", String(member), "--dist-init-addr", `${LEADER_ADDRESS}:${PORTS.sglangDistInit}`];
}

function disaggregationArgs(ctx: EngineContext): string[] {
  const { spec, role } = ctx;
  const args: string[] = [];
  if (role.kind === "prefill" || role.kind === "decode") {
    args.push(
      "--disaggregation-mode",
      role.kind,
      "--disaggregation-transfer-backend",
      spec.kvTransfer?.connector ?? "nixl",
      "--disaggregation-bootstrap-port",
      String(PORTS.sglangBootstrap),
    );
  }
  const encode = spec.roles.find((r) => r.kind === "encode");
  if (encode && role.kind === "encode") {
    args.push("--encoder-only", "--encoder-transfer-backend", ENCODER_TRANSFER_BACKEND);
  } else if (encode && role.kind === "prefill") {
    const url = `http://${serviceHost(roleServiceName(ctx.deploymentName, encode.name), ctx.namespace, ctx.options.clusterDomain)}:${ctx.options.enginePort}`;
    args.push("--language-only", "--encoder-urls", url, "--encoder-transfer-backend", ENCODER_TRANSFER_BACKEND);
  }
  return args;
}

export function renderSglang(ctx: EngineContext): EnginePlan {
  const { spec, role, options } = ctx;
  const source = spec.model.source;
  const args = [
    "--model-path",
    ctx.model,
    "--host",
    "0.0.0.0",
    "--port",
    String(options.enginePort),
    "--served-model-name",
    spec.model.name,
    ...("huggingFace" in source ? ["--revision", source.huggingFace.revision] : []),
    ...parallelArgs(ctx),
    ...multiHostArgs(ctx),
    ...disaggregationArgs(ctx),
    "--enable-metrics",
  ];
  const serves = isLeader(ctx) || everyMemberServes(role);
  const ports = [httpPort(ctx)];
  const annotations: Record<string, string> = {};
  if (role.kind === "prefill" && serves) {
    ports.push({ name: "bootstrap", containerPort: PORTS.sglangBootstrap, protocol: "TCP" });
    annotations[ANNOTATIONS.sglangBootstrapPort] = String(PORTS.sglangBootstrap);
  }
  if (multiHostArgs(ctx).length > 0 && isLeader(ctx)) {
    ports.push({ name: "rendezvous", containerPort: PORTS.sglangDistInit, protocol: "TCP" });
  }
  const defaultEnv: V1EnvVar[] = [];
  // Mooncake over plain TCP (no RDMA devices needed); a user variable of the same name wins.
  const pd = role.kind === "prefill" || role.kind === "decode";
  if (pd && spec.kvTransfer?.connector === "mooncake" && spec.kvTransfer.protocol === "tcp") {
    defaultEnv.push({ name: "MC_FORCE_TCP", value: "1" });
  }
  return {
    command: ["python3", "-m", "sglang.launch_server"],
    args,
    acceptsExtraArgs: true,
    env: [],
    defaultEnv,
    ports,
    serves,
    steadyProbe: "http",
    annotations,
    volumes: [],
  };
}

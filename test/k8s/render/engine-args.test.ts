// Exact engine argv per shape and member, against the upstream recipes (vLLM and SGLang launch,
// DP, PD and elastic EP flags; docs/design.md §5.1, §12): what the kubelet execs, command + args.
import { describe, expect, it } from "vitest";
import { renderDeployment, renderInstancePods, renderMemberPod } from "../../../k8s/render/index.ts";
import { ecConnectorFor, ELASTIC_LEADER_SCRIPT } from "../../../k8s/render/engine-vllm.ts";
import { argvOf, envOf, inputFor, shape } from "./support.ts";
import { aDeployment } from "../../fixtures/deployment-builder.ts";

const VLLM = (model = "Qwen/Qwen3-8B", port = "8000") => ["vllm", "serve", model, "--host", "0.0.0.0", "--port", port, "--served-model-name", model, "--revision", "main"];
const SGLANG = (model = "Qwen/Qwen3-8B") => ["python3", "-m", "sglang.launch_server", "--model-path", model, "--host", "0.0.0.0", "--port", "30000", "--served-model-name", model, "--revision", "main"];
const NIXL = ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'];
const LEADER = "$(BERTH_LEADER_ADDRESS)";

type Row = [file: string, role: string, replica: number, member: number, argv: readonly string[]];

describe("engine argv per shape", () => {
  it.each<Row>([
    ["vllm-aggregated-tp2-x2", "server", 0, 0, [...VLLM(), "--tensor-parallel-size", "2"]],
    ["vllm-aggregated-tp2-x2", "server", 1, 0, [...VLLM(), "--tensor-parallel-size", "2"]],
    // Multi-node internal LB: one HTTP entrypoint on the leader, headless engines on the others.
    [
      "vllm-dp4-local2-multihost",
      "server",
      0,
      0,
      [...VLLM(), "--tensor-parallel-size", "1", "--data-parallel-size", "4", "--data-parallel-size-local", "2", "--data-parallel-address", LEADER, "--data-parallel-rpc-port", "29550", "--enable-expert-parallel"],
    ],
    [
      "vllm-dp4-local2-multihost",
      "server",
      0,
      1,
      [...VLLM(), "--tensor-parallel-size", "1", "--headless", "--data-parallel-size", "4", "--data-parallel-size-local", "2", "--data-parallel-start-rank", "2", "--data-parallel-address", LEADER, "--data-parallel-rpc-port", "29550", "--enable-expert-parallel"],
    ],
    // One TP group across two pods (data 1): nnodes/node-rank/master address, followers headless.
    ["vllm-multihost-tp16", "server", 0, 0, [...VLLM(), "--tensor-parallel-size", "16", "--nnodes", "2", "--node-rank", "0", "--master-addr", LEADER, "--master-port", "29501"]],
    ["vllm-multihost-tp16", "server", 0, 1, [...VLLM(), "--tensor-parallel-size", "16", "--nnodes", "2", "--node-rank", "1", "--master-addr", LEADER, "--master-port", "29501", "--headless"]],
    // External LB: every pod is one rank with its own API server; all point at rank 0.
    ...[0, 1, 2, 3].map((rank): Row => [
      "vllm-external-dp",
      "server",
      0,
      rank,
      [...VLLM(), "--tensor-parallel-size", "2", "--data-parallel-size", "4", "--data-parallel-rank", String(rank), "--data-parallel-address", LEADER, "--data-parallel-rpc-port", "29550", "--enable-expert-parallel"],
    ]),
    // Hybrid LB: a pod per dataLocal ranks, each with its own API server.
    [
      "vllm-hybrid-dp",
      "server",
      0,
      1,
      [...VLLM(), "--tensor-parallel-size", "1", "--data-parallel-size", "4", "--data-parallel-size-local", "2", "--data-parallel-start-rank", "2", "--data-parallel-address", LEADER, "--data-parallel-rpc-port", "29550", "--data-parallel-hybrid-lb", "--enable-expert-parallel"],
    ],
    ["vllm-pd-builtin-router", "prefill", 0, 0, [...VLLM(), "--tensor-parallel-size", "2", ...NIXL]],
    ["vllm-pd-builtin-router", "decode", 0, 0, [...VLLM(), "--tensor-parallel-size", "2", ...NIXL]],
    // Elastic EP: Ray head + one API server on rank 0; the other ranks are Ray workers.
    [
      "vllm-elastic-ep-w2",
      "experts",
      0,
      0,
      [
        "/bin/sh",
        "-c",
        ELASTIC_LEADER_SCRIPT,
        "berth-elastic-leader",
        ...VLLM(),
        "--tensor-parallel-size",
        "2",
        "--data-parallel-size",
        "2",
        "--data-parallel-size-local",
        "1",
        "--data-parallel-backend",
        "ray",
        "--enable-expert-parallel",
        "--enable-eplb",
        "--enable-elastic-ep",
      ],
    ],
    ["vllm-elastic-ep-w2", "experts", 0, 1, ["ray", "start", `--address=${LEADER}:6379`, "--node-ip-address=$(BERTH_POD_IP)", "--num-gpus=2", "--disable-usage-stats", "--block"]],
    [
      "vllm-epd",
      "encode",
      0,
      0,
      [...VLLM("Qwen/Qwen2.5-VL-7B-Instruct"), "--tensor-parallel-size", "1", "--ec-transfer-config", '{"ec_connector":"ECSharedStorageConnector","ec_role":"ec_producer","ec_connector_extra_config":{"shared_storage_path":"/ec-cache"}}'],
    ],
    [
      "vllm-epd",
      "prefill",
      0,
      0,
      [...VLLM("Qwen/Qwen2.5-VL-7B-Instruct"), "--tensor-parallel-size", "1", ...NIXL, "--ec-transfer-config", '{"ec_connector":"ECSharedStorageConnector","ec_role":"ec_consumer","ec_connector_extra_config":{"shared_storage_path":"/ec-cache"}}'],
    ],
    ["vllm-epd", "decode", 0, 0, [...VLLM("Qwen/Qwen2.5-VL-7B-Instruct"), "--tensor-parallel-size", "1", ...NIXL]],
    ["sglang-aggregated", "server", 0, 0, [...SGLANG(), "--tp-size", "2", "--enable-metrics"]],
    ["sglang-multihost-nnodes2", "server", 0, 0, [...SGLANG(), "--tp-size", "16", "--nnodes", "2", "--node-rank", "0", "--dist-init-addr", `${LEADER}:20000`, "--enable-metrics"]],
    ["sglang-multihost-nnodes2", "server", 0, 1, [...SGLANG(), "--tp-size", "16", "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", `${LEADER}:20000`, "--enable-metrics"]],
    [
      "sglang-pd-gateway",
      "prefill",
      0,
      0,
      [...SGLANG(), "--tp-size", "1", "--disaggregation-mode", "prefill", "--disaggregation-transfer-backend", "mooncake", "--disaggregation-bootstrap-port", "8998", "--enable-metrics"],
    ],
    [
      "sglang-pd-gateway",
      "decode",
      0,
      0,
      [...SGLANG(), "--tp-size", "1", "--disaggregation-mode", "decode", "--disaggregation-transfer-backend", "mooncake", "--disaggregation-bootstrap-port", "8998", "--enable-metrics"],
    ],
    ["sglang-epd", "encode", 0, 0, [...SGLANG("Qwen/Qwen3-VL-8B-Instruct"), "--tp-size", "1", "--encoder-only", "--encoder-transfer-backend", "zmq_to_scheduler", "--enable-metrics"]],
    [
      "sglang-epd",
      "prefill",
      0,
      0,
      [
        ...SGLANG("Qwen/Qwen3-VL-8B-Instruct"),
        "--tp-size",
        "1",
        "--disaggregation-mode",
        "prefill",
        "--disaggregation-transfer-backend",
        "nixl",
        "--disaggregation-bootstrap-port",
        "8998",
        "--language-only",
        "--encoder-urls",
        "http://vl-encode.berth-default.svc.cluster.local:30000",
        "--encoder-transfer-backend",
        "zmq_to_scheduler",
        "--enable-metrics",
      ],
    ],
    ["command-takeover", "server", 0, 1, ["/bin/sh", "-c", "exec /opt/serve.sh --rank $BERTH_MEMBER_INDEX"]],
    [
      "hf-token-source",
      "server",
      0,
      0,
      [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--served-model-name",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--revision",
        "0e9e39f249a16976918f6564b8830bc894c89659",
        "--tensor-parallel-size",
        "1",
        "--max-model-len",
        "8192",
      ],
    ],
    [
      "pvc-source",
      "server",
      0,
      0,
      ["python3", "-m", "sglang.launch_server", "--model-path", "/models/qwen/Qwen3-8B", "--host", "0.0.0.0", "--port", "8080", "--served-model-name", "qwen3-8b", "--tp-size", "1", "--enable-metrics"],
    ],
  ])("%s role %s r%i m%i", (file, role, replica, member, argv) => {
    expect(argvOf(renderMemberPod(shape(file), role, replica, member))).toEqual(argv);
  });
});

describe("engine wiring besides argv", () => {
  it("vLLM PD advertises the NIXL side channel on the pod IP", () => {
    const pod = renderMemberPod(shape("vllm-pd-builtin-router"), "prefill", 0, 0);
    expect(envOf(pod).VLLM_NIXL_SIDE_CHANNEL_HOST).toEqual({ fieldRef: { fieldPath: "status.podIP" } });
  });

  it("every engine pod gets BERTH_POD_IP; group members also leader, size and index", () => {
    for (const file of ["vllm-aggregated-tp2-x2", "sglang-multihost-nnodes2", "vllm-elastic-ep-w2", "command-takeover"]) {
      for (const pod of renderDeployment(shape(file)).pods) expect(envOf(pod).BERTH_POD_IP).toEqual({ fieldRef: { fieldPath: "status.podIP" } });
    }
    const [leader, worker] = renderInstancePods(shape("sglang-multihost-nnodes2"), "server", 0);
    expect(envOf(worker!)).toMatchObject({
      BERTH_LEADER_ADDRESS: "big-server-r0-m0.big-server-r0.berth-default.svc.cluster.local",
      BERTH_GROUP_SIZE: "2",
      BERTH_MEMBER_INDEX: "1",
    });
    expect(envOf(leader!).BERTH_MEMBER_INDEX).toBe("0");
    expect(worker!.spec).toMatchObject({ hostname: "big-server-r0-m1", subdomain: "big-server-r0" });
    expect(envOf(renderMemberPod(shape("vllm-aggregated-tp2-x2"), "server", 0, 0)).BERTH_LEADER_ADDRESS).toBeUndefined();
  });

  it("an elastic rank's pod can be rendered one at a time, up to maxWidth − 1, but not beyond", () => {
    const input = shape("vllm-elastic-ep-w2");
    expect(renderInstancePods(input, "experts", 0)).toHaveLength(2);
    const rank7 = renderMemberPod(input, "experts", 0, 7);
    expect(rank7.metadata!.name).toBe("dsv2-experts-r0-m7");
    expect(rank7.metadata!.labels!["berth.dev/member"]).toBe("7");
    expect(() => renderMemberPod(input, "experts", 0, 8)).toThrow(RangeError);
    expect(() => renderMemberPod(input, "experts", -1, 0)).toThrow(RangeError);
    expect(() => renderMemberPod(input, "nope", 0, 0)).toThrow(/role "nope"/);
  });

  it("elastic leader drains before a resize by default, and the user may say otherwise", () => {
    expect(envOf(renderMemberPod(shape("vllm-elastic-ep-w2"), "experts", 0, 0)).VLLM_ELASTIC_EP_DRAIN_REQUESTS).toBe("1");
    const input = inputFor(aDeployment().name("dsv2").elastic(2, 8).tp(2).role({ name: "experts", env: [{ name: "VLLM_ELASTIC_EP_DRAIN_REQUESTS", value: "0" }] }).build());
    const env = renderMemberPod(input, "experts", 0, 0).spec!.containers[0]!.env!;
    expect(env.filter((e) => e.name === "VLLM_ELASTIC_EP_DRAIN_REQUESTS")).toEqual([{ name: "VLLM_ELASTIC_EP_DRAIN_REQUESTS", value: "0" }]);
  });

  it("SGLang prefill pods publish the bootstrap port to SMG and expose it", () => {
    const pod = renderMemberPod(shape("sglang-pd-gateway"), "prefill", 0, 0);
    expect(pod.metadata!.annotations!["sglang.ai/bootstrap-port"]).toBe("8998");
    expect(pod.spec!.containers[0]!.ports).toContainEqual({ name: "bootstrap", containerPort: 8998, protocol: "TCP" });
    expect(renderMemberPod(shape("sglang-pd-gateway"), "decode", 0, 0).metadata!.annotations!["sglang.ai/bootstrap-port"]).toBeUndefined();
  });

  it("only the pods that answer the API are labelled serving", () => {
    const serving = (file: string) => renderDeployment(shape(file)).pods.map((p) => p.metadata!.labels!["berth.dev/serving"]);
    expect(serving("vllm-dp4-local2-multihost")).toEqual(["true", "false"]);
    expect(serving("vllm-external-dp")).toEqual(["true", "true", "true", "true"]);
    expect(serving("vllm-elastic-ep-w2")).toEqual(["true", "false"]);
    expect(serving("sglang-multihost-nnodes2")).toEqual(["true", "false"]);
  });
});

describe("the shared-storage EC connector's name follows the image's release", () => {
  it.each([
    ["vllm/vllm-openai:v0.11.0", "ECSharedStorageConnector"],
    ["vllm/vllm-openai:v0.12.0", "ECSharedStorageConnector"],
    ["vllm/vllm-openai:v0.13.0", "ECExampleConnector"],
    ["vllm/vllm-openai:v0.29.0", "ECExampleConnector"],
    ["vllm/vllm-openai:latest", "ECExampleConnector"],
    ["registry.example/custom/vllm:build-7", "ECExampleConnector"],
  ])("%s → %s", (image, name) => {
    expect(ecConnectorFor(image)).toBe(name);
  });
});

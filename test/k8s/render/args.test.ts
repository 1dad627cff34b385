// extraArgs and env are appended to what berth renders, and no flag or variable appears twice:
// berth's owned (or already-rendered) flags win over a user's copy, whatever its spelling.
import { describe, expect, it } from "vitest";
import { appendExtraArgs, mergeEnv, renderMemberPod } from "../../../k8s/render/index.ts";
import { OWNED_FLAGS } from "../../../src/domain/owned-flags.ts";
import { isFlagToken } from "../../../k8s/render/args.ts";
import { namespaceName } from "../../../k8s/render/names.ts";
import { argvOf, envOf, shape, withSpec } from "./support.ts";

const RENDERED = ["M", "--host", "0.0.0.0", "--port", "8000", "--served-model-name", "m", "--revision", "main", "--tensor-parallel-size", "2"];

describe("appendExtraArgs", () => {
  it.each([
    ["a harmless flag passes", ["--max-model-len", "4096"], ["--max-model-len", "4096"], []],
    ["an owned flag and its value are dropped", ["--tensor-parallel-size", "8", "--enforce-eager"], ["--enforce-eager"], ["--tensor-parallel-size", "8"]],
    ["short alias", ["-tp", "8"], [], ["-tp", "8"]],
    ["inline value", ["--port=9000", "--enforce-eager"], ["--enforce-eager"], ["--port=9000"]],
    ["underscore spelling", ["--tensor_parallel_size", "4"], [], ["--tensor_parallel_size", "4"]],
    ["argparse prefix", ["--tensor-parallel", "4"], [], ["--tensor-parallel", "4"]],
    ["dotted sub-key", ["--kv-transfer-config.kv_role", "kv_producer"], [], ["--kv-transfer-config.kv_role", "kv_producer"]],
    ["owned boolean keeps the next flag", ["--headless", "--enforce-eager"], ["--enforce-eager"], ["--headless"]],
    ["negation", ["--no-enable-eplb", "--enforce-eager"], ["--enforce-eager"], ["--no-enable-eplb"]],
    ["a non-owned flag berth rendered (--revision)", ["--revision", "v2", "--seed", "1"], ["--seed", "1"], ["--revision", "v2"]],
    ["multi-valued served name", ["--served-model-name", "a", "b", "--seed", "1"], ["--seed", "1"], ["--served-model-name", "a", "b"]],
    ["negative numbers are values", ["--max-model-len", "-1"], ["--max-model-len", "-1"], []],
  ])("%s", (_what, extra, kept, dropped) => {
    const merged = appendExtraArgs("vllm", RENDERED, extra);
    expect(merged.args).toEqual([...RENDERED, ...kept]);
    expect(merged.dropped).toEqual(dropped);
  });

  it("SGLang spellings too", () => {
    const merged = appendExtraArgs("sglang", ["--model-path", "M", "--tp-size", "2", "--enable-metrics"], ["--tp", "4", "--enable-metrics", "--mem-fraction-static", "0.8"]);
    expect(merged.args).toEqual(["--model-path", "M", "--tp-size", "2", "--enable-metrics", "--mem-fraction-static", "0.8"]);
  });

  it.each(["vllm", "sglang"] as const)("%s: every owned flag in extraArgs is never emitted twice in a rendered pod", (engine) => {
    const input = engine === "vllm" ? shape("vllm-dp4-local2-multihost") : shape("sglang-multihost-nnodes2");
    // Bypass admission on purpose: every owned flag and alias, inline-valued so no stray value is left behind.
    const extra = OWNED_FLAGS[engine].flatMap((entry) => [entry.flag, ...entry.aliases].map((spelling) => `${spelling}=7`));
    for (const member of [0, 1]) {
      const argv = argvOf(renderMemberPod(withSpec(input, (s) => void (s.roles[0]!.extraArgs = extra)), "server", 0, member));
      const flags = argv.filter(isFlagToken).map((f) => f.split("=")[0]);
      expect(flags.length, argv.join(" ")).toBe(new Set(flags).size);
      expect(argv).not.toContain("7");
    }
  });
});

describe("mergeEnv", () => {
  const owned = [{ name: "BERTH_POD_IP", value: "x" }];
  const defaults = [{ name: "VLLM_ELASTIC_EP_DRAIN_REQUESTS", value: "1" }];

  it("drops a user variable berth owns, lets a user replace a default, keeps each name once", () => {
    const env = mergeEnv("vllm", owned, defaults, [
      { name: "BERTH_POD_IP", value: "evil" },
      { name: "VLLM_NIXL_SIDE_CHANNEL_HOST", value: "evil" },
      { name: "VLLM_ELASTIC_EP_DRAIN_REQUESTS", value: "0" },
      { name: "A", value: "1" },
      { name: "A", value: "2" },
    ], { takeOver: false });
    expect(env).toEqual([
      { name: "BERTH_POD_IP", value: "x" },
      { name: "VLLM_ELASTIC_EP_DRAIN_REQUESTS", value: "0" },
      { name: "A", value: "1" },
    ]);
  });

  it("under a take-over command only BERTH_* stays reserved", () => {
    const env = mergeEnv("vllm", owned, [], [{ name: "VLLM_NIXL_SIDE_CHANNEL_HOST", value: "mine" }, { name: "BERTH_MEMBER_INDEX", value: "9" }], { takeOver: true });
    expect(env).toEqual([...owned, { name: "VLLM_NIXL_SIDE_CHANNEL_HOST", value: "mine" }]);
  });

  it("passes a Secret reference through as written, and still drops an owned name given one", () => {
    const ref = { secretKeyRef: { name: "team-creds", key: "api.key", optional: true } };
    const env = mergeEnv("vllm", owned, [], [
      { name: "API_KEY", valueFrom: ref },
      { name: "BERTH_POD_IP", valueFrom: { secretKeyRef: { name: "s", key: "k" } } },
      { name: "PLAIN", value: "1" },
    ], { takeOver: false });
    expect(env).toEqual([...owned, { name: "API_KEY", valueFrom: ref }, { name: "PLAIN", value: "1" }]);
  });

  it("renders a role's secretKeyRef into every engine container of the deployment, for each engine", () => {
    for (const file of ["vllm-pd-builtin-router", "sglang-pd-gateway", "vllm-multihost-tp16"]) {
      const input = withSpec(shape(file), (s) => {
        for (const role of s.roles) role.env = [{ name: "TEAM_TOKEN", valueFrom: { secretKeyRef: { name: "team-creds", key: "token" } } }];
      });
      const role = input.deployment.spec.roles[0]!;
      const pod = renderMemberPod(input, role.name, 0, 0);
      expect(envOf(pod).TEAM_TOKEN, file).toEqual({ secretKeyRef: { name: "team-creds", key: "token" } });
      // The Secret is read where the pod runs: the project's namespace.
      expect(pod.metadata!.namespace).toBe(namespaceName(input.deployment.projectName));
    }
  });

  it("a rendered pod never lists a variable twice, even with owned names in env", () => {
    const input = withSpec(shape("vllm-pd-builtin-router"), (s) => {
      s.model.hfTokenSecret = { name: "hf", key: "token" };
      for (const role of s.roles) role.env = [{ name: "HF_TOKEN", value: "hf_plain" }, { name: "VLLM_NIXL_SIDE_CHANNEL_HOST", value: "1.2.3.4" }, { name: "BERTH_POD_IP", value: "x" }];
    });
    const pod = renderMemberPod(input, "prefill", 0, 0);
    const names = pod.spec!.containers[0]!.env!.map((e) => e.name);
    expect(names.length).toBe(new Set(names).size);
    expect(envOf(pod).HF_TOKEN).toEqual({ secretKeyRef: { name: "hf", key: "token" } });
    expect(envOf(pod).VLLM_NIXL_SIDE_CHANNEL_HOST).toEqual({ fieldRef: { fieldPath: "status.podIP" } });
  });
});

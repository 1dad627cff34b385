import { describe, expect, it } from "vitest";
import type { EngineName } from "../../src/domain/deployment-spec.ts";
import { findOwnedEnv, findOwnedFlag, OWNED_ENV, OWNED_FLAGS } from "../../src/domain/owned-flags.ts";

describe("findOwnedFlag", () => {
  it.each<[EngineName, string, string | undefined]>([
    ["vllm", "--tensor-parallel-size", "--tensor-parallel-size"],
    ["vllm", "-tp", "--tensor-parallel-size"],
    ["vllm", "-tp=4", "--tensor-parallel-size"],
    ["vllm", "--tensor-parallel-size=4", "--tensor-parallel-size"],
    ["vllm", "--tensor_parallel_size", "--tensor-parallel-size"],
    ["vllm", "--tensor-parallel", "--tensor-parallel-size"],
    ["vllm", "--data-parallel-size-local", "--data-parallel-size-local"],
    ["vllm", "-dpl", "--data-parallel-size-local"],
    ["vllm", "-dpn", "--data-parallel-rank"],
    ["vllm", "-dpr", "--data-parallel-start-rank"],
    ["vllm", "-dpa", "--data-parallel-address"],
    ["vllm", "-dpp", "--data-parallel-rpc-port"],
    ["vllm", "-dpb", "--data-parallel-backend"],
    ["vllm", "--data-parallel-hybrid-lb", "--data-parallel-hybrid-lb"],
    ["vllm", "--data-parallel-external-lb", "--data-parallel-external-lb"],
    ["vllm", "--headless", "--headless"],
    ["vllm", "-ep", "--enable-expert-parallel"],
    ["vllm", "--no-enable-expert-parallel", "--enable-expert-parallel"],
    ["vllm", "--enable-eplb", "--enable-eplb"],
    ["vllm", "--enable-elastic-ep", "--enable-elastic-ep"],
    ["vllm", "--kv-transfer-config", "--kv-transfer-config"],
    ["vllm", '--kv-transfer-config={"kv_connector":"NixlConnector"}', "--kv-transfer-config"],
    ["vllm", "--kv-transfer-config.kv_role", "--kv-transfer-config"],
    ["vllm", "--kv-transfer-config.kv_connector_extra_config.backends+", "--kv-transfer-config"],
    ["vllm", "--served-model-name", "--served-model-name"],
    ["vllm", "--model", "--model"],
    ["vllm", "--host=::", "--host"],
    ["vllm", "--uds", "--uds"],
    ["vllm", "--nnodes", "--nnodes"],
    ["vllm", "--node-rank", "--node-rank"],
    ["vllm", "--master-addr", "--master-addr"],
    ["vllm", "--master-port=29501", "--master-port"],
    ["vllm", "--max-model-len", undefined],
    ["vllm", "4096", undefined],
    ["vllm", "-1", undefined],
    ["vllm", "--", undefined],
    ["vllm", "--enable-prefix-caching", undefined],
    ["vllm", "--no-enable-prefix-caching", undefined],
    ["vllm", "--gpu-memory-utilization=0.9", undefined],
    ["vllm", "--kv-events-config", undefined],
    ["vllm", "--shutdown-timeout", undefined],
    ["sglang", "--model-path", "--model-path"],
    ["sglang", "--model", "--model-path"],
    ["sglang", "--tp", "--tp-size"],
    ["sglang", "--tp-size=2", "--tp-size"],
    ["sglang", "--tensor-parallel-size", "--tp-size"],
    ["sglang", "--dp-size", "--dp-size"],
    ["sglang", "--data-parallel-size", "--dp-size"],
    ["sglang", "--ep", "--ep-size"],
    ["sglang", "--expert-parallel-size", "--ep-size"],
    ["sglang", "--pp-size", "--pp-size"],
    ["sglang", "--dist-init-addr", "--dist-init-addr"],
    ["sglang", "--nccl-init-addr", "--dist-init-addr"],
    ["sglang", "--disaggregation-mode=prefill", "--disaggregation-mode"],
    ["sglang", "--disaggregation-transfer-backend", "--disaggregation-transfer-backend"],
    ["sglang", "--disaggregation-bootstrap-port", "--disaggregation-bootstrap-port"],
    ["sglang", "--enable-metrics", "--enable-metrics"],
    ["sglang", "--served-model-name", "--served-model-name"],
    ["sglang", "--enable-metrics-for-all-schedulers", undefined],
    ["sglang", "--enable-dp-attention", undefined],
    ["sglang", "--mem-fraction-static", undefined],
    ["sglang", "-tp", undefined],
  ])("%s %s → %s", (engine, arg, flag) => {
    expect(findOwnedFlag(engine, arg)?.flag).toBe(flag);
  });

  it.each(Object.entries(OWNED_FLAGS) as [EngineName, (typeof OWNED_FLAGS)[EngineName]][])(
    "every %s spelling finds its own entry, once",
    (engine, table) => {
      const spellings = table.flatMap((entry) => [entry.flag, ...entry.aliases]);
      expect(new Set(spellings).size).toBe(spellings.length);
      for (const entry of table) {
        expect(entry.controlledBy).not.toBe("");
        expect(entry.reason).not.toBe("");
        for (const spelling of [entry.flag, ...entry.aliases]) expect(findOwnedFlag(engine, spelling)).toBe(entry);
      }
    },
  );
});

describe("findOwnedEnv", () => {
  it.each<[EngineName, string, string | undefined]>([
    ["vllm", "VLLM_NIXL_SIDE_CHANNEL_HOST", "VLLM_NIXL_SIDE_CHANNEL_HOST"],
    ["vllm", "VLLM_NIXL_SIDE_CHANNEL_PORT", "VLLM_NIXL_SIDE_CHANNEL_PORT"],
    ["vllm", "VLLM_HOST_IP", "VLLM_HOST_IP"],
    ["vllm", "VLLM_PORT", "VLLM_PORT"],
    ["vllm", "HF_TOKEN", "HF_TOKEN"],
    ["vllm", "BERTH_LEADER_ADDRESS", "BERTH_*"],
    ["vllm", "VLLM_LOGGING_LEVEL", undefined],
    ["vllm", "vllm_port", undefined],
    ["sglang", "SGLANG_PORT", "SGLANG_PORT"],
    ["sglang", "BERTH_MEMBER_INDEX", "BERTH_*"],
    ["sglang", "VLLM_PORT", undefined],
    ["sglang", "SGLANG_HEALTH_CHECK_TIMEOUT", undefined],
  ])("%s %s → %s", (engine, name, owned) => {
    expect(findOwnedEnv(engine, name)?.name).toBe(owned);
  });

  it("gives every entry a controlling field and a reason", () => {
    for (const entry of [...OWNED_ENV.vllm, ...OWNED_ENV.sglang]) {
      expect(entry.controlledBy).not.toBe("");
      expect(entry.reason).not.toBe("");
    }
  });
});

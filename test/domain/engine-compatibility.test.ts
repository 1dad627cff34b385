import { describe, expect, it } from "vitest";
import { applySpecDefaults, DeploymentSpecInput, type DeploymentSpec } from "../../src/domain/deployment-spec.ts";
import { ENGINE_COMPATIBILITY, EngineCompatibility, featuresOfSpec, KNOWN_FAILURE_MATCHES, type EngineFeature, type FeatureSupport } from "../../src/domain/engine-compatibility.ts";
import { checkEngineCompatibility, failureCoversRelease, isBelowMinimum } from "../../src/domain/engine-gate.ts";
import { release } from "../../src/domain/engine-image.ts";
import { aDeployment, type DeploymentBuilder } from "../fixtures/deployment-builder.ts";

const specOf = (builder: DeploymentBuilder, image?: string): DeploymentSpec => {
  const body = builder.build();
  if (image) body.spec.engine.image = image;
  return applySpecDefaults(DeploymentSpecInput.parse(body.spec));
};

describe("the compatibility table", () => {
  it("parses with its own schema, names each feature once per engine, and gives every row a source", () => {
    for (const entry of ENGINE_COMPATIBILITY) {
      expect(EngineCompatibility.parse(entry)).toEqual(entry);
      const features = entry.features.map((f) => f.feature);
      expect(new Set(features).size).toBe(features.length);
      for (const row of [...entry.features, ...entry.transports, ...entry.knownFailures]) expect(row.source.length).toBeGreaterThan(10);
      for (const failure of entry.knownFailures) expect(KNOWN_FAILURE_MATCHES[failure.id], failure.id).toBeTypeOf("function");
      for (const connector of ["nixl", "mooncake"]) {
        for (const protocol of ["tcp", "rdma"]) expect(entry.transports.filter((t) => t.connector === connector && t.protocol === protocol)).toHaveLength(1);
      }
    }
  });
});

describe("featuresOfSpec", () => {
  it.each<[string, DeploymentBuilder, EngineFeature[]]>([
    ["aggregated vLLM uses nothing gated", aDeployment(), []],
    ["PD defaults to NIXL", aDeployment().pd(), ["pd-nixl"]],
    ["PD over Mooncake", aDeployment().pd().spec({ kvTransfer: { connector: "mooncake" } }), ["pd-mooncake"]],
    ["EPD", aDeployment().epd(), ["pd-nixl", "epd"]],
    ["elastic EP", aDeployment().elastic(2, 8), ["elastic-ep"]],
    ["external DP, one rank per pod", aDeployment().router().role({ name: "server", size: 4, parallelism: { data: 4, externalDP: true } }), ["external-dp"]],
    ["hybrid LB, two ranks per pod", aDeployment().router().role({ name: "server", size: 2, parallelism: { data: 4, externalDP: true } }), ["hybrid-lb"]],
    ["DP across pods (headless followers)", aDeployment().role({ name: "server", size: 2, resources: { gpus: 2 }, parallelism: { data: 4 } }), ["multi-node-dp"]],
    ["TP × PP across pods", aDeployment().role({ name: "server", size: 2, resources: { gpus: 8 }, parallelism: { tensor: 8, pipeline: 2 } }), ["multi-node-tp"]],
    ["SGLang external DP renders no flag", aDeployment().engine("sglang").router().role({ name: "server", size: 4, parallelism: { data: 4, externalDP: true } }), []],
    ["SGLang across pods", aDeployment().engine("sglang").role({ name: "server", size: 2, resources: { gpus: 8 }, parallelism: { tensor: 16 } }), ["multi-node-tp"]],
    ["LoRA and sleep mode from extraArgs", aDeployment().role({ name: "server", extraArgs: ["--enable-lora", "--enable-sleep-mode=true"] }), ["lora", "sleep-mode"]],
    ["a take-over role uses nothing berth renders", aDeployment().role({ name: "server", size: 2, command: ["sh", "-c", "vllm serve m --enable-lora"], extraArgs: ["--enable-lora"] }), []],
  ])("%s", (_name, builder, features) => {
    expect(featuresOfSpec(specOf(builder))).toEqual(features);
  });
});

describe("isBelowMinimum and failureCoversRelease", () => {
  const nixl: FeatureSupport = { feature: "pd-nixl", summary: "", flags: [], renderedByBerth: true, minimum: "0.9.0", source: "s" };
  const elastic: FeatureSupport = { feature: "elastic-ep", summary: "", flags: [], renderedByBerth: true, minimum: "unknown", absentIn: "0.16.0", source: "s" };
  const unknown: FeatureSupport = { feature: "lora", summary: "", flags: [], renderedByBerth: false, minimum: "unknown", source: "s" };
  it.each<[string, FeatureSupport, string, boolean]>([
    ["below the minimum", nixl, "0.8.5", true],
    ["a pre-release of the minimum", nixl, "0.9.0rc1", true],
    ["at the minimum", nixl, "0.9.0", false],
    ["above the minimum", nixl, "0.11.0", false],
    ["at a release known to lack it", elastic, "0.16.0", true],
    ["below that release", elastic, "0.11.0", true],
    ["after it, first release unknown", elastic, "0.17.0", false],
    ["unknown minimum never gates", unknown, "0.1.0", false],
  ])("%s", (_name, support, at, below) => {
    expect(isBelowMinimum(support, release(at))).toBe(below);
  });

  it.each([
    [{ from: "0.18.0" }, "0.17.1", false],
    [{ from: "0.18.0" }, "0.18.0", true],
    [{ after: "0.12.0" }, "0.12.0", false],
    [{ after: "0.12.0" }, "0.13.0", true],
    [{}, "0.1.0", true],
    [{ from: "0.18.0" }, undefined, true],
  ])("releases %j cover %s: %s", (releases, at, covered) => {
    const failure = { id: "x", summary: "", appliesTo: "", releases, workaround: "", source: "" };
    expect(failureCoversRelease(failure, at === undefined ? undefined : release(at))).toBe(covered);
  });
});

describe("checkEngineCompatibility", () => {
  it("admits a readable release above every floor with no warnings", () => {
    expect(checkEngineCompatibility(specOf(aDeployment().pd(), "vllm/vllm-openai:v0.11.0"))).toEqual({ errors: [], warnings: [] });
  });

  it("admits a feature exactly at its minimum", () => {
    expect(checkEngineCompatibility(specOf(aDeployment().pd(), "vllm/vllm-openai:v0.9.0")).errors).toEqual([]);
  });

  it("refuses a feature below its minimum at /spec/engine/image, naming the feature, the release, the image and the way out", () => {
    const { errors } = checkEngineCompatibility(specOf(aDeployment().pd(), "vllm/vllm-openai:v0.8.5"));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.pointer).toBe("/spec/engine/image");
    expect(errors[0]!.message).toMatch(/^image vllm\/vllm-openai:v0\.8\.5 is vLLM 0\.8\.5, but pd-nixl \(--kv-transfer-config .*\) needs vLLM 0\.9\.0 or later \(https:\/\/github\.com\/vllm-project\/vllm\/releases\/tag\/v0\.9\.0/);
    expect(errors[0]!.message).toContain("; use an image of vLLM 0.9.0 or later, or drop the pd-nixl shape from the spec");
  });

  it("ratchets: a feature the stored spec already used with the same image is warned about, not refused", () => {
    const stored = specOf(aDeployment().elastic(2, 8), "vllm/vllm-openai:v0.11.0");
    const { errors, warnings } = checkEngineCompatibility(stored, stored);
    expect(errors).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining("(kept: the stored spec already uses it with this image)")]);
  });

  it("does not ratchet a changed image or a feature the stored spec did not use", () => {
    const elastic = specOf(aDeployment().elastic(2, 8), "vllm/vllm-openai:v0.11.0");
    expect(checkEngineCompatibility(elastic, specOf(aDeployment().elastic(2, 8), "vllm/vllm-openai:v0.29.0")).errors).toHaveLength(1);
    expect(checkEngineCompatibility(elastic, specOf(aDeployment(), "vllm/vllm-openai:v0.11.0")).errors).toHaveLength(1);
  });

  it("refuses elastic EP on a release known to lack --enable-elastic-ep", () => {
    const { errors } = checkEngineCompatibility(specOf(aDeployment().elastic(2, 8), "vllm/vllm-openai:v0.11.0"));
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining("elastic-ep (--enable-elastic-ep --enable-eplb --data-parallel-backend ray) needs a vLLM release after 0.16.0")]);
  });

  it("does not gate a feature whose minimum is unknown", () => {
    expect(checkEngineCompatibility(specOf(aDeployment().router().role({ name: "server", size: 2, parallelism: { data: 4, externalDP: true } }), "vllm/vllm-openai:v0.1.0"))).toEqual({ errors: [], warnings: [] });
  });

  it.each([
    ["a digest", "vllm/vllm-openai@sha256:0123", "it is pinned by digest only, which does not name a release"],
    ["latest", "vllm/vllm-openai:latest", 'tag "latest" does not name a release'],
    ["a custom build", "registry:5000/org/img:tag", '"org/img" is not an official vllm repository'],
  ])("accepts %s with a warning that names what was not checked", (_name, image, why) => {
    const { errors, warnings } = checkEngineCompatibility(specOf(aDeployment().pd(), image));
    expect(errors).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining(`engine.image ${image}: ${why}`)]);
    expect(warnings[0]).toContain("without checking whether it has pd-nixl (needs vLLM 0.9.0 or later). Use an official tag such as vllm/vllm-openai:v<release>");
  });

  it("warns on a matching known failure, with its source", () => {
    const spec = specOf(aDeployment().engine("sglang").pd().router("sglang-gateway").spec({ kvTransfer: { connector: "mooncake", protocol: "tcp" } }));
    const { errors, warnings } = checkEngineCompatibility(spec);
    expect(errors).toEqual([]);
    expect(warnings).toEqual([expect.stringMatching(/^known SGLang failure sglang-pd-tcp-port-exhaustion: .* Way out: .*tcp_tw_reuse.* Source: https:\/\/docs\.gpustack\.ai\//)]);
    const nixl = specOf(aDeployment().engine("sglang").pd().router("sglang-gateway"));
    expect(checkEngineCompatibility(nixl).warnings).toEqual([]);
  });

  it("warns on a known failure only inside its releases", () => {
    const elastic = (image: string) => checkEngineCompatibility(specOf(aDeployment().elastic(2, 8), image)).warnings;
    expect(elastic("vllm/vllm-openai:v0.17.0")).toEqual([]);
    expect(elastic("vllm/vllm-openai:v0.29.0")).toEqual([expect.stringContaining("known vLLM failure vllm-official-image-without-ray")]);
    const custom = elastic("registry:5000/vllm-ray:v0.29.0");
    expect(custom).toHaveLength(2); // unreadable tag, and the Ray failure may apply
  });
});

// The spec-hash label: stable under live counts (replicas, elastic width), changed by anything
// that shapes a pod's template, and equal on every pod of a role.
import { describe, expect, it } from "vitest";
import { canonicalJson, fnv1a64, LABELS, renderDeployment, renderMemberPod, specHashOf } from "../../../k8s/render/index.ts";
import type { DeploymentSpec } from "../../../src/domain/deployment-spec.ts";
import { shape, withSpec } from "./support.ts";

const hashOf = (spec: DeploymentSpec, role = spec.roles[0]!.name) => specHashOf(spec, role);

describe("specHashOf", () => {
  const base = shape("vllm-aggregated-tp2-x2").deployment.spec;
  const elastic = shape("vllm-elastic-ep-w2").deployment.spec;

  it("is 16 hex digits and deterministic", () => {
    expect(hashOf(base)).toMatch(/^[0-9a-f]{16}$/);
    expect(hashOf(structuredClone(base))).toBe(hashOf(base));
  });

  it.each([
    ["replicas 2 → 7", (s: DeploymentSpec) => void (s.roles[0]!.replicas = 7)],
    ["replicas 2 → 0", (s: DeploymentSpec) => void (s.roles[0]!.replicas = 0)],
    ["the rollout strategy (how pods are replaced, not what they run)", (s: DeploymentSpec) => void (s.roles[0]!.rollout = { maxSurge: 0, maxUnavailable: 2 })],
    ["router replicas", (s: DeploymentSpec) => void (s.router = { kind: "builtin", policy: "round_robin", replicas: 3 })],
    ["scaling bounds", (s: DeploymentSpec) => void (s.scaling = { mode: "active", intervalSeconds: 15, roles: [], algorithm: { type: "queue_depth", targetPerReplica: 8, tolerance: 0.1 }, scaleDownStabilizationSeconds: 300, retirement: { withdrawSeconds: 30, drainSeconds: 240, settleSeconds: 30 } })],
    ["clusterId", (s: DeploymentSpec) => void (s.clusterId = "clu_0123456789abcdefghjk")],
  ])("does not change with %s", (_what, edit) => {
    const next = structuredClone(base);
    edit(next);
    if (next.router) {
      // Only the router's kind shapes engine pods; compare against the same kind.
      const withRouter = structuredClone(base);
      withRouter.router = { kind: "builtin", policy: "cache_aware", replicas: 1 };
      expect(hashOf(next)).toBe(hashOf(withRouter));
    } else {
      expect(hashOf(next)).toBe(hashOf(base));
    }
  });

  it("does not change with an elastic role's width (a resize keeps the leader)", () => {
    const wider = structuredClone(elastic);
    wider.roles[0]!.elastic!.width = 6;
    expect(hashOf(wider)).toBe(hashOf(elastic));
  });

  it.each([
    ["engine image", (s: DeploymentSpec) => void (s.engine.image = "vllm/vllm-openai:v0.12.0")],
    ["model revision", (s: DeploymentSpec) => void (s.model.source = { huggingFace: { repository: "Qwen/Qwen3-8B", revision: "abc" } })],
    ["HF token secret", (s: DeploymentSpec) => void (s.model.hfTokenSecret = { name: "hf", key: "token" })],
    ["tensor parallelism", (s: DeploymentSpec) => void (s.roles[0]!.parallelism.tensor = 4)],
    ["GPUs per pod", (s: DeploymentSpec) => void (s.roles[0]!.resources.gpus = 4)],
    ["GPU type", (s: DeploymentSpec) => void (s.roles[0]!.resources.gpuType = "nvidia-h200-141gb")],
    ["shared memory", (s: DeploymentSpec) => void (s.roles[0]!.resources.sharedMemory = "32Gi")],
    ["extraArgs", (s: DeploymentSpec) => void (s.roles[0]!.extraArgs = ["--max-model-len", "4096"])],
    ["env", (s: DeploymentSpec) => void (s.roles[0]!.env = [{ name: "X", value: "1" }])],
    ["command", (s: DeploymentSpec) => void (s.roles[0]!.command = ["sleep", "infinity"])],
    ["grace period", (s: DeploymentSpec) => void (s.roles[0]!.terminationGracePeriodSeconds = 120)],
    ["size", (s: DeploymentSpec) => void (s.roles[0]!.size = 2)],
  ])("changes with %s", (_what, edit) => {
    const next = structuredClone(base);
    edit(next);
    expect(hashOf(next)).not.toBe(hashOf(base));
  });

  it("changes with the engine port and cluster domain (render options that shape pods)", () => {
    expect(specHashOf(base, "server", { enginePort: 9000 })).not.toBe(specHashOf(base, "server"));
    expect(specHashOf(base, "server", { clusterDomain: "example.internal" })).not.toBe(specHashOf(base, "server"));
    expect(specHashOf(base, "server", { enginePort: 8000 })).toBe(specHashOf(base, "server")); // the default, spelled out
  });

  it("differs per role, and is the same on every pod of a role", () => {
    const input = shape("vllm-pd-builtin-router");
    const pods = renderDeployment(input).pods;
    const byRole = new Map<string, Set<string>>();
    for (const pod of pods) {
      const labels = pod.metadata!.labels!;
      (byRole.get(labels[LABELS.role]!) ?? byRole.set(labels[LABELS.role]!, new Set()).get(labels[LABELS.role]!)!).add(labels[LABELS.specHash]!);
    }
    expect([...byRole.values()].map((s) => s.size)).toEqual([1, 1]);
    expect(byRole.get("prefill")).not.toEqual(byRole.get("decode"));
  });

  it("rendered survivors keep their label when replicas change; a new image marks them stale", () => {
    const input = shape("vllm-aggregated-tp2-x2");
    const before = renderMemberPod(input, "server", 0, 0).metadata!.labels![LABELS.specHash];
    const scaled = withSpec(input, (s) => void (s.roles[0]!.replicas = 5));
    expect(renderMemberPod(scaled, "server", 0, 0).metadata!.labels![LABELS.specHash]).toBe(before);
    const upgraded = withSpec(input, (s) => void (s.engine.image = "vllm/vllm-openai:v0.12.0"));
    expect(renderMemberPod(upgraded, "server", 0, 0).metadata!.labels![LABELS.specHash]).not.toBe(before);
  });
});

describe("canonicalJson and fnv1a64", () => {
  it("ignore key order and undefined members", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: undefined }], c: "z" } })).toBe('{"a":{"c":"z","d":[1,{"y":2}]},"b":1}');
  });

  it("match the published FNV-1a 64 test vectors", () => {
    expect(fnv1a64("")).toBe("cbf29ce484222325");
    expect(fnv1a64("a")).toBe("af63dc4c8601ec8c");
    expect(fnv1a64("foobar")).toBe("85944171f73967e8");
  });
});

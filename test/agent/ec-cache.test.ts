// vLLM EPD's shared encoder-cache claim, pure: the plan applies `<deployment>-ec-cache` (storage
// class and size from the agent's options) before the pods that mount it, never again once
// observed, and deletes it with the deployment; SGLang EPD and non-EPD shapes have none; status
// names a claim that keeps encode/prefill pods Pending (VolumeNotBound: the claim, its class).
import type { V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { renderClaims, renderInstancePods, type RenderInput } from "../../k8s/render/index.ts";
import { emptyObserved, type Observed } from "../../src/agent/observe.ts";
import { planDeployment } from "../../src/agent/plan.ts";
import { podProblem } from "../../src/agent/status.ts";
import { aggregated, disaggregated, statusAnswered } from "./support.ts";

const NOW = new Date("2026-11-30T12:00:00.000Z");

const epd = (engine: "vllm" | "sglang", ecCache?: RenderInput["options"]["ecCache"]): RenderInput => {
  const input = aggregated(0, {
    model: { name: "Qwen/Qwen2.5-VL-7B-Instruct" },
    engine: engine === "vllm" ? { name: "vllm", image: "vllm/vllm-openai:v0.11.0" } : { name: "sglang", image: "lmsysorg/sglang:v0.5.4" },
    router: { kind: "builtin" },
    roles: [
      { name: "encode", kind: "encode", replicas: 1, resources: { gpus: 1 } },
      { name: "prefill", kind: "prefill", replicas: 1, resources: { gpus: 1 } },
      { name: "decode", kind: "decode", replicas: 1, resources: { gpus: 1 } },
    ],
  });
  return ecCache ? { ...input, options: { ...input.options, ecCache } } : input;
};

const observedClaim = (input: RenderInput, phase: string): V1PersistentVolumeClaim => {
  const claim = structuredClone(renderClaims(input)[0]!);
  claim.metadata!.uid = "uid-claim";
  claim.spec!.storageClassName ??= "standard";
  claim.status = { phase };
  return claim;
};

const pendingOnClaim = (input: RenderInput, role: string, message: string): V1Pod => {
  const pod = structuredClone(renderInstancePods(input, role, 0)[0]!);
  pod.metadata!.uid = `uid-${role}`;
  pod.status = { phase: "Pending", conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message }] };
  return pod;
};

describe("the encoder-cache claim in the plan", () => {
  it("is applied first, ReadWriteMany, with the configured class and size, and mounted by encode and prefill only", () => {
    const input = epd("vllm", { storageClassName: "nfs-rwx", size: "50Gi" });
    const actions = planDeployment({ render: input, deleting: false, observed: emptyObserved(true) });
    const claims = actions.filter((a) => a.kind === "applyClaim");
    expect(claims).toHaveLength(1);
    expect(actions.findIndex((a) => a.kind === "applyClaim")).toBeLessThan(actions.findIndex((a) => a.kind === "createPod"));
    expect(claims[0]!.kind === "applyClaim" && claims[0]!.object).toMatchObject({
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "chat-ec-cache", namespace: "berth-team", labels: { "berth.dev/deployment-id": input.deployment.id, "berth.dev/component": "ec-cache" } },
      spec: { accessModes: ["ReadWriteMany"], storageClassName: "nfs-rwx", resources: { requests: { storage: "50Gi" } } },
    });
    const mounts = (role: string) => renderInstancePods(input, role, 0)[0]!.spec!.volumes?.filter((v) => v.persistentVolumeClaim?.claimName === "chat-ec-cache").length ?? 0;
    expect([mounts("encode"), mounts("prefill"), mounts("decode")]).toEqual([1, 1, 0]);
  });

  it("leaves the class to the cluster's default and asks 10Gi when the agent names neither", () => {
    const [claim] = renderClaims(epd("vllm"));
    expect(claim!.spec).toEqual({ accessModes: ["ReadWriteMany"], resources: { requests: { storage: "10Gi" } } });
  });

  it("is not applied again once observed (Bound or not)", () => {
    const input = epd("vllm");
    for (const phase of ["Bound", "Pending"]) {
      const actions = planDeployment({ render: input, deleting: false, observed: { ...emptyObserved(true), claims: [observedClaim(input, phase)] } });
      expect(actions.some((a) => a.kind === "applyClaim")).toBe(false);
    }
  });

  it.each([
    ["SGLang EPD (its encoder sends embeddings itself)", epd("sglang")],
    ["vLLM prefill/decode", disaggregated("vllm", 1, 1)],
    ["aggregated vLLM", aggregated(1)],
  ])("is not rendered for %s", (_name, input) => {
    expect(renderClaims(input)).toEqual([]);
    expect(planDeployment({ render: input, deleting: false, observed: emptyObserved(true) }).some((a) => a.kind === "applyClaim")).toBe(false);
  });

  it("is deleted with the deployment, by UID, unless already terminating", () => {
    const input = epd("vllm");
    const claim = observedClaim(input, "Bound");
    const observed: Observed = { ...emptyObserved(true), claims: [claim] };
    expect(planDeployment({ render: input, deleting: true, observed })).toEqual([
      { kind: "deleteObject", ref: { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: "berth-team", name: "chat-ec-cache", uid: "uid-claim" } },
    ]);
    const terminating = { ...claim, metadata: { ...claim.metadata, deletionTimestamp: new Date() } };
    expect(planDeployment({ render: input, deleting: true, observed: { ...observed, claims: [terminating] } })).toEqual([]);
  });
});

describe("a claim that keeps pods Pending in status", () => {
  const UNBOUND = "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.";

  it("names the claim and its storage class (VolumeNotBound), in Scheduled and Ready", () => {
    const input = epd("vllm", { storageClassName: "nfs-rwx" });
    const claim = observedClaim(input, "Pending");
    const observed: Observed = { ...emptyObserved(true), claims: [claim], pods: [pendingOnClaim(input, "encode", UNBOUND), pendingOnClaim(input, "prefill", UNBOUND)] };
    const status = statusAnswered({ render: input, deleting: false, observed, now: NOW });
    const scheduled = status.conditions?.find((c) => c.type === "Scheduled");
    expect(scheduled).toMatchObject({
      status: "False",
      reason: "VolumeNotBound",
      message: "chat-encode-r0-m0: claim chat-ec-cache is Pending in storage class nfs-rwx; the class must exist and provision ReadWriteMany volumes",
    });
    expect(status.conditions?.find((c) => c.type === "Ready")).toMatchObject({ status: "False", reason: "VolumeNotBound" });
    expect(status.phase).toBe("Degraded");
  });

  it("says when the claim does not exist yet", () => {
    const input = epd("vllm");
    const pod = pendingOnClaim(input, "prefill", '0/2 nodes are available: persistentvolumeclaim "chat-ec-cache" not found. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.');
    expect(podProblem(pod, undefined, [])).toEqual({ reason: "VolumeNotBound", message: "chat-prefill-r0-m0: claim chat-ec-cache does not exist yet" });
  });

  it("keeps other scheduling failures as they were", () => {
    const input = epd("vllm");
    const pod = pendingOnClaim(input, "encode", "0/2 nodes are available: 2 node(s) were unschedulable.");
    expect(podProblem(pod, undefined, [observedClaim(input, "Pending")])?.reason).toBe("Unschedulable");
  });
});

// The executor's claim actions against the simulated cluster: vLLM EPD's encoder-cache claim is
// server-side applied (again without changing its binding), observed by label, and deleted only
// under the UID the planner saw; a second delete of a gone claim is not an error.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderClaims, renderNamespace } from "../../k8s/render/index.ts";
import { applyAction } from "../../src/agent/apply.ts";
import { createKube, type Kube } from "../../src/agent/kube.ts";
import { observeDeployment } from "../../src/agent/observe.ts";
import { startTestCluster, type TestCluster } from "../k8s/sim/support.ts";
import { aggregated } from "./support.ts";

const input = aggregated(0, {
  model: { name: "Qwen/Qwen2.5-VL-7B-Instruct" },
  router: { kind: "builtin" },
  roles: [
    { name: "encode", kind: "encode", replicas: 1, resources: { gpus: 1 } },
    { name: "prefill", kind: "prefill", replicas: 1, resources: { gpus: 1 } },
    { name: "decode", kind: "decode", replicas: 1, resources: { gpus: 1 } },
  ],
});

let t: TestCluster;
let kube: Kube;
beforeAll(async () => {
  t = await startTestCluster();
  kube = createKube(t.kc);
});
afterAll(async () => {
  await t?.stop();
});

describe("applying and deleting the encoder-cache claim", () => {
  it("applies it (twice, the binding kept), observes it by label, deletes it by UID only", async () => {
    const [claim] = renderClaims(input);
    await applyAction(kube, { kind: "applyNamespace", object: renderNamespace("team") });
    await applyAction(kube, { kind: "applyClaim", object: claim! });
    const first = await kube.core.readNamespacedPersistentVolumeClaim({ name: "chat-ec-cache", namespace: "berth-team" });
    expect(first.status?.phase).toBe("Bound");
    await applyAction(kube, { kind: "applyClaim", object: claim! });
    const again = await kube.core.readNamespacedPersistentVolumeClaim({ name: "chat-ec-cache", namespace: "berth-team" });
    expect(again.spec?.volumeName).toBe(first.spec?.volumeName);
    expect(again.metadata?.uid).toBe(first.metadata?.uid);

    const observed = await observeDeployment(kube, "berth-team", input.deployment.id, false);
    expect(observed.claims.map((c) => c.metadata?.name)).toEqual(["chat-ec-cache"]);

    const ref = { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: "berth-team", name: "chat-ec-cache" };
    await expect(applyAction(kube, { kind: "deleteObject", ref: { ...ref, uid: "not-its-uid" } })).rejects.toMatchObject({ code: 409 });
    await applyAction(kube, { kind: "deleteObject", ref: { ...ref, uid: first.metadata!.uid! } });
    await expect(kube.core.readNamespacedPersistentVolumeClaim({ name: "chat-ec-cache", namespace: "berth-team" })).rejects.toMatchObject({ code: 404 });
    await applyAction(kube, { kind: "deleteObject", ref: { ...ref, uid: first.metadata!.uid! } });
  });
});

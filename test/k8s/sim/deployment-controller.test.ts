// The router Deployment on the simulated cluster: its pod waits for the admin-token Secret
// (FailedMount), then runs `berth router` reading the token from the mounted Secret and
// answers through its Service; a template change replaces the pod one at a time (the new one
// is Ready before the old one is deleted); scaling goes through the scale subresource; deleting
// the Deployment collects its pods.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aDeployment } from "../../fixtures/deployment-builder.ts";
import { apply, isReady, render, startTestCluster, waitFor, type TestCluster } from "./support.ts";

let t: TestCluster;
beforeAll(async () => {
  t = await startTestCluster();
});
afterAll(async () => {
  await t?.stop();
});

const TOKEN = "router-admin-token-0123456789";
const NS = "berth-routers";
const DEPLOYMENT = "qwen-chat-router";

const routerObjects = (policy: "round_robin" | "least_load") =>
  render(aDeployment().pd().spec({ router: { kind: "builtin", policy } }).build(), "routers").routerObjects;

async function routerPods(): Promise<k8s.V1Pod[]> {
  return (await t.core.listNamespacedPod({ namespace: NS, labelSelector: "berth.dev/component=router" })).items;
}

describe("the router Deployment", () => {
  it("waits for its admin-token Secret, then serves /admin with the token from the mounted Secret", async () => {
    await t.core.createNamespace({ body: { metadata: { name: NS } } });
    await apply(t, routerObjects("round_robin"));
    const waiting = await waitFor("FailedMount", async () => {
      const [pod] = await routerPods();
      if (!pod) return undefined;
      const events = await t.core.listNamespacedEvent({ namespace: NS, fieldSelector: `involvedObject.name=${pod.metadata!.name},reason=FailedMount` });
      return events.items[0] ? { pod, event: events.items[0] } : undefined;
    });
    expect(waiting.event.message).toBe(`MountVolume.SetUp failed for volume "admin-token" : secret "qwen-chat-router-admin" not found`);
    expect(waiting.pod.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe("ContainerCreating");
    expect(waiting.pod.metadata?.labels?.["pod-template-hash"]).toMatch(/^[a-z0-9]{10}$/);
    expect(waiting.pod.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: "Deployment", name: DEPLOYMENT, controller: true })]);

    await t.core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: "qwen-chat-router-admin" }, stringData: { token: TOKEN } } });
    const deployment = await waitFor("1/1 ready", async () => {
      const current = await t.apps.readNamespacedDeployment({ namespace: NS, name: DEPLOYMENT });
      return current.status?.readyReplicas === 1 ? current : undefined;
    });
    expect(deployment.status).toMatchObject({ replicas: 1, updatedReplicas: 1, availableReplicas: 1, observedGeneration: deployment.metadata?.generation });
    expect(deployment.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["Available", "True", "MinimumReplicasAvailable"],
      ["Progressing", "True", "NewReplicaSetAvailable"],
    ]);

    const service = await t.core.readNamespacedService({ namespace: NS, name: "qwen-chat" });
    const base = `http://${service.spec!.clusterIP}:8080`;
    expect((await fetch(`${base}/admin/health`)).status).toBe(200);
    expect((await fetch(`${base}/admin/endpoints`)).status).toBe(401);
    expect((await fetch(`${base}/admin/endpoints`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  it("replaces its pod one at a time on a template change: the new pod is Ready before the old one goes", async () => {
    const [old] = await routerPods();
    const timeline: { at: number; name: string; ready: boolean; deleting: boolean }[] = [];
    const request = await new k8s.Watch(t.kc).watch(`/api/v1/namespaces/${NS}/pods`, { labelSelector: "berth.dev/component=router" }, (type, pod: k8s.V1Pod) => {
      if (type !== "DELETED") timeline.push({ at: Date.now(), name: pod.metadata!.name!, ready: isReady(pod), deleting: pod.metadata?.deletionTimestamp !== undefined });
    }, () => {});
    try {
      await apply(t, routerObjects("least_load"));
      const replaced = await waitFor("the rollout", async () => {
        const pods = await routerPods();
        return pods.length === 1 && pods[0]!.metadata!.name !== old!.metadata!.name && isReady(pods[0]!) ? pods[0] : undefined;
      });
      expect(replaced.metadata?.labels?.["pod-template-hash"]).not.toBe(old!.metadata?.labels?.["pod-template-hash"]);
      expect(replaced.spec?.containers[0]?.args).toContain("least_load");
      const newReady = timeline.find((e) => e.name === replaced.metadata!.name && e.ready)!;
      const oldDeleting = timeline.find((e) => e.name === old!.metadata!.name && e.deleting)!;
      expect(newReady.at).toBeLessThanOrEqual(oldDeleting.at);
      const status = await waitFor("a complete rollout", async () => {
        const current = await t.apps.readNamespacedDeployment({ namespace: NS, name: DEPLOYMENT });
        return current.status?.replicas === 1 ? current.status : undefined;
      });
      expect(status).toMatchObject({ updatedReplicas: 1, readyReplicas: 1 });
    } finally {
      request.abort();
    }
  });

  it("scales through the scale subresource and collects its pods when deleted", async () => {
    await t.apps.patchNamespacedDeploymentScale(
      { namespace: NS, name: DEPLOYMENT, body: { spec: { replicas: 2 } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await waitFor("2/2 ready", async () => (await t.apps.readNamespacedDeployment({ namespace: NS, name: DEPLOYMENT })).status?.readyReplicas === 2);
    const endpoints = await waitFor("two router endpoints", async () => {
      const ep = await t.core.readNamespacedEndpoints({ namespace: NS, name: "qwen-chat" });
      return ep.subsets?.[0]?.addresses?.length === 2 ? ep : undefined;
    });
    expect(new Set(endpoints.subsets![0]!.addresses!.map((a) => a.ip)).size).toBe(2);
    await t.apps.deleteNamespacedDeployment({ namespace: NS, name: DEPLOYMENT });
    await waitFor("the pods to go", async () => (await routerPods()).length === 0);
  });
});

// The two hooks benchmarks use: `programs.noProcessImages` (containers that start no process,
// Running and Ready at once, gone at once on delete) and `onRequest` (every API request as it
// arrives, with its arrival time).
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { berthPrograms, type ObservedRequest } from "../../../k8s/sim/index.ts";
import { isReady, ROUTER_IMAGE, startTestCluster, waitFor, type TestCluster } from "./support.ts";

const IDLE_IMAGE = "bench.local/no-process:1";
const requests: ObservedRequest[] = [];
let t: TestCluster;

beforeAll(async () => {
  t = await startTestCluster({
    programs: { ...berthPrograms({ routerImage: ROUTER_IMAGE }), noProcessImages: [IDLE_IMAGE] },
    onRequest: (request) => requests.push(request),
  });
});
afterAll(async () => {
  await t?.stop();
});

const pod = (name: string): k8s.V1Pod => ({
  metadata: { name, labels: { app: "idle" } },
  spec: {
    containers: [
      {
        name: "engine",
        image: IDLE_IMAGE,
        command: ["vllm", "serve", "Qwen/Qwen3-8B"],
        resources: { requests: { "nvidia.com/gpu": "1" }, limits: { "nvidia.com/gpu": "1" } },
        // Nothing listens there: a no-process container is Ready without probing.
        readinessProbe: { httpGet: { path: "/health", port: 8000 }, periodSeconds: 10 },
        lifecycle: { preStop: { exec: { command: ["sleep", "30"] } } },
      },
    ],
    terminationGracePeriodSeconds: 60,
  },
});

describe("no-process images", () => {
  it("are Running and Ready at once with no process, and removed at once on delete (no preStop, no grace)", async () => {
    const before = requests.length;
    const sentAt = performance.now();
    await t.core.createNamespacedPod({ namespace: "default", body: pod("idle-0") });
    const create = requests.slice(before).find((r) => r.method === "POST" && r.path === "/api/v1/namespaces/default/pods");
    expect(create).toBeDefined();
    expect(create!.at).toBeGreaterThanOrEqual(sentAt);

    const ready = await waitFor("idle-0 Ready", async () => {
      const current = await t.core.readNamespacedPod({ namespace: "default", name: "idle-0" });
      return isReady(current) ? current : undefined;
    }, 5_000);
    expect(ready.status?.phase).toBe("Running");
    expect(ready.status?.podIP).toMatch(/^127\.0\.\d+\.\d+$/);
    expect(ready.status?.containerStatuses?.[0]).toMatchObject({ ready: true, started: true, restartCount: 0, state: { running: {} } });
    expect(ready.status?.containerStatuses?.[0]?.containerID).toMatch(/^berth-sim:\/\/no-process\//);
    expect(t.cluster.processIds()).toEqual([]);

    const deleting = Date.now();
    await t.core.deleteNamespacedPod({ namespace: "default", name: "idle-0" });
    await waitFor("idle-0 removed", async () => {
      const list = await t.core.listNamespacedPod({ namespace: "default", labelSelector: "app=idle" });
      return list.items.length === 0;
    }, 5_000);
    expect(Date.now() - deleting).toBeLessThan(3_000);
    expect(requests.some((r) => r.method === "DELETE" && r.path === "/api/v1/namespaces/default/pods/idle-0")).toBe(true);
  });

  it("leave every other image as before: an unknown image still cannot be pulled", async () => {
    await t.core.createNamespacedPod({
      namespace: "default",
      body: { metadata: { name: "unknown-0" }, spec: { containers: [{ name: "c", image: "bench.local/other:1" }] } },
    });
    const waiting = await waitFor("ErrImagePull", async () => {
      const current = await t.core.readNamespacedPod({ namespace: "default", name: "unknown-0" });
      const reason = current.status?.containerStatuses?.[0]?.state?.waiting?.reason;
      return reason === "ErrImagePull" || reason === "ImagePullBackOff" ? reason : undefined;
    }, 5_000);
    expect(["ErrImagePull", "ImagePullBackOff"]).toContain(waiting);
  });
});

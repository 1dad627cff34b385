// @kubernetes/client-node 1.4.0 against the simulated cluster with pods that run: list, a
// Watch that sees a pod go from ADDED to Ready, server-side apply forced over a field another
// manager owns (and the 409 without force), and the OpenAPI v3 index it can read.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { berthPrograms } from "../../../k8s/sim/index.ts";
import { isReady, ROUTER_IMAGE, startTestCluster, waitFor, type TestCluster } from "./support.ts";

const IDLE_IMAGE = "test.local/idle:1";
const NS = "client-node";

let t: TestCluster;
beforeAll(async () => {
  t = await startTestCluster({ programs: { ...berthPrograms({ routerImage: ROUTER_IMAGE }), noProcessImages: [IDLE_IMAGE] } });
  await t.core.createNamespace({ body: { metadata: { name: NS } } });
});
afterAll(async () => {
  await t?.stop();
});

it("lists namespaces, nodes and pods", async () => {
  expect((await t.core.listNamespace()).items.map((n) => n.metadata?.name)).toEqual(expect.arrayContaining(["default", NS]));
  expect((await t.core.listNode()).items.map((n) => n.metadata?.name)).toEqual(["gpu-a", "gpu-b"]);
  expect((await t.core.listNamespacedPod({ namespace: NS })).items).toEqual([]);
});

it("a Watch sees a pod created while it runs, from ADDED to Ready", async () => {
  const events: { type: string; ready: boolean; phase?: string }[] = [];
  const request = await new k8s.Watch(t.kc).watch(
    `/api/v1/namespaces/${NS}/pods`,
    { timeoutSeconds: 30 },
    (type, pod: k8s.V1Pod) => events.push({ type, ready: isReady(pod), phase: pod.status?.phase }),
    () => {},
  );
  try {
    await t.core.createNamespacedPod({ namespace: NS, body: { metadata: { name: "watched" }, spec: { containers: [{ name: "main", image: IDLE_IMAGE }] } } });
    await waitFor("a MODIFIED event with the pod Ready", async () => events.some((e) => e.type === "MODIFIED" && e.ready));
  } finally {
    request.abort();
  }
  expect(events[0]).toEqual({ type: "ADDED", ready: false, phase: "Pending" });
  expect(events.slice(1).every((e) => e.type === "MODIFIED")).toBe(true);
  expect(events.at(-1)).toEqual({ type: "MODIFIED", ready: true, phase: "Running" });
  expect((await t.core.listNamespacedPod({ namespace: NS })).items.map((p) => p.metadata?.name)).toEqual(["watched"]);
});

it("server-side apply conflicts without force and takes the field over with it", async () => {
  const configMap = (value: string): k8s.KubernetesObject & { data: Record<string, string> } => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "applied", namespace: NS },
    data: { key: value },
  });
  await t.objects.patch(configMap("a"), undefined, undefined, "owner", false, k8s.PatchStrategy.ServerSideApply);
  let conflict: k8s.ApiException<string> | undefined;
  try {
    await t.objects.patch(configMap("b"), undefined, undefined, "other", false, k8s.PatchStrategy.ServerSideApply);
  } catch (error) {
    conflict = error as k8s.ApiException<string>;
  }
  expect(conflict?.code).toBe(409);
  expect(JSON.parse(conflict!.body)).toMatchObject({ kind: "Status", reason: "Conflict" });
  const forced = (await t.objects.patch(configMap("b"), undefined, undefined, "other", true, k8s.PatchStrategy.ServerSideApply)) as k8s.V1ConfigMap;
  expect(forced.data).toEqual({ key: "b" });
  expect(forced.metadata?.managedFields?.map((m) => m.manager)).toEqual(["other"]);
});

it("reads the OpenAPI v3 index and a group-version document", async () => {
  const index = (await (await fetch(`${t.cluster.url}/openapi/v3`)).json()) as { paths: Record<string, { serverRelativeURL: string }> };
  expect(Object.keys(index.paths).sort()).toEqual(["api/v1", "apis/admissionregistration.k8s.io/v1", "apis/apps/v1", "apis/batch/v1", "apis/coordination.k8s.io/v1", "apis/discovery.k8s.io/v1", "apis/networking.k8s.io/v1", "apis/policy/v1", "apis/rbac.authorization.k8s.io/v1"]);
  const response = await fetch(`${t.cluster.url}${index.paths["apis/apps/v1"]!.serverRelativeURL}`);
  expect(response.headers.get("content-type")).toBe("application/json");
  const doc = (await response.json()) as { openapi: string; components: { schemas: Record<string, Record<string, unknown>> } };
  expect(doc.openapi).toBe("3.0.0");
  expect(doc.components.schemas["io.k8s.api.apps.v1.Deployment"]?.["x-kubernetes-group-version-kind"]).toEqual([{ group: "apps", version: "v1", kind: "Deployment" }]);
});

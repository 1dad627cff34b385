// The simulated API server through the real @kubernetes/client-node 1.4.0 (and kubectl): CRUD,
// resourceVersion conflicts, server-side apply, watch with 410 on a too-old resourceVersion,
// delete preconditions, selectors, subresources. No nodes here, so no pod ever runs.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectl, startTestCluster, waitFor, type TestCluster } from "./support.ts";

let t: TestCluster;
beforeAll(async () => {
  t = await startTestCluster({ nodes: [], watchHistorySize: 200 });
});
afterAll(async () => {
  await t?.stop();
});

const pod = (name: string, labels: Record<string, string> = {}): k8s.V1Pod => ({
  metadata: { name, labels },
  spec: { containers: [{ name: "engine", image: "vllm/vllm-openai:v0.11.0", command: ["vllm", "serve", "m"] }] },
});

async function apiError(promise: Promise<unknown>): Promise<k8s.ApiException<string>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof k8s.ApiException) return error as k8s.ApiException<string>;
    throw error;
  }
  throw new Error("expected an ApiException");
}

const statusOf = (error: k8s.ApiException<string>) => JSON.parse(error.body) as { reason: string; message: string; code: number };

async function namespace(name: string): Promise<string> {
  await t.core.createNamespace({ body: { metadata: { name } } });
  return name;
}

describe("discovery", () => {
  it("answers /version, /api, /apis and the group-version resource lists", async () => {
    const get = (path: string) => fetch(`${t.cluster.url}${path}`).then((r) => r.json() as Promise<Record<string, any>>);
    expect((await get("/version")).gitVersion).toMatch(/^v1\.32/);
    expect((await get("/api")).versions).toEqual(["v1"]);
    expect((await get("/apis")).groups.map((g: { name: string }) => g.name)).toEqual(expect.arrayContaining(["apps", "discovery.k8s.io", "rbac.authorization.k8s.io"]));
    const core = await get("/api/v1");
    expect(core.resources).toEqual(expect.arrayContaining([expect.objectContaining({ name: "pods", kind: "Pod", namespaced: true, shortNames: ["po"] }), expect.objectContaining({ name: "pods/log" })]));
    expect((await get("/apis/apps/v1")).resources.map((r: { name: string }) => r.name)).toContain("deployments/scale");
    expect(await fetch(`${t.cluster.url}/apis/nope/v1`).then((r) => r.status)).toBe(404);
  });
});

describe("namespaces and pods", () => {
  it("creates, gets, lists and deletes", async () => {
    const ns = await namespace("crud");
    expect((await t.core.readNamespace({ name: ns })).status?.phase).toBe("Active");
    const created = await t.core.createNamespacedPod({ namespace: ns, body: pod("p1", { "berth.dev/role": "decode" }) });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect(created.spec?.restartPolicy).toBe("Always");
    expect(created.spec?.terminationGracePeriodSeconds).toBe(30);
    expect(created.status?.phase).toBe("Pending");
    await t.core.createNamespacedPod({ namespace: ns, body: pod("p2", { "berth.dev/role": "prefill", draining: "true" }) });

    expect((await t.core.readNamespacedPod({ namespace: ns, name: "p1" })).metadata?.uid).toBe(created.metadata?.uid);
    const names = async (labelSelector?: string, fieldSelector?: string) =>
      (await t.core.listNamespacedPod({ namespace: ns, labelSelector, fieldSelector })).items.map((p) => p.metadata?.name);
    expect(await names()).toEqual(["p1", "p2"]);
    expect(await names("berth.dev/role in (decode,encode)")).toEqual(["p1"]);
    expect(await names("!draining")).toEqual(["p1"]);
    expect(await names("draining")).toEqual(["p2"]);
    expect(await names("berth.dev/role!=decode")).toEqual(["p2"]);
    expect(await names(undefined, "metadata.name=p2")).toEqual(["p2"]);
    expect(await names(undefined, "status.phase=Pending")).toEqual(["p1", "p2"]);
    const all = await t.core.listPodForAllNamespaces({ fieldSelector: `metadata.namespace=${ns}` });
    expect(all.items).toHaveLength(2);

    await t.core.deleteNamespacedPod({ namespace: ns, name: "p1" });
    const gone = await apiError(t.core.readNamespacedPod({ namespace: ns, name: "p1" }));
    expect(gone.code).toBe(404);
    expect(statusOf(gone)).toMatchObject({ reason: "NotFound", message: 'pods "p1" not found' });
  });

  it("refuses duplicates, missing namespaces and invalid names with the API server's errors", async () => {
    const ns = await namespace("errors");
    await t.core.createNamespacedPod({ namespace: ns, body: pod("dup") });
    const duplicate = await apiError(t.core.createNamespacedPod({ namespace: ns, body: pod("dup") }));
    expect([duplicate.code, statusOf(duplicate).reason, statusOf(duplicate).message]).toEqual([409, "AlreadyExists", 'pods "dup" already exists']);
    const missing = await apiError(t.core.createNamespacedPod({ namespace: "no-such-ns", body: pod("x") }));
    expect([missing.code, statusOf(missing).message]).toEqual([404, 'namespaces "no-such-ns" not found']);
    const invalid = await apiError(t.core.createNamespacedPod({ namespace: ns, body: pod("Not_Valid") }));
    expect(invalid.code).toBe(422);
    expect(statusOf(invalid).message).toMatch(/^Pod "Not_Valid" is invalid: metadata.name: Invalid value/);
    const badLabel = await apiError(t.core.createNamespacedPod({ namespace: ns, body: pod("ok", { "berth.dev/role": "no spaces allowed" }) }));
    expect(badLabel.code).toBe(422);
  });

  it("names pods from generateName", async () => {
    const ns = await namespace("generated");
    const created = await t.core.createNamespacedPod({ namespace: ns, body: { ...pod(""), metadata: { generateName: "router-" } } });
    expect(created.metadata?.name).toMatch(/^router-[a-z0-9]{5}$/);
  });
});

describe("optimistic concurrency", () => {
  it("answers 409 Conflict to an update carrying a stale resourceVersion", async () => {
    const ns = await namespace("conflict");
    const first = await t.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "cm" }, data: { a: "1" } } });
    const second = await t.core.replaceNamespacedConfigMap({ namespace: ns, name: "cm", body: { ...first, data: { a: "2" } } });
    expect(Number(second.metadata?.resourceVersion)).toBeGreaterThan(Number(first.metadata?.resourceVersion));
    const stale = await apiError(t.core.replaceNamespacedConfigMap({ namespace: ns, name: "cm", body: { ...first, data: { a: "3" } } }));
    expect(stale.code).toBe(409);
    expect(statusOf(stale)).toMatchObject({
      reason: "Conflict",
      message: 'Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the latest version and try again',
    });
    // A write that changes nothing takes no new resourceVersion.
    const same = await t.core.replaceNamespacedConfigMap({ namespace: ns, name: "cm", body: second });
    expect(same.metadata?.resourceVersion).toBe(second.metadata?.resourceVersion);
  });

  it("keeps spec and status apart and refuses pod spec edits", async () => {
    const ns = await namespace("subresources");
    await t.core.createNamespacedPod({ namespace: ns, body: pod("p") });
    // The scheduler writes PodScheduled=False (no nodes here) right after the create.
    const created = await waitFor("the scheduler's verdict", async () => {
      const current = await t.core.readNamespacedPod({ namespace: ns, name: "p" });
      return current.status?.conditions?.length ? current : undefined;
    });
    expect(created.status?.conditions?.[0]).toMatchObject({ type: "PodScheduled", status: "False", reason: "Unschedulable", message: "no nodes available to schedule pods" });
    const withStatus = await t.core.replaceNamespacedPodStatus({ namespace: ns, name: "p", body: { ...created, spec: { ...created.spec!, activeDeadlineSeconds: 5 }, status: { phase: "Running" } } });
    expect(withStatus.status?.phase).toBe("Running");
    expect(withStatus.spec?.activeDeadlineSeconds).toBeUndefined();
    const labelled = await t.core.patchNamespacedPod(
      { namespace: ns, name: "p", body: { metadata: { labels: { "berth.dev/serving": "false" } }, status: { phase: "Failed" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    expect(labelled.metadata?.labels).toEqual({ "berth.dev/serving": "false" });
    expect(labelled.status?.phase).toBe("Running");
    const edited = await apiError(
      t.core.patchNamespacedPod({ namespace: ns, name: "p", body: [{ op: "replace", path: "/spec/containers/0/command", value: ["sleep"] }] }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch)),
    );
    expect(edited.code).toBe(422);
    expect(statusOf(edited).message).toContain("pod updates may not change fields other than `spec.containers[*].image`");
  });
});

describe("server-side apply", () => {
  const configMap = (ns: string, data: Record<string, string>): k8s.KubernetesObject & { data: Record<string, string> } => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "router", namespace: ns, labels: { "app.kubernetes.io/managed-by": "berth-agent" } },
    data,
  });

  it("creates, then updates, recording the field manager in managedFields", async () => {
    const ns = await namespace("ssa");
    const created = (await t.objects.patch(configMap(ns, { a: "1", b: "2" }), undefined, undefined, "berth-agent", true, k8s.PatchStrategy.ServerSideApply)) as k8s.V1ConfigMap;
    expect(created.data).toEqual({ a: "1", b: "2" });
    const updated = (await t.objects.patch(configMap(ns, { a: "3" }), undefined, undefined, "berth-agent", true, k8s.PatchStrategy.ServerSideApply)) as k8s.V1ConfigMap;
    expect(updated.data).toEqual({ a: "3" });
    expect(updated.metadata?.uid).toBe(created.metadata?.uid);
    expect(updated.metadata?.managedFields).toEqual([
      expect.objectContaining({ manager: "berth-agent", operation: "Apply", fieldsType: "FieldsV1", fieldsV1: { "f:data": { "f:a": {} }, "f:metadata": { "f:labels": { "f:app.kubernetes.io/managed-by": {} } } } }),
    ]);
    const read = await t.core.readNamespacedConfigMap({ namespace: ns, name: "router" });
    expect(read.data).toEqual({ a: "3" });
  });

  it("is a 409 conflict to take another manager's field without force", async () => {
    const ns = await namespace("ssa-conflict");
    await t.objects.patch(configMap(ns, { a: "1" }), undefined, undefined, "berth-agent", true, k8s.PatchStrategy.ServerSideApply);
    await t.core.patchNamespacedConfigMap(
      { namespace: ns, name: "router", body: { data: { a: "edited" } }, fieldManager: "kubectl-edit" },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    const conflict = await apiError(t.objects.patch(configMap(ns, { a: "1" }), undefined, undefined, "berth-agent", false, k8s.PatchStrategy.ServerSideApply));
    expect(conflict.code).toBe(409);
    expect(statusOf(conflict).message).toBe('Apply failed with 1 conflict: conflict with "kubectl-edit": .data.a');
    const forced = (await t.objects.patch(configMap(ns, { a: "1" }), undefined, undefined, "berth-agent", true, k8s.PatchStrategy.ServerSideApply)) as k8s.V1ConfigMap;
    expect(forced.data).toEqual({ a: "1" });
  });

  it("applies an apps/v1 Deployment through discovery and serves its scale subresource", async () => {
    const ns = await namespace("ssa-deploy");
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: ns },
      spec: { replicas: 0, selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c", image: "nginx:1.27" }] } } },
    };
    await t.objects.patch(deployment, undefined, undefined, "berth-agent", true, k8s.PatchStrategy.ServerSideApply);
    const scale = await t.apps.readNamespacedDeploymentScale({ namespace: ns, name: "web" });
    expect(scale.spec?.replicas).toBe(0);
    expect(scale.status?.selector).toBe("app=web");
    const bad = await apiError(
      t.objects.patch({ ...deployment, spec: { ...deployment.spec, selector: { matchLabels: { app: "other" } } } }, undefined, undefined, "berth-agent", true, k8s.PatchStrategy.ServerSideApply),
    );
    expect(bad.code).toBe(422);
  });
});

describe("watch", () => {
  it("streams ADDED, MODIFIED and DELETED from a resourceVersion", async () => {
    const ns = await namespace("watch");
    const list = await t.core.listNamespacedConfigMap({ namespace: ns });
    const events: string[] = [];
    const request = await new k8s.Watch(t.kc).watch(
      `/api/v1/namespaces/${ns}/configmaps`,
      { resourceVersion: list.metadata?.resourceVersion },
      (type, object: k8s.V1ConfigMap) => events.push(`${type} ${object.metadata?.name} ${object.data?.step}`),
      () => {},
    );
    try {
      await t.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "w" }, data: { step: "1" } } });
      await t.core.patchNamespacedConfigMap({ namespace: ns, name: "w", body: { data: { step: "2" } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
      await t.core.deleteNamespacedConfigMap({ namespace: ns, name: "w" });
      await waitFor("three events", async () => events.length >= 3);
      expect(events).toEqual(["ADDED w 1", "MODIFIED w 2", "DELETED w 2"]);
    } finally {
      request.abort();
    }
  });

  it("watches pods, the scheduler's status write included", async () => {
    const ns = await namespace("watch-pods");
    const events: string[] = [];
    const request = await new k8s.Watch(t.kc).watch(`/api/v1/namespaces/${ns}/pods`, {}, (type, object: k8s.V1Pod) => events.push(`${type} ${object.status?.conditions?.[0]?.reason ?? "-"}`), () => {});
    try {
      await t.core.createNamespacedPod({ namespace: ns, body: pod("w") });
      await waitFor("the scheduler's write", async () => events.length >= 2);
      await t.core.deleteNamespacedPod({ namespace: ns, name: "w" });
      await waitFor("the delete", async () => events.length >= 3);
      expect(events).toEqual(["ADDED -", "MODIFIED Unschedulable", "DELETED Unschedulable"]);
    } finally {
      request.abort();
    }
  });

  it("reports objects leaving a label selector as DELETED", async () => {
    const ns = await namespace("watch-selector");
    const events: string[] = [];
    const request = await new k8s.Watch(t.kc).watch(`/api/v1/namespaces/${ns}/configmaps`, { labelSelector: "berth.dev/serving=true" }, (type, object: k8s.V1ConfigMap) => events.push(`${type} ${object.metadata?.name}`), () => {});
    try {
      await t.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "other" } } });
      await t.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "s", labels: { "berth.dev/serving": "true" } } } });
      await t.core.patchNamespacedConfigMap({ namespace: ns, name: "s", body: { metadata: { labels: { "berth.dev/serving": "false" } } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
      await waitFor("two events", async () => events.length >= 2);
      expect(events).toEqual(["ADDED s", "DELETED s"]);
    } finally {
      request.abort();
    }
  });

  it("answers a too-old resourceVersion with a 410 Expired ERROR event and ends the stream", async () => {
    const ns = await namespace("watch-expired");
    const start = (await t.core.listNamespacedConfigMap({ namespace: ns })).metadata!.resourceVersion!;
    // More changes than the history keeps (200 in this cluster).
    for (let i = 0; i < 210; i++) await t.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `c${i}` } } });
    const seen: { type: string; code?: number; reason?: string }[] = [];
    let ended: unknown = "not yet";
    await new k8s.Watch(t.kc).watch(
      `/api/v1/namespaces/${ns}/configmaps`,
      { resourceVersion: start },
      (type, object: { code?: number; reason?: string }) => seen.push({ type, code: object.code, reason: object.reason }),
      (error) => (ended = error),
    );
    await waitFor("the stream to end", async () => ended !== "not yet");
    expect(seen).toEqual([{ type: "ERROR", code: 410, reason: "Expired" }]);
    // An informer relists and watches from the list's resourceVersion: that works.
    const fresh = await t.core.listNamespacedConfigMap({ namespace: ns });
    expect(fresh.items).toHaveLength(210);
    // Pages of a list, as kubectl and informers request them.
    const first = await t.core.listNamespacedConfigMap({ namespace: ns, limit: 200 });
    expect([first.items.length, first.metadata?.remainingItemCount]).toEqual([200, 10]);
    const rest = await t.core.listNamespacedConfigMap({ namespace: ns, limit: 200, _continue: first.metadata!._continue });
    expect(rest.items).toHaveLength(10);
    expect(rest.metadata?._continue).toBeUndefined();
  });

  it("keeps an informer in sync (list, then watch)", async () => {
    const ns = await namespace("informer");
    const informer = k8s.makeInformer(t.kc, `/api/v1/namespaces/${ns}/pods`, () => t.core.listNamespacedPod({ namespace: ns }));
    await informer.start();
    try {
      await t.core.createNamespacedPod({ namespace: ns, body: pod("i1") });
      await waitFor("the informer to see i1", async () => informer.list(ns).some((p) => p.metadata?.name === "i1"));
    } finally {
      await informer.stop();
    }
  });
});

describe("delete", () => {
  it("honours a UID precondition (409 on mismatch)", async () => {
    const ns = await namespace("preconditions");
    const created = await t.core.createNamespacedPod({ namespace: ns, body: pod("p") });
    const wrong = await apiError(t.core.deleteNamespacedPod({ namespace: ns, name: "p", body: { preconditions: { uid: "00000000-0000-0000-0000-000000000000" } } }));
    expect(wrong.code).toBe(409);
    expect(statusOf(wrong).message).toBe(`Operation cannot be fulfilled on pods "p": Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: ${created.metadata?.uid}`);
    await t.core.readNamespacedPod({ namespace: ns, name: "p" });
    await t.core.deleteNamespacedPod({ namespace: ns, name: "p", body: { preconditions: { uid: created.metadata?.uid } } });
    expect((await apiError(t.core.readNamespacedPod({ namespace: ns, name: "p" }))).code).toBe(404);
  });

  it("terminates a namespace with everything in it", async () => {
    const ns = await namespace("doomed");
    await t.core.createNamespacedPod({ namespace: ns, body: pod("p") });
    await t.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "cm" } } });
    const deleting = await t.core.deleteNamespace({ name: ns });
    expect((deleting as k8s.V1Namespace).status?.phase).toBe("Terminating");
    await waitFor("the namespace to go", async () => (await apiError(t.core.readNamespace({ name: ns }))).code === 404);
    expect((await t.core.listPodForAllNamespaces({ fieldSelector: `metadata.namespace=${ns}` })).items).toEqual([]);
  });
});

describe("kubectl", () => {
  it("lists the pods with `get pods -A -o json` and prints them as a table", async () => {
    const ns = await namespace("kubectl");
    await t.core.createNamespacedPod({ namespace: ns, body: pod("seen-by-kubectl") });
    const list = JSON.parse(await kubectl(t, "get", "pods", "-A", "-o", "json")) as { kind: string; items: k8s.V1Pod[] };
    expect(list.kind).toBe("List");
    expect(list.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)).toContain(`${ns}/seen-by-kubectl`);
    const table = await kubectl(t, "get", "pods", "-n", ns);
    expect(table).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
    expect(table).toMatch(/seen-by-kubectl\s+0\/1\s+Pending\s+0\s+\d+s/);
  });
});

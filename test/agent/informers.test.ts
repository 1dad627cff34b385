// The informers against a scripted loopback API server: a failing first list stops client-node's
// ListWatch, and it is restarted with backoff until it lists; a watch cut mid-stream resumes
// from the last resourceVersion without a relist; a watch answered 410 Gone relists, and what
// vanished meanwhile is deleted from the cache; an in-stream error is restarted with backoff,
// resuming where it was. Objects enter the cache without metadata.managedFields, from lists and
// watch events alike. Lists are read in pages (limit + continue) and the watch starts from the
// first page's resourceVersion.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import * as k8s from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { CACHED_KINDS } from "../../src/agent/cluster-cache.ts";
import { createInformers, type Informers } from "../../src/agent/informers.ts";
import { createKube } from "../../src/agent/kube.ts";

const pod = (name: string, rv: string) => ({
  metadata: { name, namespace: "berth-x", uid: `uid-${name}`, resourceVersion: rv, labels: { "app.kubernetes.io/managed-by": "berth-agent", "berth.dev/deployment-id": "d1" },
    managedFields: [{ manager: "berth-agent", operation: "Apply", apiVersion: "v1", fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:labels": {} } } }],
  },
});

async function eventually<T>(what: string, fn: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("informers", () => {
  let server: Server | undefined;
  let informers: Informers | undefined;
  const open = new Set<ServerResponse>();

  afterEach(async () => {
    await informers?.stop();
    for (const res of open) res.end();
    await new Promise((resolve) => server?.close(resolve));
  });

  it("restarts after failed lists, resumes a cut watch, relists after 410 Gone", async () => {
    let podLists = 0;
    const podWatches: string[] = [];
    const labelSelectors = new Set<string>();
    server = createServer((req, res) => {
      const url = new URL(req.url!, "http://x");
      labelSelectors.add(url.searchParams.get("labelSelector") ?? "");
      const isPods = url.pathname === "/api/v1/pods";
      const json = (status: number, body: object) => {
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (url.searchParams.get("watch") !== "true") {
        if (!isPods) return json(200, { metadata: { resourceVersion: "10" }, items: [] });
        podLists++;
        if (podLists <= 2) return json(500, { kind: "Status", apiVersion: "v1", status: "Failure", message: "etcd hiccup", reason: "InternalError", code: 500 });
        // The relist (4th) no longer has p1: it was deleted while the watch was away.
        return json(200, { metadata: { resourceVersion: podLists === 3 ? "10" : "20" }, items: podLists === 3 ? [pod("p1", "10")] : [pod("p2", "11")] });
      }
      if (isPods) podWatches.push(url.searchParams.get("resourceVersion") ?? "");
      if (isPods && podWatches.length === 2) return json(410, { kind: "Status", apiVersion: "v1", status: "Failure", reason: "Expired", code: 410 });
      res.writeHead(200, { "Content-Type": "application/json" });
      res.flushHeaders();
      open.add(res);
      if (isPods && podWatches.length === 1) {
        res.write(JSON.stringify({ type: "ADDED", object: pod("p2", "11") }) + "\n");
        setTimeout(() => res.socket?.destroy(), 50);
      }
      if (isPods && podWatches.length === 3) {
        res.end(JSON.stringify({ type: "ERROR", object: { kind: "Status", status: "Failure", message: "storage hiccup", code: 500 } }) + "\n");
      }
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "fake", server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: "u" }],
      contexts: [{ name: "fake", cluster: "fake", user: "u" }],
      currentContext: "fake",
    });
    const warnings: Array<{ kind?: string; retryInMs?: number; error?: string }> = [];
    const changes: string[] = [];
    const withManagedFields: string[] = [];
    informers = createInformers({
      kube: createKube(kc),
      watchTimeoutSeconds: 300,
      backoffBaseMs: 20,
      backoffCapMs: 1_000,
      logger: { warn: (_msg, data) => void warnings.push(data as { kind: string; retryInMs: number }) },
      onChange: (kind, object) => {
        changes.push(`${kind}/${object.metadata!.name}@${object.metadata!.resourceVersion}`);
        if (object.metadata?.managedFields !== undefined) withManagedFields.push(object.metadata.name!);
      },
      onSynced: () => {},
    });
    informers.start();

    await eventually("every kind synced", () => informers!.isSynced(CACHED_KINDS));
    // Two failed lists, each followed by a restart, the second one after twice the wait.
    expect(warnings.slice(0, 2)).toEqual([
      expect.objectContaining({ kind: "pods", retryInMs: 20 }),
      expect.objectContaining({ kind: "pods", retryInMs: 40 }),
    ]);
    await eventually("the watch after an in-stream error", () => podWatches.length >= 4);
    await eventually("p1 deleted from the cache", () => informers!.cache.get("pods", "berth-x", "p1") === undefined);
    // Watch 1 from the list's version; watch 2 resumes from the last event's (no relist after a
    // cut stream); it gets 410, so the pods are listed again and watch 3 starts from that list;
    // its in-stream 500 stops the informer, which is restarted (backoff) from the same version.
    expect(podWatches).toEqual(["10", "11", "20", "20"]);
    expect(warnings.at(-1)).toEqual(expect.objectContaining({ kind: "pods", error: "watch /api/v1/pods: storage hiccup" }));
    expect(podLists).toBe(4);
    expect(informers.cache.ofDeployment("pods", "d1").map((p) => p.metadata!.name)).toEqual(["p2"]);
    expect(changes).toEqual(["pods/p1@10", "pods/p2@11", "pods/p1@10"]);
    // p1 came from a list, p2 from a watch event and then a relist: none kept its managedFields.
    expect(withManagedFields).toEqual([]);
    expect(informers.cache.get("pods", "berth-x", "p2")!.metadata).not.toHaveProperty("managedFields");
    expect([...labelSelectors]).toEqual(["app.kubernetes.io/managed-by=berth-agent"]);
  }, 30_000);

  it("lists in pages and watches from the first page's resourceVersion", async () => {
    const pages: Array<{ limit: string | null; continue: string | null }> = [];
    let podWatchFrom: string | undefined;
    server = createServer((req, res) => {
      const url = new URL(req.url!, "http://x");
      const json = (body: object) => {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (url.pathname !== "/api/v1/pods") {
        if (url.searchParams.get("watch") === "true") return void (res.writeHead(200, { "Content-Type": "application/json" }), res.flushHeaders(), open.add(res));
        return json({ metadata: { resourceVersion: "10" }, items: [] });
      }
      if (url.searchParams.get("watch") === "true") {
        podWatchFrom = url.searchParams.get("resourceVersion") ?? "";
        res.writeHead(200, { "Content-Type": "application/json" });
        res.flushHeaders();
        open.add(res);
        return;
      }
      const token = url.searchParams.get("continue");
      pages.push({ limit: url.searchParams.get("limit"), continue: token });
      // Fewer than the limit per page, as a server may answer; each later page one version newer.
      const index = token === null ? 0 : Number(token);
      json({ metadata: { resourceVersion: String(30 + index), ...(index < 2 && { continue: String(index + 1) }) }, items: [pod(`p${index}`, String(30 + index))] });
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "fake", server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: "u" }],
      contexts: [{ name: "fake", cluster: "fake", user: "u" }],
      currentContext: "fake",
    });
    informers = createInformers({
      kube: createKube(kc),
      watchTimeoutSeconds: 300,
      backoffBaseMs: 20,
      backoffCapMs: 1_000,
      logger: { warn: () => {} },
      onChange: () => {},
      onSynced: () => {},
    });
    informers.start();
    await eventually("every kind synced", () => informers!.isSynced(CACHED_KINDS));
    await eventually("the pod watch", () => podWatchFrom);
    expect(pages).toEqual([
      { limit: "500", continue: null },
      { limit: "500", continue: "1" },
      { limit: "500", continue: "2" },
    ]);
    expect(podWatchFrom).toBe("30");
    expect(informers.cache.ofDeployment("pods", "d1").map((p) => p.metadata!.name).sort()).toEqual(["p0", "p1", "p2"]);
    expect(informers.cache.get("pods", "berth-x", "p2")!.metadata).not.toHaveProperty("managedFields");
  }, 30_000);
});

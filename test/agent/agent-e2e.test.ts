// The agent end to end: a real `berth serve`, a cluster, the agent in-process. Create → Ready
// with a live endpoint; scale up keeps the survivors' UIDs; delete removes every object and the
// record. Twice: on the simulated cluster and on a real control plane (kube-apiserver, the
// controllers, kube-scheduler, kube-proxy) whose pods `berth node` runs.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NetworkingV1Api } from "@kubernetes/client-node";
import type { Agent } from "../../src/agent/agent.ts";
import { type AgentApi, registerAgent } from "../../src/agent/api-client.ts";
import type { Kube } from "../../src/agent/kube.ts";
import { BERTH_BIN, type BerthServer } from "../support/berth-process.ts";
import { CONTROL_PLANE_SETUP_MS } from "../real-cluster/support.ts";
import { adminCaller, type AgentWorld, answerOf, type Backend, chat, eventually, startAgentWorld } from "./e2e-support.ts";

const NS = "berth-agents";

/** Where each backend's Services get their ClusterIPs. */
const SERVICE_ADDRESS: Record<Backend, RegExp> = { sim: /^http:\/\/127\.\d+\.\d+\.\d+:8000$/, real: /^http:\/\/10\.96\.\d+\.\d+:8000$/ };

/**
 * The real control plane passes every scenario here when run alone and in two full CI runs, but
 * under CI's load it once missed the 40 s Ready bound and saw one instance unready mid-rollout
 * (docs/decisions/0073): it rejoins this list once the scenarios hold there under load.
 */
const BACKENDS: Backend[] = ["sim", "real"];

describe.each<Backend>(BACKENDS)("berth agent against the %s cluster", (backend) => {
  let world: AgentWorld;
  let server: BerthServer;
  let kube: Kube;
  let agent: Agent;
  let offline = false;
  const call = adminCaller(() => server);

  beforeAll(async () => {
    world = await startAgentWorld({ project: "agents", backend });
    ({ server, kube } = world);
    const real = world.api();
    // The same client, with a switch that makes every call fail as if the API were unreachable.
    const unreachable = async () => {
      throw new TypeError("fetch failed");
    };
    const api: AgentApi = {
      heartbeat: (...args) => (offline ? unreachable() : real.heartbeat(...args)),
      desired: (...args) => (offline ? unreachable() : real.desired(...args)),
      putStatus: (...args) => (offline ? unreachable() : real.putStatus(...args)),
      confirmDeletion: (...args) => (offline ? unreachable() : real.confirmDeletion(...args)),
      createOperation: (...args) => (offline ? unreachable() : real.createOperation(...args)),
      listOperations: (...args) => (offline ? unreachable() : real.listOperations(...args)),
      patchOperation: (...args) => (offline ? unreachable() : real.patchOperation(...args)),
      putMetrics: (...args) => (offline ? unreachable() : real.putMetrics(...args)),
      patchReplicas: (...args) => (offline ? unreachable() : real.patchReplicas(...args)),
      postEvent: (...args) => (offline ? unreachable() : real.postEvent(...args)),
    };
    agent = world.startAgent({ kube, api, config: { resyncMs: 500 } });
  }, CONTROL_PLANE_SETUP_MS);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  let id: string;
  let firstUids: string[];

  it("reports inventory in its heartbeat", async () => {
    const list = await eventually("a connected cluster", async () => {
      const res = await call("GET", "/v1/clusters");
      return res.body.items[0]?.inventory ? res.body.items[0] : undefined;
    });
    expect(list.status.phase).toBe("Connected");
    expect(list.inventory.nodes).toEqual([
      { name: "gpu-a", gpuType: "nvidia-h100-80gb", gpuCapacity: 8, gpuAllocatable: 8, gpuFree: 8 },
    ]);
  });

  it("brings an aggregated deployment with 2 replicas to Ready, serving chat completions", async () => {
    id = await world.create("chat", {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "main", replicas: 2, resources: { gpus: 1 } }],
    });

    const ready = await eventually("Ready with 2 ready", async () => {
      const res = await call("GET", `/v1/deployments/${id}`);
      return res.body.status?.phase === "Ready" ? res.body : undefined;
    });
    expect(ready.status.roles).toEqual([{ name: "main", kind: "server", desired: 2, ready: 2, updated: 2, draining: 0 }]);
    expect(ready.status.observedGeneration).toBe(ready.generation);
    expect(ready.status.endpoint).toMatch(SERVICE_ADDRESS[backend]);
    expect(ready.status.conditions.find((c: { type: string }) => c.type === "Ready")).toMatchObject({ status: "True" });

    // A real kube-proxy programs the Service a moment after its endpoints turn ready (its sync
    // period), so the first connection may be refused for that moment.
    const answer = await eventually("a chat answer through the endpoint", async () => {
      const res = await chat(ready.status.endpoint).catch(() => undefined);
      return res?.status === 200 ? res : undefined;
    }, 10_000);
    expect(answer.status).toBe(200);
    expect(answerOf(answer.text).length).toBeGreaterThan(0);

    const pods = await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id}` });
    expect(pods.items.map((p) => p.metadata!.name).sort()).toEqual(["chat-main-r0-m0", "chat-main-r1-m0"]);
    firstUids = pods.items.map((p) => p.metadata!.uid!).sort();
    for (const pod of pods.items) expect(pod.spec!.containers[0]!.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
  }, 40_000);

  it("isolates the project namespace: Pod Security labels and NetworkPolicies, read back through the API", async () => {
    const namespace = await kube.core.readNamespace({ name: NS });
    expect(namespace.metadata!.labels).toMatchObject({
      "pod-security.kubernetes.io/enforce": "baseline",
      "pod-security.kubernetes.io/warn": "restricted",
      "pod-security.kubernetes.io/audit": "restricted",
    });
    const policies = await kube.kc.makeApiClient(NetworkingV1Api).listNamespacedNetworkPolicy({ namespace: NS });
    expect(policies.items.map((p) => p.metadata!.name).sort()).toEqual(["berth-allow-dns", "berth-default-deny", "chat-engines"]);
    const engines = policies.items.find((p) => p.metadata!.name === "chat-engines")!;
    expect(engines.spec!.podSelector!.matchLabels).toEqual({ "berth.dev/deployment-id": id });
    // The ingress peers arrived under `from` (client-node reads them back as `_from`): the first rule admits the deployment's own pods.
    expect(engines.spec!.ingress![0]!._from).toEqual([{ podSelector: { matchLabels: { "berth.dev/deployment-id": id } } }]);
    expect(engines.spec!.egress!.some((rule) => rule.to?.some((peer) => peer.ipBlock?.except?.includes("169.254.0.0/16")))).toBe(true);
  }, 20_000);

  it("scales to 3 replicas and keeps the first two pods", async () => {
    const current = await call("GET", `/v1/deployments/${id}`);
    const patched = await call(
      "PATCH",
      `/v1/deployments/${id}`,
      // Merge patch replaces arrays: send the stored roles with the new count.
      { spec: { roles: current.body.spec.roles.map((role: object) => ({ ...role, replicas: 3 })) } },
      { "Content-Type": "application/merge-patch+json", "If-Match": current.etag! },
    );
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);

    const ready = await eventually("3 ready", async () => {
      const res = await call("GET", `/v1/deployments/${id}`);
      const role = res.body.status?.roles?.[0];
      return res.body.status?.phase === "Ready" && role?.ready === 3 && res.body.status.observedGeneration === res.body.generation
        ? res.body
        : undefined;
    });
    expect(ready.status.roles[0]).toMatchObject({ desired: 3, ready: 3, updated: 3 });
    const pods = await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id}` });
    const byName = new Map(pods.items.map((p) => [p.metadata!.name!, p.metadata!.uid!]));
    expect([...byName.keys()].sort()).toEqual(["chat-main-r0-m0", "chat-main-r1-m0", "chat-main-r2-m0"]);
    expect([byName.get("chat-main-r0-m0"), byName.get("chat-main-r1-m0")].sort()).toEqual(firstUids);
  }, 40_000);

  it("rolls a spec change surge first (r3), never below 3 Ready instances, one retirement at a time", async () => {
    const selector = `berth.dev/deployment-id=${id}`;
    const current = await call("GET", `/v1/deployments/${id}`);
    const before = new Set((await kube.core.listNamespacedPod({ namespace: NS, labelSelector: selector })).items.map((p) => p.metadata!.uid));
    const patched = await call(
      "PATCH",
      `/v1/deployments/${id}`,
      { spec: { roles: current.body.spec.roles.map((role: object) => ({ ...role, env: [{ name: "ROLL_MARK", value: "1" }] })) } },
      { "Content-Type": "application/merge-patch+json", "If-Match": current.etag! },
    );
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);

    let worstUnavailable = 0;
    const replicasSeen = new Set<string>();
    let last: unknown;
    const done = await eventually(
      () => `every instance replaced and Ready; last seen ${JSON.stringify(last)}`,
      async () => {
        const pods = (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: selector })).items;
        const ready = pods.filter(
          (p) => !p.metadata!.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        );
        worstUnavailable = Math.max(worstUnavailable, 3 - ready.length);
        for (const p of pods) replicasSeen.add(p.metadata!.labels!["berth.dev/replica"]!);
        const res = await call("GET", `/v1/deployments/${id}`);
        const fresh = ready.filter((p) => !before.has(p.metadata!.uid));
        const role = res.body.status?.roles?.[0];
        last = { pods: pods.map((p) => ({ name: p.metadata!.name, ready: ready.includes(p), deleting: !!p.metadata!.deletionTimestamp, ip: p.status?.podIP, conditions: p.status?.conditions, containers: p.status?.containerStatuses })), status: res.body.status?.conditions?.at(-1), events: (await kube.core.listNamespacedEvent({ namespace: NS })).items.slice(-8).map((e) => `${e.involvedObject.name} ${e.reason} ${e.message} x${e.count}`) };
        return fresh.length === 3 && res.body.status?.phase === "Ready" && role?.updated === 3 && role.draining === 0 ? res.body : undefined;
      },
      120_000,
    );
    // The default rollout (surge 1, unavailable 0): r3 at the new revision serves before an old instance leaves.
    expect(worstUnavailable).toBe(0);
    expect([...replicasSeen].sort()).toEqual(["0", "1", "2", "3"]);
    expect(done.status.observedGeneration).toBe(done.generation);
    expect(done.status.roles[0]).toMatchObject({ desired: 3, ready: 3, updated: 3, draining: 0 });
  }, 150_000);

  it("says why a deployment cannot start: InsufficientGPU from the scheduler", async () => {
    const created = await call("POST", "/v1/deployments", {
      name: "big",
      projectId: (await call("GET", `/v1/deployments/${id}`)).body.projectId,
      spec: {
        model: { name: "Qwen/Qwen3-8B" },
        engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
        roles: [{ name: "main", replicas: 1, resources: { gpus: 8, gpuType: "nvidia-h100-80gb" } }],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const stuck = await eventually("Scheduled False", async () => {
      const res = await call("GET", `/v1/deployments/${created.body.id}`);
      const scheduled = res.body.status?.conditions?.find((c: { type: string }) => c.type === "Scheduled");
      return scheduled?.status === "False" ? res.body : undefined;
    });
    expect(stuck.status.phase).toBe("Degraded");
    expect(stuck.status.roles).toEqual([{ name: "main", kind: "server", desired: 1, ready: 0, updated: 1, draining: 0 }]);
    const scheduled = stuck.status.conditions.find((c: { type: string }) => c.type === "Scheduled");
    expect(scheduled).toMatchObject({ reason: "InsufficientGPU" });
    // Needed, free (from the heartbeat's inventory) and the scheduler's own words.
    expect(scheduled.message).toMatch(
      /^big-main-r0-m0 needs 8 GPUs \(nvidia-h100-80gb\); \d free on the best node, \d free on 1 node: 0\/1 nodes are available: .*Insufficient nvidia\.com\/gpu/,
    );
    expect(stuck.status.conditions.find((c: { type: string }) => c.type === "Ready")).toMatchObject({ status: "False", reason: "InsufficientGPU" });

    await call("DELETE", `/v1/deployments/${created.body.id}`);
    await eventually("big removed", async () => (await call("GET", `/v1/deployments/${created.body.id}`)).status === 404);
  }, 40_000);

  it("keeps every pod as it is while the API is unreachable", async () => {
    const selector = `berth.dev/deployment-id=${id}`;
    const before = (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: selector })).items.map((p) => p.metadata!.uid).sort();
    offline = true;
    try {
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // several resyncs, heartbeats and failed polls
      const during = await kube.core.listNamespacedPod({ namespace: NS, labelSelector: selector });
      expect(during.items.map((p) => p.metadata!.uid).sort()).toEqual(before);
      expect(during.items.every((p) => !p.metadata!.deletionTimestamp)).toBe(true);
    } finally {
      offline = false;
    }
  }, 20_000);

  it("deletes every object, then the record", async () => {
    const deleted = await call("DELETE", `/v1/deployments/${id}`);
    expect([200, 202, 204]).toContain(deleted.status);
    await eventually("the record gone", async () => (await call("GET", `/v1/deployments/${id}`)).status === 404, 30_000);
    const selector = `berth.dev/deployment-id=${id}`;
    expect((await kube.core.listNamespacedPod({ namespace: NS, labelSelector: selector })).items).toEqual([]);
    expect((await kube.core.listNamespacedService({ namespace: NS, labelSelector: selector })).items).toEqual([]);
    // The deployment's policy goes with it; the namespace's own stay for the project's next deployment.
    const policies = await kube.kc.makeApiClient(NetworkingV1Api).listNamespacedNetworkPolicy({ namespace: NS });
    expect(policies.items.map((p) => p.metadata!.name).sort()).toEqual(["berth-allow-dns", "berth-default-deny"]);
  }, 40_000);

  it("runs as `berth agent` in its own process and stops on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-agent-cli-"));
    try {
      const kubeconfig = world.kubeconfigPath;
      const created = await call("POST", "/v1/clusters", { name: "cli" });
      const { token } = await registerAgent(server.url, created.body.joinToken);
      const child = spawn(process.execPath, [BERTH_BIN, "agent", "--api", server.url, "--token", token, "--kubeconfig", kubeconfig], {
        stdio: ["ignore", "ignore", "pipe"],
      });
      let err = "";
      child.stderr!.on("data", (chunk) => (err += chunk));
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      try {
        const connected = await eventually(() => `the cli cluster connected; agent stderr:\n${err}`, async () => {
          const res = await call("GET", `/v1/clusters/${created.body.cluster.id}`);
          return res.body.status.phase === "Connected" ? res.body : undefined;
        });
        expect(connected.inventory.nodes.map((n: { name: string }) => n.name)).toEqual(["gpu-a"]);
      } finally {
        child.kill("SIGTERM");
      }
      expect(await exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);

  it("`berth agent` without --api and --token prints usage and exits 2", async () => {
    const child = spawn(process.execPath, [BERTH_BIN, "agent"], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr!.on("data", (chunk) => (err += chunk));
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    expect(code).toBe(2);
    expect(err).toContain("usage: berth agent");
  }, 20_000);
});

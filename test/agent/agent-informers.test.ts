// The agent's informers end to end, against a real `berth serve` and the simulated cluster:
// with the safety re-check and the resync an hour away, only watch events can move a
// deployment, yet it goes Ready and gets a pod deleted behind its back back at once; with a
// change history of 10 and watches that end every 1–2 s under a flood of unrelated writes,
// every reconnect is answered 410 Gone, the informers relist, and the agent keeps converging.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { berthPrograms, type SimCluster, startSimCluster } from "../../k8s/sim/index.ts";
import { type Agent, type AgentConfig, createAgent } from "../../src/agent/agent.ts";
import { createApiClient, registerAgent } from "../../src/agent/api-client.ts";
import { createKube, type Kube } from "../../src/agent/kube.ts";
import { systemClock } from "../../src/domain/clock.ts";
import { type BerthServer, startBerthServer } from "../support/berth-process.ts";

const NS = "berth-informers";
const HOUR = 3_600_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventually<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await sleep(100);
  }
}

describe("berth agent with informers", () => {
  let server: BerthServer;
  let cluster: SimCluster;
  let kube: Kube;
  let token: string;
  let agent: Agent | undefined;
  const warnings: Array<{ msg: string; data?: object }> = [];
  /** The pod informer's cluster-wide lists (not watches) since the counter was last reset: its initial list and relists. */
  let podLists = 0;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${server.adminToken}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, etag: res.headers.get("etag") };
  };

  const startAgent = (config: Partial<AgentConfig>) => {
    agent = createAgent({
      kube,
      api: createApiClient({ baseUrl: server.url, token, retry: { attempts: 2, baseMs: 50, capMs: 200 } }),
      clock: systemClock,
      // Neither the safety re-check nor the resync can fire during the test: only events move it.
      config: { settleMs: HOUR, resyncMs: HOUR, waitSeconds: 2, heartbeatMs: 1_000, backoffBaseMs: 100, backoffCapMs: 1_000, ...config },
      logger: { info: () => {}, warn: (msg, data) => void warnings.push({ msg, data }) },
    });
    agent.start();
  };

  const readyWith = (id: string, replicas: number) =>
    eventually(
      `Ready with ${replicas} ready`,
      async () => {
        const res = await call("GET", `/v1/deployments/${id}`);
        const s = res.body.status;
        return s?.phase === "Ready" && s.roles[0].ready === replicas && s.observedGeneration === res.body.generation ? res.body : undefined;
      },
      20_000,
    );

  const podsOf = async (id: string) =>
    (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id}` })).items.filter((p) => !p.metadata!.deletionTimestamp);

  /** Deletes a pod behind the agent's back; resolves when a new pod of that name is Ready and the deployment says Ready. */
  async function deleteAndSeeRecreated(id: string, name: string, replicas: number) {
    const before = (await kube.core.readNamespacedPod({ namespace: NS, name })).metadata!.uid;
    await kube.core.deleteNamespacedPod({ namespace: NS, name, gracePeriodSeconds: 0 });
    const started = Date.now();
    await eventually(
      `${name} recreated and Ready`,
      async () => {
        const pod = (await podsOf(id)).find((p) => p.metadata!.name === name);
        return pod && pod.metadata!.uid !== before && pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      },
      20_000,
    );
    await readyWith(id, replicas);
    return Date.now() - started;
  }

  beforeAll(async () => {
    [server, cluster] = await Promise.all([
      startBerthServer(),
      startSimCluster({
        nodes: [{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpus: 8 }],
        programs: berthPrograms({ routerImage: "ghcr.io/berth/berth:0.1.0", simEngineFlags: ["--latency-profile", "turbo"] }),
        timeScale: 0.1,
        watchHistorySize: 10,
        onRequest: ({ method, path, search }) => {
          // The informer's lists carry its label selector; the heartbeat's list of every pod does not.
          if (method === "GET" && path === "/api/v1/pods" && search.includes("labelSelector=") && !/[?&]watch=(true|1)/.test(search)) podLists++;
        },
      }),
    ]);
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions(cluster.kubeConfigOptions);
    kube = createKube(kc);
    const created = await call("POST", "/v1/clusters", { name: "sim" });
    expect(created.status).toBe(201);
    ({ token } = await registerAgent(server.url, created.body.joinToken));
  }, 90_000);

  afterAll(async () => {
    await agent?.stop();
    await cluster?.stop({ now: true });
    await server?.stop();
  }, 30_000);

  let id: string;

  it("goes Ready and recreates a pod deleted behind its back, moved by watch events alone", async () => {
    startAgent({});
    const project = await call("POST", "/v1/projects", { name: "informers" });
    expect(project.status).toBe(201);
    const created = await call("POST", "/v1/deployments", {
      name: "chat",
      projectId: project.body.id,
      spec: {
        model: { name: "Qwen/Qwen3-8B" },
        engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
        roles: [{ name: "main", replicas: 1, resources: { gpus: 1 } }],
      },
    });
    expect(created.status).toBe(201);
    id = created.body.id;
    // The pod turns Ready seconds after the pass that created it; no timer is due for an hour.
    await readyWith(id, 1);
    const [pod] = await podsOf(id);
    expect(pod!.metadata!.name).toBe("chat-main-r0-m0");

    const tookMs = await deleteAndSeeRecreated(id, "chat-main-r0-m0", 1);
    expect(tookMs).toBeLessThan(20_000);
    expect(warnings.filter((w) => w.msg === "writes not observed in time; planning anyway")).toEqual([]);
  }, 60_000);

  it("relists after 410 Gone and keeps converging", async () => {
    await agent!.stop();
    warnings.length = 0;
    // Unrelated writes in another namespace push the 10-change history past every informer's
    // resourceVersion between two reconnects.
    await kube.core.createNamespace({ body: { metadata: { name: "churn" } } });
    let churning = true;
    const churn = (async () => {
      for (let i = 0; churning; i++) {
        await kube.core.createNamespacedConfigMap({ namespace: "churn", body: { metadata: { name: `c${i}` }, data: { i: String(i) } } });
        await sleep(5);
      }
    })();
    try {
      podLists = 0;
      startAgent({ watchTimeoutSeconds: 1 });
      await sleep(5_000);
      // The initial list plus relists: a watch resumed from an expired resourceVersion gets 410.
      expect(podLists).toBeGreaterThanOrEqual(2);
      const listsBefore = podLists;

      const current = await call("GET", `/v1/deployments/${id}`);
      const patched = await call(
        "PATCH",
        `/v1/deployments/${id}`,
        { spec: { roles: current.body.spec.roles.map((role: object) => ({ ...role, replicas: 2 })) } },
        { "Content-Type": "application/merge-patch+json", "If-Match": current.etag! },
      );
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      await readyWith(id, 2);
      expect((await podsOf(id)).map((p) => p.metadata!.name).sort()).toEqual(["chat-main-r0-m0", "chat-main-r1-m0"]);

      await deleteAndSeeRecreated(id, "chat-main-r1-m0", 2);
      // …and it kept relisting while it converged.
      expect(podLists).toBeGreaterThan(listsBefore);
      // Relisting is not an error: no informer had to be restarted.
      expect(warnings.filter((w) => w.msg === "informer stopped; restarting")).toEqual([]);
    } finally {
      churning = false;
      await churn;
    }
  }, 90_000);
});

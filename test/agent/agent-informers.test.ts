// The agent's informers end to end, against a real `berth serve` and the simulated cluster:
// with the safety re-check and the resync an hour away, only watch events can move a
// deployment, yet it goes Ready and gets a pod deleted behind its back back at once; with a
// change history of 10 and watches that end every 1–2 s under a flood of unrelated writes,
// every reconnect is answered 410 Gone, the informers relist, and the agent keeps converging.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent, AgentConfig } from "../../src/agent/agent.ts";
import type { Kube } from "../../src/agent/kube.ts";
import { adminCaller, type AgentWorld, eventually, startAgentWorld } from "./e2e-support.ts";

const NS = "berth-informers";
const HOUR = 3_600_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("berth agent with informers", () => {
  let world: AgentWorld;
  let kube: Kube;
  let agent: Agent | undefined;
  const warnings: Array<{ msg: string; data?: object }> = [];
  /** The pod informer's cluster-wide lists (not watches) since the counter was last reset: its initial list and relists. */
  let podLists = 0;

  const call = adminCaller(() => world.server);

  const startAgent = (config: Partial<AgentConfig>) => {
    agent = world.startAgent({
      kube,
      // Neither the safety re-check nor the resync can fire during the test: only events move it.
      config: { settleMs: HOUR, resyncMs: HOUR, ...config },
      logger: { info: () => {}, warn: (msg, data) => void warnings.push({ msg, data }) },
    });
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
      100,
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
      100,
    );
    await readyWith(id, replicas);
    return Date.now() - started;
  }

  beforeAll(async () => {
    world = await startAgentWorld({
      project: "informers",
      sim: {
        watchHistorySize: 10,
        onRequest: ({ method, path, search }) => {
          // The informer's lists carry its label selector; the heartbeat's list of every pod does not.
          if (method === "GET" && path === "/api/v1/pods" && search.includes("labelSelector=") && !/[?&]watch=(true|1)/.test(search)) podLists++;
        },
      },
    });
    kube = world.kube;
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  let id: string;

  it("goes Ready and recreates a pod deleted behind its back, moved by watch events alone", async () => {
    startAgent({});
    id = await world.create("chat", {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "main", replicas: 1, resources: { gpus: 1 } }],
    });
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
      // …and relisting goes on while the churn lasts (how many fall inside the convergence
      // above depends on timing, so wait for the next one rather than count them).
      await eventually("another relist", async () => podLists > listsBefore, 30_000);
      // Relisting is not an error: no informer had to be restarted.
      expect(warnings.filter((w) => w.msg === "informer stopped; restarting")).toEqual([]);
    } finally {
      churning = false;
      await churn;
    }
  }, 90_000);
});

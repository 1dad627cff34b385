// Rollouts that keep serving (docs/design.md §5.2), end to end: a real `berth serve`, a simulated cluster
// whose pods are engine-simulator and router processes, the agent in-process. A one-replica role behind
// the builtin router takes a spec change under streaming load: the surge r1 starts at the new revision,
// r0 retires through the protocol (reason rollout) once r1 is Ready, r0 comes back at the new revision,
// then r1 retires as surplus, and not one request fails. Without room for the surge the role is
// replaced one at a time and the UpToDate condition says SurgeDoesNotFit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Kube } from "../../src/agent/kube.ts";
import { adminCaller, type AgentWorld, type Backend, E2E_BACKENDS, eventually, MODEL, startAgentWorld, startClients } from "./e2e-support.ts";

const NS = "berth-rollout";

interface OperationView {
  id: string;
  role: string;
  replica: number;
  phase: string;
  steps: Array<{ name: string; startedAt: string; finishedAt?: string }>;
  params: { podUids: string[]; reason?: string };
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

describe.each<Backend>(E2E_BACKENDS)("rollouts on the %s cluster", (backend) => {
  let world: AgentWorld;
  let kube: Kube;
  const call = adminCaller(() => world.server);

  /** Replaces the role's env (a pod-template change: every instance becomes stale). */
  const setEnv = async (id: string, value: string) => {
    const current = await call("GET", `/v1/deployments/${id}`);
    const roles = current.body.spec.roles.map((role: object) => ({ ...role, env: [{ name: "ROLLOUT_MARK", value }] }));
    const patched = await call("PATCH", `/v1/deployments/${id}`, { spec: { roles } }, { "Content-Type": "application/merge-patch+json", "If-Match": current.etag! });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    return patched.body.generation as number;
  };

  const retireOps = async (id: string): Promise<OperationView[]> => {
    const res = await call("GET", `/v1/operations?deploymentId=${id}&kind=retire`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.items;
  };

  const podsOf = async (id: string, replica: number) =>
    (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/role=main,berth.dev/replica=${replica}` })).items;

  /** Polls the deployment until `done` holds, recording every UpToDate reason seen on the way. */
  const watchUntil = async (id: string, what: string, done: (body: any, ops: OperationView[]) => boolean, timeoutMs = 150_000) => {
    const reasons: string[] = [];
    const messages: string[] = [];
    let last: unknown;
    const body = await eventually(
      () => `${what}; UpToDate reasons seen ${reasons.join(" → ")}; last status ${JSON.stringify(last)}`,
      async () => {
        const res = await call("GET", `/v1/deployments/${id}`);
        last = res.body?.status;
        const upToDate = (res.body?.status?.conditions ?? []).find((c: Condition) => c.type === "UpToDate") as Condition | undefined;
        if (upToDate && reasons.at(-1) !== upToDate.reason) {
          reasons.push(upToDate.reason);
          messages.push(upToDate.message);
        }
        return done(res.body, await retireOps(id)) ? res.body : undefined;
      },
      timeoutMs,
    );
    return { body, reasons, messages };
  };

  const rolledOut = (generation: number) => (body: any, ops: OperationView[]) =>
    body.status?.observedGeneration === generation &&
    body.status.phase === "Ready" &&
    body.status.conditions.some((c: Condition) => c.type === "UpToDate" && c.status === "True") &&
    ops.every((o) => o.phase !== "Running" && o.phase !== "Pending") &&
    body.status.roles[0].ready === 1 &&
    body.status.roles[0].draining === 0;

  beforeAll(async () => {
    // 4 GPUs: room for a 1-GPU surge; a 4-GPU role fills the node, so its surge cannot fit.
    // The default latency profile: a request of a few hundred tokens takes about a second.
    world = await startAgentWorld({ backend, gpus: 4, simEngineFlags: null, project: "rollout" });
    kube = world.kube;
    world.startAgent({ retry: { attempts: 3, baseMs: 50, capMs: 200 } });
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  it("one replica behind the builtin router: surge r1, r0 retires (rollout) and returns, r1 retires; zero failed requests", async () => {
    const id = await world.create("one", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin", policy: "least_load" },
      roles: [{ name: "main", replicas: 1, resources: { gpus: 1 } }],
    });
    const ready = await world.readyDeployment(id, { timeoutMs: 90_000 });
    expect(ready.spec.roles[0].rollout).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    const [old] = await podsOf(id, 0);
    const clients = startClients(ready.status.endpoint, 4, 150);
    await eventually("requests completing", async () => clients.results.ok >= 4);

    const generation = await setEnv(id, "2");
    const { reasons, messages } = await watchUntil(id, "the rollout to finish", (body, ops) => rolledOut(generation)(body, ops) && ops.length >= 2);
    const results = await clients.stop();

    const ops = (await retireOps(id)).sort((a, b) => Date.parse(a.steps[0]!.startedAt) - Date.parse(b.steps[0]!.startedAt));
    // r0 first (the rollout's), then the surge r1 (surplus once r0 is back), each through every step.
    expect(ops.map((o) => `r${o.replica} ${o.params.reason} ${o.phase}`)).toEqual(["r0 rollout Succeeded", "r1 scale-down Succeeded"]);
    for (const op of ops) expect(op.steps.map((s) => s.name)).toEqual(["Withdrawing", "Draining", "Deleting", "Settling"]);
    expect(ops[0]!.params.podUids).toEqual([old!.metadata!.uid]);
    // One retirement at a time: r1's began after r0's ended.
    expect(Date.parse(ops[1]!.steps[0]!.startedAt)).toBeGreaterThanOrEqual(Date.parse(ops[0]!.steps.at(-1)!.finishedAt!));
    expect(reasons).toContain("RollingOut");
    expect(reasons).not.toContain("SurgeDoesNotFit");
    expect(reasons.at(-1)).toBe("AllUpdated");
    expect(messages.some((m) => m.includes("0/1 updated"))).toBe(true);

    const [now] = await podsOf(id, 0);
    expect(now!.metadata!.uid).not.toBe(old!.metadata!.uid);
    expect(now!.spec!.containers[0]!.env).toContainEqual({ name: "ROLLOUT_MARK", value: "2" });
    expect(await podsOf(id, 1)).toEqual([]);
    expect(results.failed).toEqual([]);
    expect(results.ok).toBeGreaterThan(8);
    await call("DELETE", `/v1/deployments/${id}`);
    await eventually("the deployment's pods gone", async () => (await podsOf(id, 0)).length === 0, 90_000);
  }, 300_000);

  it("no room for the surge: UpToDate False SurgeDoesNotFit, and the role is replaced one at a time", async () => {
    const id = await world.create("full", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin", policy: "least_load" },
      roles: [{ name: "main", replicas: 1, resources: { gpus: 4 } }],
    });
    await world.readyDeployment(id, { timeoutMs: 90_000 });
    const [old] = await podsOf(id, 0);

    const generation = await setEnv(id, "2");
    const { reasons, messages } = await watchUntil(id, "the one-at-a-time rollout to finish", (body, ops) => rolledOut(generation)(body, ops) && ops.length >= 1);

    const ops = await retireOps(id);
    expect(ops.map((o) => `r${o.replica} ${o.params.reason} ${o.phase}`)).toEqual(["r0 rollout Succeeded"]);
    expect(reasons).toContain("SurgeDoesNotFit");
    expect(messages.find((m) => m.includes("a surge of 1 instance(s) needs 4 GPUs"))).toContain("0 free");
    expect(reasons.at(-1)).toBe("AllUpdated");
    const [now] = await podsOf(id, 0);
    expect(now!.metadata!.uid).not.toBe(old!.metadata!.uid);
    expect(now!.spec!.containers[0]!.env).toContainEqual({ name: "ROLLOUT_MARK", value: "2" });
    expect(await podsOf(id, 1)).toEqual([]);
    await call("DELETE", `/v1/deployments/${id}`);
  }, 300_000);
});

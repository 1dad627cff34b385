// Retirement as a persisted operation (docs/design.md §7.6), end to end: a real `berth serve`, a simulated
// cluster whose pods are engine-simulator and router processes, the agent in-process. Under a
// steady stream of streaming chat completions a replicas decrease retires the highest index
// through Withdrawing → Draining → Deleting → Settling → Succeeded without failing one request
// (aggregated, and vLLM prefill + decode); a drain that outlasts its budget aborts and keeps the
// replica eligible; an agent restarted mid-Draining finishes the same operation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/agent.ts";
import type { Kube } from "../../src/agent/kube.ts";
import { adminCaller, type AgentWorld, type Backend, E2E_BACKENDS, eventually, MODEL, startAgentWorld, startClients } from "./e2e-support.ts";

const NS = "berth-retire";

interface OperationView {
  id: string;
  kind: string;
  role: string;
  replica: number;
  phase: string;
  step: string;
  steps: Array<{ name: string; startedAt: string; finishedAt?: string }>;
  params: { podUids: string[]; drainSeconds: number };
  error?: { reason: string; message: string };
}

describe.each<Backend>(E2E_BACKENDS)("retirement as a persisted operation, on the %s cluster", (backend) => {
  let world: AgentWorld;
  let kube: Kube;
  let agent: Agent;
  const startAgent = () => {
    agent = world.startAgent({ retry: { attempts: 3, baseMs: 50, capMs: 200 } });
  };

  const call = adminCaller(() => world.server);
  const create = (name: string, spec: object) => world.create(name, spec);

  const readyDeployment = (id: string, check: (body: { status: { roles: Array<{ desired: number; ready: number }> } }) => boolean = () => true) =>
    world.readyDeployment(id, { check, timeoutMs: 90_000 });

  const setReplicas = async (id: string, replicas: Record<string, number>) => {
    const current = await call("GET", `/v1/deployments/${id}`);
    const roles = current.body.spec.roles.map((role: { name: string; replicas: number }) => ({ ...role, replicas: replicas[role.name] ?? role.replicas }));
    const patched = await call("PATCH", `/v1/deployments/${id}`, { spec: { roles } }, { "Content-Type": "application/merge-patch+json", "If-Match": current.etag! });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  };

  const retireOps = async (id: string): Promise<OperationView[]> => {
    const res = await call("GET", `/v1/operations?deploymentId=${id}&kind=retire`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.items;
  };

  const operation = async (opId: string): Promise<OperationView> => {
    const res = await call("GET", `/v1/operations/${opId}`);
    expect(res.status).toBe(200);
    return res.body;
  };

  const podsOf = async (id: string, role: string, replica: number) =>
    (await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/role=${role},berth.dev/replica=${replica}` })).items;

  /** GET /admin/endpoints on every Ready router pod of a deployment. */
  const routerViews = async (id: string, name: string) => {
    const secret = await kube.core.readNamespacedSecret({ name: `${name}-router-admin`, namespace: NS });
    const token = Buffer.from(secret.data!.token!, "base64").toString("utf8");
    const pods = await kube.core.listNamespacedPod({ namespace: NS, labelSelector: `berth.dev/deployment-id=${id},berth.dev/component=router` });
    const ready = pods.items.filter((p) => !p.metadata!.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    return Promise.all(
      ready.map(async (pod) => {
        const res = await fetch(`http://${pod.status!.podIP}:8080/admin/endpoints`, { headers: { Authorization: `Bearer ${token}` } });
        return (await res.json()) as { endpoints: Array<{ id: string; state: string; inFlight: number }> };
      }),
    );
  };

  /** Waits for the one retire operation of `role` r`replica` to reach `phase`, recording every step seen. */
  const awaitRetirement = async (id: string, role: string, replica: number, phase: string, timeoutMs = 90_000) => {
    const seen: string[] = [];
    const op = await eventually(
      () => `the retirement of ${role} r${replica} ${phase}; steps seen ${seen.join(" → ")}`,
      async () => {
        const found = (await retireOps(id)).find((o) => o.role === role && o.replica === replica && (o.phase === "Running" || o.phase === phase));
        if (found && seen.at(-1) !== found.step) seen.push(found.step);
        return found?.phase === phase ? found : undefined;
      },
      timeoutMs,
    );
    return { op, seen };
  };

  beforeAll(async () => {
    // The default latency profile: a request of a few hundred tokens takes about a second.
    world = await startAgentWorld({ backend, gpus: 16, simEngineFlags: null, project: "retire" });
    kube = world.kube;
    startAgent();
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  it("aggregated, 3 → 2 under load: Withdrawing → Draining → Deleting → Settling → Succeeded, r2 gone, not one request failed", async () => {
    const id = await create("agg", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin", policy: "least_load" },
      roles: [{ name: "main", replicas: 3, resources: { gpus: 1 } }],
    });
    const ready = await readyDeployment(id);
    const r2 = await podsOf(id, "main", 2);
    expect(r2).toHaveLength(1);
    const clients = startClients(ready.status.endpoint, 4, 150);
    await eventually("requests completing", async () => clients.results.ok >= 4);

    await setReplicas(id, { main: 2 });
    const retiring = await eventually("the Retiring condition", async () => {
      const res = await call("GET", `/v1/deployments/${id}`);
      return res.body.status?.conditions?.find((c: { type: string; status: string }) => c.type === "Retiring" && c.status === "True");
    });
    const { op } = await awaitRetirement(id, "main", 2, "Succeeded");
    expect(retiring.message).toContain(op.id);
    const results = await clients.stop();

    const full = await operation(op.id);
    expect(full.steps.map((s) => s.name)).toEqual(["Withdrawing", "Draining", "Deleting", "Settling"]);
    expect(full.steps.every((s) => s.finishedAt !== undefined)).toBe(true);
    expect(full.params.podUids).toEqual([r2[0]!.metadata!.uid]);
    expect(await podsOf(id, "main", 2)).toEqual([]);
    expect((await retireOps(id)).map((o) => o.id)).toEqual([op.id]);
    expect(results.failed).toEqual([]);
    expect(results.ok).toBeGreaterThan(8);
    // Each request lasted long enough (~1 s) for the retirement to overlap many of them.
    expect(results.durations.sort((a, b) => a - b)[Math.floor(results.durations.length / 2)]).toBeGreaterThan(500);
    const after = await readyDeployment(id, (d) => d.status.roles[0]!.desired === 2);
    expect(after.status.roles).toEqual([{ name: "main", kind: "server", desired: 2, ready: 2, updated: 2, draining: 0 }]);
    expect(after.status.conditions.find((c: { type: string }) => c.type === "Retiring")).toBeUndefined();
    const views = await routerViews(id, "agg");
    expect(views.map((v) => v.endpoints.map((e) => `${e.id} ${e.state}`))).toEqual([["agg-main-r0-m0 eligible", "agg-main-r1-m0 eligible"]]);
    await call("DELETE", `/v1/deployments/${id}`);
  }, 180_000);

  it("vLLM prefill/decode 2+2 → 1+1 under load: prefill r1 then decode r1 retire one at a time, not one request failed", async () => {
    const id = await create("pd", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin", policy: "least_load" },
      roles: [
        { name: "prefill", kind: "prefill", replicas: 2, resources: { gpus: 1 } },
        { name: "decode", kind: "decode", replicas: 2, resources: { gpus: 1 } },
      ],
    });
    const ready = await readyDeployment(id);
    const clients = startClients(ready.status.endpoint, 4, 150);
    await eventually("requests completing", async () => clients.results.ok >= 4);

    await setReplicas(id, { prefill: 1, decode: 1 });
    const prefill = await awaitRetirement(id, "prefill", 1, "Succeeded");
    const decode = await awaitRetirement(id, "decode", 1, "Succeeded");
    const results = await clients.stop();

    for (const { op } of [prefill, decode]) {
      expect((await operation(op.id)).steps.map((s) => s.name)).toEqual(["Withdrawing", "Draining", "Deleting", "Settling"]);
    }
    // One retirement at a time per deployment: the decode's began after the prefill's ended.
    const prefillEnd = Date.parse((await operation(prefill.op.id)).steps.at(-1)!.finishedAt!);
    const decodeStart = Date.parse((await operation(decode.op.id)).steps[0]!.startedAt);
    expect(decodeStart).toBeGreaterThanOrEqual(prefillEnd);
    expect(await podsOf(id, "prefill", 1)).toEqual([]);
    expect(await podsOf(id, "decode", 1)).toEqual([]);
    expect(results.failed).toEqual([]);
    expect(results.ok).toBeGreaterThan(8);
    await readyDeployment(id, (d) => d.status.roles.every((r) => r.desired === 1 && r.ready === 1));
    await call("DELETE", `/v1/deployments/${id}`);
  }, 240_000);

  it("a drain that outlasts drainSeconds aborts: the pods stay and are eligible again in the router", async () => {
    const id = await create("slow", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin", policy: "least_load" },
      roles: [{ name: "main", replicas: 2, resources: { gpus: 1 } }],
      scaling: { retirement: { drainSeconds: 2 } },
    });
    const ready = await readyDeployment(id);
    const r1 = await podsOf(id, "main", 1);
    // Two long requests: least_load puts one on each replica, so r1 holds one in flight.
    const clients = startClients(ready.status.endpoint, 2, 1500);
    await eventually("a request in flight on r1", async () => (await routerViews(id, "slow"))[0]!.endpoints.find((e) => e.id === "slow-main-r1-m0")!.inFlight > 0);

    await setReplicas(id, { main: 1 });
    const { op } = await awaitRetirement(id, "main", 1, "Aborted");
    expect(op.error).toMatchObject({ reason: "DrainBudgetExceeded" });
    expect(op.steps.map((s) => s.name)).toEqual(["Withdrawing", "Draining"]);
    // Capacity kept: the same pod, eligible again.
    expect((await podsOf(id, "main", 1)).map((p) => p.metadata!.uid)).toEqual(r1.map((p) => p.metadata!.uid));
    await eventually("r1 eligible again on every router pod", async () =>
      (await routerViews(id, "slow")).every((v) => v.endpoints.find((e) => e.id === "slow-main-r1-m0")?.state === "eligible"),
    );
    const condition = await eventually("Retiring False RetirementAborted", async () => {
      const res = await call("GET", `/v1/deployments/${id}`);
      return res.body.status?.conditions?.find((c: { type: string; reason: string }) => c.type === "Retiring" && c.reason === "RetirementAborted");
    });
    expect(condition).toMatchObject({ status: "False" });
    expect(condition.message).toContain(op.id);
    // Raised back: no retry of the retirement is due any more.
    await setReplicas(id, { main: 2 });
    // The request in flight through the withdrawal and the abort finished normally.
    expect((await clients.stop()).failed).toEqual([]);
    await call("DELETE", `/v1/deployments/${id}`);
  }, 180_000);

  it("an agent stopped mid-Draining: a new agent finishes the same operation (no second one), budgets from the record", async () => {
    const id = await create("resume", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin", policy: "least_load" },
      roles: [{ name: "main", replicas: 2, resources: { gpus: 1 } }],
    });
    const ready = await readyDeployment(id);
    // One request per replica, each a few seconds long, started once (no loop): the drain waits for it.
    const long = (tokens: number) =>
      fetch(`${ready.status.endpoint}/v1/chat/completions`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "go on" }], max_tokens: tokens, ignore_eos: true, stream: true }),
      }).then(async (res) => ({ status: res.status, text: await res.text() }));
    const requests = [long(1500), long(1500)];
    await eventually("a request in flight on r1", async () => (await routerViews(id, "resume"))[0]!.endpoints.find((e) => e.id === "resume-main-r1-m0")!.inFlight > 0);

    await setReplicas(id, { main: 1 });
    const draining = await eventually("Draining", async () => (await retireOps(id)).find((o) => o.replica === 1 && o.step === "Draining"));
    await agent.stop();
    startAgent();
    const { op } = await awaitRetirement(id, "main", 1, "Succeeded");
    expect(op.id).toBe(draining.id);
    expect((await retireOps(id)).map((o) => o.id)).toEqual([draining.id]);
    const full = await operation(op.id);
    expect(full.steps.map((s) => s.name)).toEqual(["Withdrawing", "Draining", "Deleting", "Settling"]);
    // The Draining step kept the start the first agent recorded.
    expect(full.steps[1]!.startedAt).toBe(draining.steps[1]!.startedAt);
    for (const r of await Promise.all(requests)) {
      expect(r.status).toBe(200);
      expect(r.text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    }
    expect(await podsOf(id, "main", 1)).toEqual([]);
  }, 180_000);
});

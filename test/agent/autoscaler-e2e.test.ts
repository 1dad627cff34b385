// The autoscaler end to end: a real `berth serve`, a simulated cluster whose pods are real
// engine-simulator and router processes on loopback, the agent in-process. Requests are made to
// last about a second (ignore_eos, a long max_tokens) so running and waiting are visible in the
// engines' gauges. Shadow mode only reports; active mode writes replicas through the API (scale-up
// at once, scale-down after the stabilization window); a role at zero is woken by a request the
// builtin router holds, and that request is served.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCaller, type AgentWorld, type Backend, E2E_BACKENDS, chat as complete, eventually, MODEL, startAgentWorld } from "./e2e-support.ts";

/** Tokens per request: about a second each at the simulator's 0.05 latency profile. */
const LONG_REQUEST_TOKENS = 2500;

interface ScaledEvent {
  type: string;
  data: { role: string; from: number; to: number; mode: string; reason: string; message?: string; actor: { kind: string }; signals: Array<{ name: string; value: number }> };
}

describe.each<Backend>(E2E_BACKENDS)("the autoscaler against the %s cluster", (backend) => {
  let world: AgentWorld;

  const call = adminCaller(() => world.server);

  const chat = (endpoint: string, maxTokens = LONG_REQUEST_TOKENS, timeoutMs = 30_000) =>
    complete(endpoint, { maxTokens, timeoutMs, extra: { ignore_eos: true } });

  /** `clients` concurrent request loops until stopped: a load step. */
  const loadStep = (endpoint: string, clients: number) => {
    let running = true;
    let failures = 0;
    const loops = Array.from({ length: clients }, async () => {
      while (running) {
        const res = await chat(endpoint).catch(() => ({ status: 0, text: "" }));
        if (res.status !== 200) {
          failures++;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    });
    return {
      async stop() {
        running = false;
        await Promise.all(loops);
        return failures;
      },
    };
  };

  const create = (name: string, spec: object) => world.create(name, spec);

  const get = async (id: string) => (await call("GET", `/v1/deployments/${id}`)).body;

  const readyDeployment = (id: string, timeoutMs = 60_000) => world.readyDeployment(id, { timeoutMs });

  const scalingEvents = async (id: string) => (await call("GET", `/v1/deployments/${id}/scaling-events`)).body.items as ScaledEvent[];

  const spec = (scaling: object, replicas = 1) => ({
    model: { name: MODEL },
    engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
    router: { kind: "builtin", policy: "least_load" },
    roles: [{ name: "main", replicas, resources: { gpus: 1 } }],
    scaling,
  });

  beforeAll(async () => {
    world = await startAgentWorld({ backend, simEngineFlags: ["--latency-profile", "0.05"], project: "scaling" });
    world.startAgent();
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  const queueDepth = { type: "queue_depth", targetPerReplica: 2, tolerance: 0.1 };

  it("shadow: recommends more replicas under a load step, reports it and an event, and never changes the spec", async () => {
    const id = await create("shadow", spec({ mode: "shadow", intervalSeconds: 2, scaleDownStabilizationSeconds: 10, algorithm: queueDepth, roles: [{ name: "main", minReplicas: 1, maxReplicas: 4 }] }));
    const ready = await readyDeployment(id);
    const load = loadStep(ready.status.endpoint, 6);
    try {
      const scaling = await eventually(
        "status.scaling recommending more than the current replicas",
        async () => {
          const s = (await get(id)).status?.scaling;
          return s?.roles?.[0]?.recommended > s?.roles?.[0]?.current ? s : undefined;
        },
        45_000,
      );
      expect(scaling.mode).toBe("shadow");
      expect(scaling.roles[0]).toMatchObject({ name: "main", current: 1, reason: "QueueDepth" });
      expect(scaling.roles[0].desired).toBeGreaterThan(1);
      expect(scaling.roles[0].signals.map((s: { name: string }) => s.name)).toEqual(["running", "waiting"]);
      for (const signal of scaling.roles[0].signals) expect(Date.parse(signal.observedAt)).toBeGreaterThan(Date.now() - 60_000);
      const condition = (await get(id)).status.conditions.find((c: { type: string }) => c.type === "Scaling");
      expect(condition).toMatchObject({ status: "True", reason: "Recommended" });

      const event = await eventually("a shadow deployment.scaled event", async () => (await scalingEvents(id)).find((e) => e.data.mode === "shadow" && e.data.to > 1));
      expect(event.data).toMatchObject({ role: "main", from: 1, mode: "shadow", reason: "QueueDepth", actor: { kind: "agent" } });
      expect(event.data.signals.length).toBeGreaterThan(0);

      // (c) the per-role signals the decision read, with pod counts and read times.
      const metrics = (await call("GET", `/v1/deployments/${id}/metrics`)).body;
      const main = metrics.roles.find((r: { name: string }) => r.name === "main");
      const running = main.signals.find((s: { name: string }) => s.name === "requests_running");
      expect(running).toMatchObject({ unit: "requests", podCount: 1 });
      expect(Date.parse(running.observedAt)).toBeGreaterThan(Date.now() - 60_000);
      expect(main.signals.find((s: { name: string }) => s.name === "router_in_flight")).toMatchObject({ podCount: 1 });
      expect(Date.parse(metrics.observedAt)).toBeGreaterThan(Date.now() - 60_000);
    } finally {
      await load.stop();
    }
    const after = await get(id);
    expect(after.generation).toBe(ready.generation);
    expect(after.spec.roles[0].replicas).toBe(1);
    expect((await scalingEvents(id)).every((e) => e.data.mode === "shadow")).toBe(true);
    expect((await call("DELETE", `/v1/deployments/${id}`)).status).toBeLessThan(300);
  }, 150_000);

  it("active: scales up at once under a load step, and down after the stabilization window once it stops", async () => {
    const id = await create("active", spec({ mode: "active", intervalSeconds: 2, scaleDownStabilizationSeconds: 10, algorithm: queueDepth, roles: [{ name: "main", minReplicas: 1, maxReplicas: 3 }] }));
    const ready = await readyDeployment(id);
    const load = loadStep(ready.status.endpoint, 6);
    let scaledUp: { generation: number; spec: { roles: Array<{ replicas: number }> } };
    let stoppedAt = 0;
    try {
      scaledUp = await eventually("replicas raised by the autoscaler", async () => {
        const body = await get(id);
        return body.spec.roles[0].replicas > 1 ? body : undefined;
      }, 45_000);
      expect(scaledUp.generation).toBeGreaterThan(ready.generation);
      const up = await eventually("an applied deployment.scaled event", async () => (await scalingEvents(id)).find((e) => e.data.mode === "active" && e.data.to > e.data.from));
      expect(up.data).toMatchObject({ role: "main", from: 1, mode: "active", reason: "QueueDepth", actor: { kind: "autoscaler" } });
      expect(up.data.signals.map((s) => s.name)).toEqual(["running", "waiting"]);
      await readyDeployment(id);
    } finally {
      // The load starts falling when the clients are told to stop, not when their last streams end.
      stoppedAt = Date.now();
      await load.stop();
    }
    const peak = (await get(id)).spec.roles[0].replicas;
    const down = await eventually("replicas lowered after the window", async () => {
      const body = await get(id);
      return body.spec.roles[0].replicas < peak ? body : undefined;
    }, 60_000);
    // The lower recommendation had to hold for the 10 s window first.
    expect(Date.now() - stoppedAt).toBeGreaterThan(8_000);
    expect(down.spec.roles[0].replicas).toBeGreaterThanOrEqual(1);
    const events = await scalingEvents(id);
    expect(events.find((e) => e.data.mode === "active" && e.data.to < e.data.from)?.data).toMatchObject({ actor: { kind: "autoscaler" } });
    await readyDeployment(id, 90_000);
    expect((await call("DELETE", `/v1/deployments/${id}`)).status).toBeLessThan(300);
  }, 240_000);

  it("evaluates early when the router holds more requests than the engines have batch slots", async () => {
    // A 60 s interval, engines of 2 slots: the first evaluation runs as the loop starts, the next
    // regular one 60 s later. Six clients put 6 requests at the router against 2 slots.
    const createdAt = Date.now();
    const s = spec({ mode: "active", intervalSeconds: 60, scaleDownStabilizationSeconds: 300, algorithm: queueDepth, roles: [{ name: "main", minReplicas: 1, maxReplicas: 2 }] });
    s.roles[0] = { ...s.roles[0]!, extraArgs: ["--max-num-seqs", "2"] } as (typeof s.roles)[0];
    const id = await create("early", s);
    const ready = await readyDeployment(id);
    const load = loadStep(ready.status.endpoint, 6);
    try {
      const up = await eventually("replicas raised before the next regular evaluation", async () => {
        const body = await get(id);
        return body.spec.roles[0].replicas > 1 ? body : undefined;
      }, 50_000);
      expect(up.spec.roles[0].replicas).toBe(2);
      // The loop started after the create: its second regular evaluation is 60 s after that at the earliest.
      expect(Date.now() - createdAt).toBeLessThan(58_000);
      // The applied change says why it came early.
      const event = await eventually("the scaling event", async () => (await scalingEvents(id)).find((e) => e.data.mode === "active" && e.data.to === 2));
      expect(event.data.message).toMatch(/evaluated early: \d+ requests at the router over 2 batch slots/);
    } finally {
      expect(await load.stop()).toBe(0);
    }
    expect((await call("DELETE", `/v1/deployments/${id}`)).status).toBeLessThan(300);
  }, 120_000);

  it("scale to zero: a request held by the router wakes the role 0 → 1 and is served", async () => {
    const id = await create(
      "zero",
      spec({ mode: "active", intervalSeconds: 5, scaleDownStabilizationSeconds: 60, algorithm: queueDepth, roles: [{ name: "main", minReplicas: 0, maxReplicas: 2 }] }, 0),
    );
    // Ready at zero: the router answers at the endpoint and holds what comes until an engine wakes.
    const routed = await world.readyDeployment(id, {
      check: (body) => body.status.conditions.some((c: { type: string; status: string }) => c.type === "RouterReady" && c.status === "True"),
    });
    expect(routed.spec.roles[0].replicas).toBe(0);
    const started = Date.now();
    const answer = await chat(routed.status.endpoint, 16, 60_000);
    expect(answer.status, answer.text).toBe(200);
    expect(Date.now() - started).toBeLessThan(60_000);
    const woken = await get(id);
    expect(woken.spec.roles[0].replicas).toBe(1);
    const event = (await scalingEvents(id)).find((e) => e.data.mode === "active" && e.data.from === 0 && e.data.to === 1);
    expect(event?.data).toMatchObject({ reason: "RequestsHeld", actor: { kind: "autoscaler" } });
  }, 120_000);
});

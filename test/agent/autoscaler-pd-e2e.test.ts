// The prefill:decode ratio end to end (docs/design.md §7.4): a vLLM PD deployment behind the builtin router,
// scaled actively by queue_depth under a decode-heavy load step (long outputs: each request's
// prefill leg is short, its decode leg lasts about a second, so decode queues grow and prefill's do
// not). The autoscaler writes every role's replicas in one PATCH of `spec.roles`, so no spec the
// API ever stores may break `pdRatio` — sampled here twice a second through the whole run, while
// decode scales up under the load and back down after it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCaller, type AgentWorld, type Backend, E2E_BACKENDS, chat, eventually, MODEL, startAgentWorld } from "./e2e-support.ts";

/** Output tokens per request: about a second of decode at the simulator's 0.05 latency profile. */
const LONG_REQUEST_TOKENS = 2500;
const RATIO = { min: 0.5, max: 2 };

interface Sample {
  at: number;
  generation: number;
  prefill: number;
  decode: number;
}

interface ScaledEvent {
  data: { deployment: { generation: number }; role: string; from: number; to: number; mode: string; reason: string; message?: string; actor: { kind: string } };
}

describe.each<Backend>(E2E_BACKENDS)("the autoscaler keeps the prefill:decode ratio end to end, on the %s cluster", (backend) => {
  let world: AgentWorld;
  const call = adminCaller(() => world.server);
  const get = async (id: string) => (await call("GET", `/v1/deployments/${id}`)).body;
  const replicasOf = (body: { spec: { roles: Array<{ name: string; replicas: number }> } }, role: string) => body.spec.roles.find((r) => r.name === role)!.replicas;

  beforeAll(async () => {
    world = await startAgentWorld({ backend, simEngineFlags: ["--latency-profile", "0.05"], project: "pd-scaling" });
    world.startAgent();
  }, 90_000);

  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  /** `clients` concurrent loops of long decode-heavy requests until stopped; counts every request and every failure. */
  const loadStep = (endpoint: string, clients: number) => {
    let running = true;
    let sent = 0;
    const failures: string[] = [];
    const loops = Array.from({ length: clients }, async () => {
      while (running) {
        sent++;
        const res = await chat(endpoint, { maxTokens: LONG_REQUEST_TOKENS, timeoutMs: 60_000, extra: { ignore_eos: true } }).catch((error: Error) => ({ status: 0, text: error.message }));
        if (res.status !== 200) {
          failures.push(`${res.status} ${res.text.slice(0, 200)}`);
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    });
    return {
      async stop() {
        running = false;
        await Promise.all(loops);
        return { sent, failures };
      },
    };
  };

  /** GETs the deployment every ~500 ms until stopped and keeps each spec's replicas. */
  const sampleReplicas = (id: string) => {
    let running = true;
    const samples: Sample[] = [];
    const loop = (async () => {
      while (running) {
        const body = await get(id);
        samples.push({ at: Date.now(), generation: body.generation, prefill: replicasOf(body, "prefill"), decode: replicasOf(body, "decode") });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    return {
      samples,
      async stop() {
        running = false;
        await loop;
        return samples;
      },
    };
  };

  it("decode scales up under a decode-heavy load and back down, and every stored spec keeps prefill:decode within [0.5, 2]", async () => {
    const id = await world.create("pd", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin" },
      roles: [
        { name: "prefill", kind: "prefill", replicas: 1, resources: { gpus: 1 } },
        { name: "decode", kind: "decode", replicas: 1, resources: { gpus: 1 } },
      ],
      scaling: {
        mode: "active",
        intervalSeconds: 2,
        scaleDownStabilizationSeconds: 10,
        algorithm: { type: "queue_depth", targetPerReplica: 2, tolerance: 0.1 },
        pdRatio: RATIO,
        roles: [
          { name: "prefill", minReplicas: 1, maxReplicas: 3 },
          { name: "decode", minReplicas: 1, maxReplicas: 4 },
        ],
      },
    });
    const sampler = sampleReplicas(id);
    try {
      const ready = await world.readyDeployment(id, { timeoutMs: 90_000 });
      const load = loadStep(ready.status.endpoint, 8);
      let result: Awaited<ReturnType<typeof load.stop>>;
      try {
        // Eight concurrent decodes at two per replica: decode wants 4, and 4 decodes need at least
        // 2 prefills (0.5 × 4), so the ratio pulls prefill up in the same PATCH.
        await eventually("decode scaled to 3 or more", async () => replicasOf(await get(id), "decode") >= 3, 90_000, 500);
        await world.readyDeployment(id, { timeoutMs: 120_000 });
        // While the load lasts, prefill's own queue asks for its minimum; the ratio holds it up.
        const prefill = await eventually("status.scaling holding prefill up by the ratio", async () => {
          const role = (await get(id)).status?.scaling?.roles?.find((r: { name: string }) => r.name === "prefill");
          return role?.limitedBy === "PdRatio" ? role : undefined;
        }, 30_000, 500);
        expect(prefill).toMatchObject({ reason: "QueueDepth", recommended: 0, desired: 2 });
        // Keep the step on for a while at the new size, so the added replicas serve through the router.
        await new Promise((resolve) => setTimeout(resolve, 15_000));
      } finally {
        result = await load.stop();
      }
      expect(result.failures, `${result.failures.length} of ${result.sent} requests failed`).toEqual([]);
      expect(result.sent).toBeGreaterThan(8);

      // After the window decode goes down first (one role per interval), then prefill follows.
      await eventually("both roles back at one replica", async () => {
        const body = await get(id);
        return replicasOf(body, "prefill") === 1 && replicasOf(body, "decode") === 1;
      }, 180_000, 500);
      await world.readyDeployment(id, { timeoutMs: 120_000 });
    } finally {
      await sampler.stop();
    }

    const samples = sampler.samples;
    expect(samples.length).toBeGreaterThan(20);
    const outside = samples.filter((s) => s.prefill < RATIO.min * s.decode || s.prefill > RATIO.max * s.decode);
    expect(outside, `samples outside [${RATIO.min}, ${RATIO.max}]`).toEqual([]);
    expect(Math.max(...samples.map((s) => s.decode))).toBeGreaterThanOrEqual(3);
    expect(Math.max(...samples.map((s) => s.prefill))).toBeGreaterThanOrEqual(2);
    expect(samples.every((s) => s.prefill >= 1 && s.prefill <= 3 && s.decode >= 1 && s.decode <= 4)).toBe(true);

    // The applied prefill scale-up explains itself by the ratio, as a shadow event would: its own
    // queue was empty, so its reason is what moved it (PdRatio), and the message says how.
    const events = (await call("GET", `/v1/deployments/${id}/scaling-events`)).body.items as ScaledEvent[];
    const prefillUp = events.find((e) => e.data.role === "prefill" && e.data.to > e.data.from)?.data;
    expect(prefillUp).toMatchObject({ mode: "active", from: 1, to: 2, reason: "PdRatio", actor: { kind: "autoscaler" } });
    expect(prefillUp?.message).toContain("prefill:decode kept within [0.5, 2]: 1 → 2");
    const decodeUp = events.find((e) => e.data.role === "decode" && e.data.to > e.data.from)?.data;
    expect(decodeUp).toMatchObject({ mode: "active", reason: "QueueDepth", actor: { kind: "autoscaler" } });
    // Both in one PATCH: the same spec generation.
    expect(prefillUp?.deployment.generation).toBe(decodeUp?.deployment.generation);

    // Beyond the samples: replaying every applied change generation by generation (a PATCH's
    // events share one), each spec the autoscaler wrote kept the ratio, ending back at 1:1.
    const replicas: Record<string, number> = { prefill: 1, decode: 1 };
    const generations = [...new Set(events.map((e) => e.data.deployment.generation))].sort((a, b) => a - b);
    for (const generation of generations) {
      for (const e of events.filter((x) => x.data.deployment.generation === generation)) {
        expect(e.data.from, `generation ${generation} ${e.data.role}`).toBe(replicas[e.data.role]);
        replicas[e.data.role] = e.data.to;
      }
      expect(replicas.prefill! / replicas.decode!, `generation ${generation}: ${JSON.stringify(replicas)}`).toBeGreaterThanOrEqual(RATIO.min);
      expect(replicas.prefill! / replicas.decode!, `generation ${generation}: ${JSON.stringify(replicas)}`).toBeLessThanOrEqual(RATIO.max);
    }
    expect(replicas).toEqual({ prefill: 1, decode: 1 });
    expect((await call("DELETE", `/v1/deployments/${id}`)).status).toBeLessThan(300);
  }, 420_000);
});

// The SGLang flavour on a real process: served name defaults to --model-path, /health runs a
// generation (≥ 1 s, scaled), /metrics only with --enable-metrics, flat error bodies, server info
// and per-rank loads, body-pinned DP ranks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricValue, post, readSse, scrape, startSim, type SimProcess } from "./harness.ts";

const MODEL_PATH = "Qwen/Qwen3-30B-A3B";
const LAUNCH = ["python3", "-m", "sglang.launch_server", "--model-path", MODEL_PATH, "--port", "0"];

describe("berth sim-engine -- python3 -m sglang.launch_server --enable-metrics", () => {
  let sim: SimProcess;
  beforeAll(async () => {
    sim = await startSim(["--latency-profile", "fast", "--gpu-type", "nvidia-h200-141gb"], [...LAUNCH, "--enable-metrics", "--dp-size", "2", "--tp-size", "2"]);
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it("binds 127.0.0.1 by default and serves the model under its --model-path", async () => {
    expect(sim.url).toBe(`http://127.0.0.1:${sim.port}`);
    const body = (await (await fetch(`${sim.url}/v1/models`)).json()) as any;
    expect(body.data[0]).toMatchObject({ id: MODEL_PATH, owned_by: "berth-sim" });
  });

  it("answers /health by generating a token: 200 after at least one (scaled) second", async () => {
    const started = Date.now();
    const health = await fetch(`${sim.url}/health`);
    expect(health.status).toBe(200);
    expect(health.headers.get("x-berth-simulated")).toBe("true");
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
  });

  it("streams chat and exposes SGLang's metric names", async () => {
    const sentAt = Date.now();
    const { events } = await readSse(await post(`${sim.url}/v1/chat/completions`, { model: "anything", messages: [{ role: "user", content: "hi" }], max_tokens: 5, stream: true }), sentAt);
    expect(events.at(-1)).toBe("data: [DONE]");
    const text = await scrape(sim.url);
    for (const name of ["sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", "sglang:cache_hit_rate"]) {
      expect(metricValue(text, name, { model_name: MODEL_PATH, engine_type: "unified", dp_rank: "1" }), name).toBeDefined();
    }
    for (const name of ["sglang:time_to_first_token_seconds_count", "sglang:inter_token_latency_seconds_count", "sglang:prompt_tokens_total", "sglang:generation_tokens_total"]) {
      expect(metricValue(text, name, { model_name: MODEL_PATH, engine_type: "unified" }), name).toBeGreaterThan(0);
    }
  });

  it("reports errors in SGLang's flat shape, 400 for validation", async () => {
    const invalid = await post(`${sim.url}/v1/chat/completions`, "{]");
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ object: "error", type: "BadRequestError", code: 400 });
    const missing = await post(`${sim.url}/v1/chat/completions`, { model: MODEL_PATH });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as any).message).toContain("'messages'");
  });

  it("shows its parallel layout in /server_info and per-rank loads in /v1/loads", async () => {
    const info = (await (await fetch(`${sim.url}/server_info`)).json()) as any;
    expect(info).toMatchObject({ dp_size: 2, tp_size: 2, disaggregation_mode: "null", served_model_name: MODEL_PATH });
    const loads = (await (await fetch(`${sim.url}/v1/loads`)).json()) as any;
    expect(loads.dp_rank_count).toBe(2);
    expect(loads.loads.map((load: any) => load.dp_rank)).toEqual([0, 1]);
  });

  it("pins a DP rank from the body; an unknown rank is refused", async () => {
    expect((await post(`${sim.url}/v1/completions`, { prompt: "x", max_tokens: 1, routed_dp_rank: 1 })).status).toBe(200);
    const refused = await post(`${sim.url}/v1/completions`, { prompt: "x", max_tokens: 1, routed_dp_rank: 5 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as any).message).toBe("data_parallel_rank 5 is out of range [0, 2).");
  });
});

describe("SGLang without --enable-metrics, and worker nodes", () => {
  it("has no /metrics, and --api-key guards everything but /health", async () => {
    const sim = await startSim(["--zero-latency"], [...LAUNCH, "--api-key", "k1", "--served-model-name", "qwen"]);
    try {
      expect((await fetch(`${sim.url}/metrics`)).status).toBe(404);
      const denied = await fetch(`${sim.url}/v1/models`);
      expect(denied.status).toBe(401);
      expect(await denied.json()).toEqual({ error: "Unauthorized" });
      const allowed = (await (await fetch(`${sim.url}/v1/models`, { headers: { authorization: "Bearer k1" } })).json()) as any;
      expect(allowed.data[0].id).toBe("qwen");
      expect((await fetch(`${sim.url}/health`)).status).toBe(200);
    } finally {
      await sim.stop();
    }
  });

  it("a node with --node-rank 1 serves only the dummy health check", async () => {
    const sim = await startSim(["--zero-latency"], [...LAUNCH, "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "127.0.0.1:25000"]);
    try {
      expect((await fetch(`${sim.url}/health`)).status).toBe(200);
      expect((await fetch(`${sim.url}/v1/models`)).status).toBe(404);
      expect((await post(`${sim.url}/v1/completions`, { prompt: "x" })).status).toBe(404);
    } finally {
      await sim.stop();
    }
  });
});

// vLLM elastic EP on a real process: /scale_elastic_ep blocks while every path answers 503, then
// the new width serves with its own capacity per rank, visible as the `engine` label set and
// through rank-directed requests.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, labelValues, metricValue, post, readSse, scrape, sleep, startSim, type SimProcess } from "./harness.ts";

const ELASTIC = ["--enable-expert-parallel", "--enable-eplb", "--enable-elastic-ep", "--data-parallel-backend", "ray"];
const SCALING_BODY = { error: "The model is currently scaling. Please try again later." };

describe("POST /scale_elastic_ep", () => {
  let sim: SimProcess;
  beforeAll(async () => {
    // A resize takes 5 model-seconds, 0.5 s under the fast profile.
    sim = await startSim(["--latency-profile", "fast", "--elastic-scale-seconds", "5"], ["vllm", "serve", "deepseek-ai/DeepSeek-V2-Lite", "--port", "0", "--host", "127.0.0.1", ...ELASTIC, "-dp", "1", "--max-num-seqs", "1"]);
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it("refuses bad bodies with 400 in vLLM's envelope", async () => {
    const cases: [unknown, string][] = [
      ["{oops", "Invalid JSON format"],
      [{}, "new_data_parallel_size is required"],
      [{ new_data_parallel_size: 0 }, "new_data_parallel_size must be a positive integer"],
      [{ new_data_parallel_size: 1.5 }, "new_data_parallel_size must be a positive integer"],
      [{ new_data_parallel_size: 2, drain_timeout: -1 }, "drain_timeout must be a positive integer"],
    ];
    for (const [body, message] of cases) {
      const response = await post(`${sim.url}/scale_elastic_ep`, body);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: { message, type: "Bad Request", param: null, code: 400 } });
    }
  });

  it("answers 503 on every path while scaling up, keeps in-flight requests, then serves two ranks", async () => {
    const inFlightSent = Date.now();
    const inFlight = post(`${sim.url}/v1/completions`, { prompt: "keep going", max_tokens: 1200, ignore_eos: true, stream: true }).then((response) => readSse(response, inFlightSent));
    await eventually(async () => (metricValue(await scrape(sim.url), "vllm:num_requests_running") === 1 ? true : undefined));

    const scaled = post(`${sim.url}/scale_elastic_ep`, { new_data_parallel_size: 2, drain_timeout: 30 });
    await sleep(100);
    for (const [method, path] of [["GET", "/health"], ["GET", "/metrics"], ["GET", "/v1/models"], ["POST", "/is_scaling_elastic_ep"], ["POST", "/v1/completions"]] as const) {
      const response = await fetch(`${sim.url}${path}`, { method, body: method === "POST" ? "{}" : undefined });
      expect(response.status, path).toBe(503);
      expect(response.headers.get("x-berth-simulated")).toBe("true");
      expect(await response.json()).toEqual(SCALING_BODY);
    }
    const answer = await scaled;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ message: "Scaled to 2 data parallel engines" });
    expect(await (await post(`${sim.url}/is_scaling_elastic_ep`, {})).json()).toEqual({ is_scaling_elastic_ep: false });

    const finished = await inFlight;
    expect(finished.events.at(-1)).toBe("data: [DONE]");
    expect(finished.chunks.find((chunk) => chunk.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe("length");

    // Width by observation: every vllm: series restarted with engines 0 and 1.
    const metrics = await scrape(sim.url);
    expect(labelValues(metrics, "vllm:num_requests_running", "engine")).toEqual(["0", "1"]);
    expect(metricValue(metrics, "vllm:generation_tokens_total")).toBeLessThan(1200);

    // Each rank has its own batch (max-num-seqs 1): two requests run at once, none waits.
    const pair = [0, 1].map((i) => post(`${sim.url}/v1/completions`, { prompt: `pair ${i}`, max_tokens: 400, ignore_eos: true }));
    const both = await eventually(async () => {
      const text = await scrape(sim.url);
      return metricValue(text, "vllm:num_requests_running") === 2 ? text : undefined;
    });
    expect(metricValue(both, "vllm:num_requests_waiting")).toBe(0);
    await Promise.all(pair);

    const rankOne = await post(`${sim.url}/v1/completions`, { prompt: "probe", max_tokens: 1 }, { "X-data-parallel-rank": "1" });
    expect(rankOne.status).toBe(200);
    expect((await post(`${sim.url}/v1/completions`, { prompt: "probe", max_tokens: 1 }, { "X-data-parallel-rank": "2" })).status).toBe(400);
  });

  it("scales down: the leaving rank is gone", async () => {
    const answer = await post(`${sim.url}/scale_elastic_ep`, { new_data_parallel_size: 1 });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ message: "Scaled to 1 data parallel engines" });
    expect(labelValues(await scrape(sim.url), "vllm:num_requests_running", "engine")).toEqual(["0"]);
    const probe = await post(`${sim.url}/v1/completions`, { prompt: "probe", max_tokens: 1 }, { "X-data-parallel-rank": "1" });
    expect(probe.status).toBe(400);
    expect(((await probe.json()) as any).error.message).toBe("data_parallel_rank 1 is out of range [0, 1).");
  });

  it("a resize to the current width answers at once", async () => {
    const started = Date.now();
    const answer = await post(`${sim.url}/scale_elastic_ep`, { new_data_parallel_size: 1 });
    expect(answer.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(300);
  });
});

describe("elastic EP refusals", () => {
  it("without the Ray DP backend a resize fails with 500 Scale failed", async () => {
    const sim = await startSim(["--zero-latency"], ["vllm", "serve", "m", "--port", "0", "--host", "127.0.0.1", "-dp", "2"]);
    try {
      const answer = await post(`${sim.url}/scale_elastic_ep`, { new_data_parallel_size: 3 });
      expect(answer.status).toBe(500);
      expect(await answer.json()).toEqual({ error: { message: "Scale failed", type: "Internal Server Error", param: null, code: 500 } });
      expect(labelValues(await scrape(sim.url), "vllm:num_requests_running", "engine")).toEqual(["0", "1"]);
    } finally {
      await sim.stop();
    }
  });

  it("with VLLM_ELASTIC_EP_DRAIN_REQUESTS=1 a resize that cannot drain in time answers 408", async () => {
    const sim = await startSim(["--latency-profile", "fast"], ["vllm", "serve", "m", "--port", "0", "--host", "127.0.0.1", ...ELASTIC], { VLLM_ELASTIC_EP_DRAIN_REQUESTS: "1" });
    try {
      const busy = post(`${sim.url}/v1/completions`, { prompt: "busy", max_tokens: 800, ignore_eos: true });
      await eventually(async () => (metricValue(await scrape(sim.url), "vllm:num_requests_running") === 1 ? true : undefined));
      const answer = await post(`${sim.url}/scale_elastic_ep`, { new_data_parallel_size: 2, drain_timeout: 1 });
      expect(answer.status).toBe(408);
      expect(await answer.json()).toEqual({ error: { message: "Scale failed due to request drain timeout after 1 seconds", type: "Request Timeout", param: null, code: 408 } });
      expect((await fetch(`${sim.url}/health`)).status).toBe(200);
      expect((await busy).status).toBe(200);
    } finally {
      await sim.stop();
    }
  });
});

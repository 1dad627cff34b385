// The vLLM flavour's HTTP surface on a real process: health, models, completions and chat (JSON and
// SSE), determinism, metrics names, labelling, and bad input answered as vLLM answers it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, labelValues, metricValue, post, readSse, scrape, startSim, type SimProcess } from "./harness.ts";

const MODEL = "meta-llama/Llama-3.1-8B-Instruct";

describe("berth sim-engine -- vllm serve", () => {
  let sim: SimProcess;
  beforeAll(async () => {
    sim = await startSim(["--latency-profile", "fast", "--seed", "7"], ["vllm", "serve", MODEL, "--served-model-name", MODEL, "llama", "--port", "0", "--host", "127.0.0.1", "--max-model-len", "8k"]);
  });
  afterAll(async () => {
    await sim?.stop();
  });

  // How fast it starts is not asserted here (a loaded CI machine is no clock): only what it answers.
  it("answers /health once started, labelled as a simulator", async () => {
    const health = await fetch(`${sim.url}/health`);
    expect(health.status).toBe(200);
    expect(health.headers.get("x-berth-simulated")).toBe("true");
    expect(await health.text()).toBe("");
    const line = sim.logLine("listening on")!;
    expect(line.simulated).toBe(true);
    expect(String(line.msg)).toContain("berth-sim");
    expect(sim.stdout().split("\n").filter(Boolean).every((entry) => JSON.parse(entry).simulated === true)).toBe(true);
  });

  it("lists every served name with owned_by berth-sim and max_model_len", async () => {
    const response = await fetch(`${sim.url}/v1/models`);
    expect(response.headers.get("x-berth-simulated")).toBe("true");
    const body = (await response.json()) as { object: string; data: Record<string, unknown>[] };
    expect(body.object).toBe("list");
    expect(body.data.map((card) => card.id)).toEqual([MODEL, "llama"]);
    expect(body.data[0]).toMatchObject({ object: "model", owned_by: "berth-sim", root: MODEL, parent: null, max_model_len: 8000 });
  });

  it("answers a chat completion with usage, and the same seed gives the same text", async () => {
    const request = { model: "llama", messages: [{ role: "user", content: "Tell me about rivers." }], max_tokens: 12, seed: 42 };
    const first = await post(`${sim.url}/v1/chat/completions`, request);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-berth-simulated")).toBe("true");
    const body = (await first.json()) as any;
    expect(body).toMatchObject({ object: "chat.completion", model: MODEL, kv_transfer_params: null });
    expect(body.id).toMatch(/^chatcmpl-/);
    expect(body.choices[0].message.role).toBe("assistant");
    expect(body.choices[0].finish_reason).toBe("length");
    expect(body.usage.completion_tokens).toBe(12);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + 12);
    const again = (await (await post(`${sim.url}/v1/chat/completions`, request)).json()) as any;
    expect(again.choices[0].message.content).toBe(body.choices[0].message.content);
    const other = (await (await post(`${sim.url}/v1/chat/completions`, { ...request, seed: 43 })).json()) as any;
    expect(other.choices[0].message.content).not.toBe(body.choices[0].message.content);
  });

  it("stops on its own with finish_reason stop when max_tokens allows", async () => {
    const body = (await (await post(`${sim.url}/v1/completions`, { prompt: "Once upon a time", seed: 1 })).json()) as any;
    expect(body.object).toBe("text_completion");
    expect(body.id).toMatch(/^cmpl-/);
    expect(body.choices[0].finish_reason).toBe("stop");
    expect(body.usage.completion_tokens).toBeGreaterThanOrEqual(16);
    expect(body.usage.completion_tokens).toBeLessThanOrEqual(128);
  });

  it("streams completions as SSE with a usage chunk and data: [DONE]", async () => {
    const sentAt = Date.now();
    const response = await post(`${sim.url}/v1/completions`, { model: MODEL, prompt: "Hello", max_tokens: 6, stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    expect(response.headers.get("x-berth-simulated")).toBe("true");
    const { events, chunks } = await readSse(response, sentAt);
    expect(events.at(-1)).toBe("data: [DONE]");
    const text = chunks.flatMap((chunk) => chunk.choices.map((choice: any) => choice.text)).join("");
    expect(text.length).toBeGreaterThan(0);
    expect(chunks.filter((chunk) => chunk.choices[0]?.finish_reason === "length")).toHaveLength(1);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 6 } });
    const nonStreamed = (await (await post(`${sim.url}/v1/completions`, { model: MODEL, prompt: "Hello", max_tokens: 6 })).json()) as any;
    expect(text).toBe(nonStreamed.choices[0].text);
  });

  it("streams chat with a role chunk first, then content deltas", async () => {
    const sentAt = Date.now();
    const response = await post(`${sim.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], max_tokens: 4, stream: true });
    const { events, chunks } = await readSse(response, sentAt);
    expect(chunks[0]!.choices[0].delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.slice(1).every((chunk) => typeof chunk.choices[0].delta.content === "string")).toBe(true);
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe("length");
    expect(chunks.some((chunk) => chunk.usage)).toBe(false);
    expect(events.at(-1)).toBe("data: [DONE]");
  });

  it("exposes vLLM's metric names with model_name and engine labels", async () => {
    await post(`${sim.url}/v1/completions`, { prompt: "warm the counters", max_tokens: 3 });
    const text = await scrape(sim.url);
    for (const name of [
      "vllm:num_requests_running",
      "vllm:num_requests_waiting",
      "vllm:kv_cache_usage_perc",
      "vllm:prefix_cache_queries_total",
      "vllm:prefix_cache_hits_total",
      "vllm:prompt_tokens_total",
      "vllm:generation_tokens_total",
      "vllm:request_success_total",
      "vllm:time_to_first_token_seconds_bucket",
      "vllm:inter_token_latency_seconds_bucket",
      "vllm:e2e_request_latency_seconds_bucket",
    ]) {
      expect(metricValue(text, name, { model_name: MODEL, engine: "0" }), name).toBeDefined();
    }
    expect(text).toContain("# TYPE vllm:prompt_tokens_total counter");
    expect(text).toContain("# TYPE vllm:time_to_first_token_seconds histogram");
    expect(labelValues(text, "vllm:num_requests_running", "engine")).toEqual(["0"]);
    expect(metricValue(text, "vllm:generation_tokens_total")).toBeGreaterThan(0);
  });

  describe("bad input, as vLLM answers it", () => {
    it("invalid JSON → 400 error envelope", async () => {
      const response = await post(`${sim.url}/v1/chat/completions`, "{not json");
      expect(response.status).toBe(400);
      expect(response.headers.get("x-berth-simulated")).toBe("true");
      const body = (await response.json()) as any;
      expect(body.error).toMatchObject({ type: "BadRequestError", code: 400, param: null });
      expect(body.error.message).toContain("json_invalid");
    });

    it("missing messages → 400", async () => {
      const response = await post(`${sim.url}/v1/chat/completions`, { model: MODEL });
      expect(response.status).toBe(400);
      const body = (await response.json()) as any;
      expect(body.error.message).toContain("'messages'");
      expect(body.error.message).toContain("Field required");
    });

    it("unknown model → 404 with vLLM's message", async () => {
      const response = await post(`${sim.url}/v1/chat/completions`, { model: "gpt-4", messages: [{ role: "user", content: "x" }] });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: { message: "The model `gpt-4` does not exist.", type: "NotFoundError", param: "model", code: 404 } });
    });

    it("a 10 MB prompt → 400 over the maximum context length, and the server carries on", async () => {
      const prompt = "word ".repeat(2 * 1024 * 1024);
      const response = await post(`${sim.url}/v1/completions`, { model: MODEL, prompt, max_tokens: 4 });
      expect(response.status).toBe(400);
      const body = (await response.json()) as any;
      expect(body.error.message).toMatch(/^This model's maximum context length is 8000 tokens\. However, your request has \d+ input tokens/);
      expect((await fetch(`${sim.url}/health`)).status).toBe(200);
    });

    it("max_tokens past the context → 400; max_tokens 0 → 400", async () => {
      const tooLong = await post(`${sim.url}/v1/completions`, { prompt: "hi", max_tokens: 8000 });
      expect(tooLong.status).toBe(400);
      expect(((await tooLong.json()) as any).error.message).toContain("'max_tokens' or 'max_completion_tokens' is too large: 8000");
      expect((await post(`${sim.url}/v1/completions`, { prompt: "hi", max_tokens: 0 })).status).toBe(400);
    });

    it("an unknown path → 404 labelled as simulated", async () => {
      const response = await fetch(`${sim.url}/nope`);
      expect(response.status).toBe(404);
      expect(response.headers.get("x-berth-simulated")).toBe("true");
    });

    it("a client that disconnects mid-stream has its request aborted and removed from running", async () => {
      const controller = new AbortController();
      const response = await post(`${sim.url}/v1/completions`, { prompt: "long story", max_tokens: 5000, ignore_eos: true, stream: true }, {}, controller.signal);
      const reader = response.body!.getReader();
      await reader.read();
      const running = await eventually(async () => ((metricValue(await scrape(sim.url), "vllm:num_requests_running") ?? 0) > 0 ? true : undefined));
      expect(running).toBe(true);
      controller.abort();
      await eventually(async () => (metricValue(await scrape(sim.url), "vllm:num_requests_running") === 0 ? true : undefined));
      const text = await eventually(async () => {
        const metrics = await scrape(sim.url);
        return (metricValue(metrics, "vllm:request_success_total", { finished_reason: "abort" }) ?? 0) >= 1 ? metrics : undefined;
      });
      expect(metricValue(text, "vllm:kv_cache_usage_perc")).toBe(0);
    });
  });
});

describe("berth sim-engine flags", () => {
  it("--zero-latency answers a long generation at once", async () => {
    const sim = await startSim(["--zero-latency", "--gpu-type", "nvidia-l4-24gb"], ["vllm", "serve", "Qwen/Qwen2.5-32B", "--port", "0", "--host", "127.0.0.1", "--tensor-parallel-size", "4"]);
    try {
      const started = Date.now();
      const response = await post(`${sim.url}/v1/completions`, { prompt: "x ".repeat(2000), max_tokens: 200, ignore_eos: true });
      expect(response.status).toBe(200);
      expect(((await response.json()) as any).usage.completion_tokens).toBe(200);
      // Modelled, 200 steps of a 32B model on L4s would take seconds.
      expect(Date.now() - started).toBeLessThan(500);
    } finally {
      await sim.stop();
    }
  });

  it("--api-key guards /v1 only, with vLLM's flat 401 body", async () => {
    const sim = await startSim(["--zero-latency"], ["vllm", "serve", "m", "--port", "0", "--host", "127.0.0.1", "--api-key", "sekret"]);
    try {
      const denied = await fetch(`${sim.url}/v1/models`);
      expect(denied.status).toBe(401);
      expect(await denied.json()).toEqual({ error: "Unauthorized" });
      expect((await fetch(`${sim.url}/v1/models`, { headers: { authorization: "Bearer sekret" } })).status).toBe(200);
      expect((await fetch(`${sim.url}/health`)).status).toBe(200);
      expect((await fetch(`${sim.url}/metrics`)).status).toBe(200);
    } finally {
      await sim.stop();
    }
  });

  it("binds BERTH_POD_IP when told --host 0.0.0.0", async () => {
    const sim = await startSim(["--zero-latency"], ["vllm", "serve", "m", "--port", "0", "--host", "0.0.0.0"], { BERTH_POD_IP: "127.0.0.7" });
    try {
      expect(sim.url).toBe(`http://127.0.0.7:${sim.port}`);
      expect((await fetch(`${sim.url}/health`)).status).toBe(200);
    } finally {
      await sim.stop();
    }
  });

  it("refuses a command line that is neither vLLM nor SGLang, with usage and exit 2", async () => {
    await expect(startSim([], ["python3", "-m", "something.else"])).rejects.toThrow(/exited 2 before listening[\s\S]*not a vLLM or SGLang command line/);
  });
});

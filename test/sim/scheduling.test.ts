// The latency model seen from outside: bounded batches and KV cache make requests wait (and the
// waiting gauge shows them), repeated prefixes are served from the prefix cache with a shorter TTFT,
// and data-parallel ranks each bring their own capacity, reachable by X-data-parallel-rank.
import { describe, expect, it } from "vitest";
import { eventually, metricValue, post, readSse, scrape, startSim } from "./harness.ts";

const LONG = { max_tokens: 80, ignore_eos: true };

describe("continuous batching limits", () => {
  it("requests past --max-num-seqs wait, and the waiting gauge shows them", async () => {
    const sim = await startSim([], ["vllm", "serve", "meta-llama/Llama-3.1-8B", "--port", "0", "--host", "127.0.0.1", "--max-num-seqs", "2"]);
    try {
      const answers = Array.from({ length: 5 }, (_, i) => post(`${sim.url}/v1/completions`, { prompt: `request ${i}`, ...LONG }));
      const metrics = await eventually(async () => {
        const text = await scrape(sim.url);
        return metricValue(text, "vllm:num_requests_waiting") === 3 ? text : undefined;
      });
      expect(metricValue(metrics, "vllm:num_requests_running")).toBe(2);
      const bodies = (await Promise.all((await Promise.all(answers)).map((answer) => answer.json()))) as any[];
      expect(bodies.every((body) => body.usage.completion_tokens === 80)).toBe(true);
      const after = await scrape(sim.url);
      expect(metricValue(after, "vllm:num_requests_waiting")).toBe(0);
      expect(metricValue(after, "vllm:num_requests_running")).toBe(0);
      // Queued requests spent time waiting: the queue-time histogram saw more than zero.
      expect(metricValue(after, "vllm:request_queue_time_seconds_sum")).toBeGreaterThan(0.5);
    } finally {
      await sim.stop();
    }
  });

  it("a full KV cache holds requests back: only what fits runs", async () => {
    // Llama-3.1-8B on an L4 at 0.76 utilisation leaves about 10k tokens of KV cache.
    const sim = await startSim(
      ["--gpu-type", "nvidia-l4-24gb", "--latency-profile", "fast"],
      ["vllm", "serve", "meta-llama/Llama-3.1-8B", "--port", "0", "--host", "127.0.0.1", "--gpu-memory-utilization", "0.76", "--max-model-len", "8192"],
    );
    try {
      const prompt = (i: number) => `${i} ` + "lorem ipsum ".repeat(1800);
      const answers = Array.from({ length: 3 }, (_, i) => post(`${sim.url}/v1/completions`, { prompt: prompt(i), max_tokens: 120, ignore_eos: true }));
      const metrics = await eventually(async () => {
        const text = await scrape(sim.url);
        return metricValue(text, "vllm:num_requests_running") === 2 && metricValue(text, "vllm:num_requests_waiting") === 1 ? text : undefined;
      });
      expect(metricValue(metrics, "vllm:kv_cache_usage_perc")).toBeGreaterThan(0.6);
      const statuses = (await Promise.all(answers)).map((answer) => answer.status);
      expect(statuses).toEqual([200, 200, 200]);
    } finally {
      await sim.stop();
    }
  });
});

describe("prefix cache", () => {
  it("a repeated prompt is served from cached blocks, with a much shorter TTFT", async () => {
    const sim = await startSim(
      ["--gpu-type", "nvidia-l4-24gb"],
      ["vllm", "serve", "meta-llama/Llama-3.1-8B", "--port", "0", "--host", "127.0.0.1", "--enable-prompt-tokens-details", "--max-model-len", "8192"],
    );
    try {
      const request = { prompt: "The history of the river, told slowly. ".repeat(250), max_tokens: 2, stream: true, stream_options: { include_usage: true } };
      let sentAt = Date.now();
      const cold = await readSse(await post(`${sim.url}/v1/completions`, request), sentAt);
      sentAt = Date.now();
      const warm = await readSse(await post(`${sim.url}/v1/completions`, request), sentAt);
      const coldUsage = cold.chunks.at(-1)!.usage;
      const warmUsage = warm.chunks.at(-1)!.usage;
      expect(coldUsage.prompt_tokens_details.cached_tokens).toBe(0);
      expect(warmUsage.prompt_tokens_details.cached_tokens).toBeGreaterThan(coldUsage.prompt_tokens * 0.95);
      // About 2000 prompt tokens on an L4: ≈ 0.5 s to prefill cold, one bandwidth-bound step warm.
      expect(cold.firstTextMs).toBeGreaterThan(300);
      expect(warm.firstTextMs).toBeLessThan(cold.firstTextMs / 3);
      const metrics = await scrape(sim.url);
      expect(metricValue(metrics, "vllm:prefix_cache_hits_total")).toBe(warmUsage.prompt_tokens_details.cached_tokens);
      expect(metricValue(metrics, "vllm:prefix_cache_queries_total")).toBe(coldUsage.prompt_tokens * 2);
    } finally {
      await sim.stop();
    }
  });
});

describe("data-parallel ranks", () => {
  it("each rank has its own batch; X-data-parallel-rank pins a request; an unknown rank is refused", async () => {
    const sim = await startSim([], ["vllm", "serve", "meta-llama/Llama-3.1-8B", "--port", "0", "--host", "127.0.0.1", "-dp", "2", "--max-num-seqs", "1"]);
    try {
      let metrics = await scrape(sim.url);
      expect(metricValue(metrics, "vllm:num_requests_running", { engine: "0" })).toBe(0);
      expect(metricValue(metrics, "vllm:num_requests_running", { engine: "1" })).toBe(0);

      const spread = [0, 1].map((i) => post(`${sim.url}/v1/completions`, { prompt: `spread ${i}`, max_tokens: 60, ignore_eos: true }));
      metrics = await eventually(async () => {
        const text = await scrape(sim.url);
        return metricValue(text, "vllm:num_requests_running") === 2 ? text : undefined;
      });
      expect(metricValue(metrics, "vllm:num_requests_running", { engine: "0" })).toBe(1);
      expect(metricValue(metrics, "vllm:num_requests_running", { engine: "1" })).toBe(1);
      expect(metricValue(metrics, "vllm:num_requests_waiting")).toBe(0);
      await Promise.all(spread);

      const pinned = [0, 1].map((i) => post(`${sim.url}/v1/completions`, { prompt: `pinned ${i}`, max_tokens: 60, ignore_eos: true }, { "X-data-parallel-rank": "1" }));
      metrics = await eventually(async () => {
        const text = await scrape(sim.url);
        return metricValue(text, "vllm:num_requests_waiting", { engine: "1" }) === 1 ? text : undefined;
      });
      expect(metricValue(metrics, "vllm:num_requests_running", { engine: "1" })).toBe(1);
      expect(metricValue(metrics, "vllm:num_requests_running", { engine: "0" })).toBe(0);
      expect((await Promise.all(pinned)).map((answer) => answer.status)).toEqual([200, 200]);

      const refused = await post(`${sim.url}/v1/completions`, { prompt: "x", max_tokens: 1 }, { "X-data-parallel-rank": "2" });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as any).error.message).toBe("data_parallel_rank 2 is out of range [0, 2).");
    } finally {
      await sim.stop();
    }
  });
});

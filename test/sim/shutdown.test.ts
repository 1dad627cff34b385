// SIGTERM as each engine handles it: vLLM aborts in-flight requests by default, drains for up to
// --shutdown-timeout seconds when given (refusing new work, /health still 200); SGLang drains with
// no bound while /health answers 503.
import { describe, expect, it } from "vitest";
import { eventually, metricValue, post, readSse, scrape, startSim } from "./harness.ts";

const LONG = { prompt: "a long answer please", max_tokens: 4000, ignore_eos: true };

describe("vLLM SIGTERM", () => {
  it("aborts in-flight requests (finish_reason abort) and exits promptly without --shutdown-timeout", async () => {
    const sim = await startSim(["--latency-profile", "fast"], ["vllm", "serve", "m", "--port", "0", "--host", "127.0.0.1"]);
    const sentAt = Date.now();
    const streamed = post(`${sim.url}/v1/chat/completions`, { messages: [{ role: "user", content: "go" }], ...LONG, stream: true }).then((response) => readSse(response, sentAt));
    const plain = post(`${sim.url}/v1/completions`, LONG).then((response) => response.json() as Promise<any>);
    await eventually(async () => (metricValue(await scrape(sim.url), "vllm:num_requests_running") === 2 ? true : undefined));
    const signalledAt = Date.now();
    const { code } = await sim.stop();
    expect(code).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(4000);
    const stream = await streamed;
    expect(stream.chunks.at(-1)!.choices[0].finish_reason).toBe("abort");
    expect(stream.events.at(-1)).toBe("data: [DONE]");
    const body = await plain;
    expect(body.choices[0].finish_reason).toBe("abort");
    expect(body.usage.completion_tokens).toBeLessThan(4000);
    expect(sim.stdout()).toContain("aborting in-flight requests");
  });

  it("with --shutdown-timeout drains: in-flight work completes, new requests get 503, /health stays 200", async () => {
    const sim = await startSim(["--latency-profile", "fast"], ["vllm", "serve", "m", "--port", "0", "--host", "127.0.0.1", "--shutdown-timeout", "20"]);
    const running = post(`${sim.url}/v1/completions`, { ...LONG, max_tokens: 1500 }).then((response) => response.json() as Promise<any>);
    await eventually(async () => (metricValue(await scrape(sim.url), "vllm:num_requests_running") === 1 ? true : undefined));
    sim.child.kill("SIGTERM");
    await eventually(async () => (sim.stdout().includes("Draining 1 in-flight requests") ? true : undefined));
    const refused = await post(`${sim.url}/v1/completions`, { prompt: "late", max_tokens: 1 });
    expect(refused.status).toBe(503);
    expect((await fetch(`${sim.url}/health`)).status).toBe(200);
    const body = await running;
    expect(body.choices[0].finish_reason).toBe("length");
    expect(body.usage.completion_tokens).toBe(1500);
    const { code } = await sim.exited;
    expect(code).toBe(0);
  });
});

describe("SGLang SIGTERM", () => {
  it("drains with /health 503 until the last request finishes, then exits 0", async () => {
    const sim = await startSim(["--latency-profile", "fast"], ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--port", "0", "--enable-metrics"]);
    expect((await fetch(`${sim.url}/health`)).status).toBe(200);
    const running = post(`${sim.url}/v1/completions`, { ...LONG, max_tokens: 1500 }).then((response) => response.json() as Promise<any>);
    await eventually(async () => (metricValue(await scrape(sim.url), "sglang:num_running_reqs") === 1 ? true : undefined));
    sim.child.kill("SIGTERM");
    await eventually(async () => ((await fetch(`${sim.url}/health`)).status === 503 ? true : undefined));
    const body = await running;
    expect(body.choices[0].finish_reason).toBe("length");
    const { code } = await sim.exited;
    expect(code).toBe(0);
    expect(sim.stdout()).toContain("Gracefully exiting... Remaining number of requests 1");
  });
});

// Prefill/decode disaggregation across two real processes, in both engines' styles. A decode leg
// whose KV came from its prefill peer skips the prefill compute and pays only the transfer and one
// decode step. A ~3200-token prompt takes an L4 ≈ 0.9 s to prefill; the bounds leave room for load.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, metricValue, post, readSse, scrape, startSim, type SimProcess } from "./harness.ts";

const MODEL = "meta-llama/Llama-3.1-8B-Instruct";
const PROMPT = "Tell me the whole story of the harbor and its lanterns. ".repeat(270);
const NIXL = JSON.stringify({ kv_connector: "NixlConnector", kv_role: "kv_both" });
const LOCAL_PREFILL_MS = 700;
// Remote TTFT is the transfer plus one decode step; 600 ms leaves room for a loaded machine and
// stays below the local prefill (≥ 700 ms), so the bound still proves the prefill was skipped.
const REMOTE_TTFT_MS = 600;

describe("vLLM PD with NixlConnector kv_transfer_params", () => {
  let prefill: SimProcess;
  let decode: SimProcess;
  beforeAll(async () => {
    const engine = (host: string) => ["vllm", "serve", MODEL, "--port", "0", "--host", host, "--kv-transfer-config", NIXL, "--max-model-len", "8192"];
    [prefill, decode] = await Promise.all([
      startSim(["--gpu-type", "nvidia-l4-24gb"], engine("127.0.0.1"), { VLLM_NIXL_SIDE_CHANNEL_HOST: "127.0.0.5", VLLM_NIXL_SIDE_CHANNEL_PORT: "5700" }),
      startSim(["--gpu-type", "nvidia-l4-24gb"], engine("127.0.0.1")),
    ]);
  });
  afterAll(async () => {
    await Promise.all([prefill?.stop(), decode?.stop()]);
  });

  it("the prefill leg returns transfer params; the decode leg carrying them skips the prefill", async () => {
    const requestId = "pd-test-1";
    const prefillAnswer = await post(
      `${prefill.url}/v1/completions`,
      {
        model: MODEL,
        prompt: PROMPT,
        max_tokens: 1,
        stream: false,
        kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false, remote_engine_id: null, remote_block_ids: null, remote_host: null, remote_port: null },
      },
      { "X-Request-Id": requestId },
    );
    expect(prefillAnswer.status).toBe(200);
    const prefillBody = (await prefillAnswer.json()) as any;
    expect(prefillBody.usage.completion_tokens).toBe(1);
    const params = prefillBody.kv_transfer_params;
    const promptTokens = prefillBody.usage.prompt_tokens;
    expect(params).toMatchObject({
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_host: "127.0.0.5",
      remote_port: 5700,
      tp_size: 1,
      remote_request_id: requestId,
      remote_num_tokens: promptTokens,
    });
    expect(typeof params.remote_engine_id).toBe("string");
    expect(params.remote_block_ids).toHaveLength(1);
    expect(params.remote_block_ids[0]).toHaveLength(Math.ceil(promptTokens / 16));

    const sentAt = Date.now();
    const decoded = await readSse(
      await post(`${decode.url}/v1/completions`, { model: MODEL, prompt: PROMPT, max_tokens: 4, stream: true, kv_transfer_params: params }, { "X-Request-Id": requestId }),
      sentAt,
    );
    expect(decoded.events.at(-1)).toBe("data: [DONE]");
    expect(decoded.firstTextMs).toBeLessThan(REMOTE_TTFT_MS);
    const metrics = await scrape(decode.url);
    expect(metricValue(metrics, "vllm:external_prefix_cache_hits_total")).toBe(promptTokens);
    expect(metricValue(metrics, "vllm:prompt_tokens_by_source_total", { source: "external_kv_transfer" })).toBe(promptTokens);
  });

  it("a decode leg without transfer params pays the prefill and counts an external miss", async () => {
    const before = await scrape(decode.url);
    const sentAt = Date.now();
    const decoded = await readSse(await post(`${decode.url}/v1/completions`, { model: MODEL, prompt: "Again: " + PROMPT, max_tokens: 4, stream: true }), sentAt);
    expect(decoded.firstTextMs).toBeGreaterThan(LOCAL_PREFILL_MS);
    const after = await scrape(decode.url);
    const queried = metricValue(after, "vllm:external_prefix_cache_queries_total")! - metricValue(before, "vllm:external_prefix_cache_queries_total")!;
    expect(queried).toBeGreaterThan(1000);
    expect(metricValue(after, "vllm:external_prefix_cache_hits_total")).toBe(metricValue(before, "vllm:external_prefix_cache_hits_total"));
  });

  it("params missing NIXL's fields are invalid: the decode computes the prompt itself", async () => {
    const sentAt = Date.now();
    const decoded = await readSse(
      await post(`${decode.url}/v1/completions`, { model: MODEL, prompt: "Third: " + PROMPT, max_tokens: 2, stream: true, kv_transfer_params: { do_remote_prefill: true } }),
      sentAt,
    );
    expect(decoded.firstTextMs).toBeGreaterThan(LOCAL_PREFILL_MS);
    expect(decode.stdout()).toContain("Got invalid KVTransferParams");
  });
});

describe("SGLang PD with bootstrap host/port/room", () => {
  let prefill: SimProcess;
  let decode: SimProcess;
  let bootstrapPort: number;
  beforeAll(async () => {
    const engine = (mode: string) => [
      "python3", "-m", "sglang.launch_server", "--model-path", MODEL, "--host", "127.0.0.1", "--port", "0",
      "--disaggregation-mode", mode, "--disaggregation-bootstrap-port", "0", "--enable-metrics", "--context-length", "8192",
    ];
    [prefill, decode] = await Promise.all([
      startSim(["--gpu-type", "nvidia-l4-24gb"], engine("prefill")),
      startSim(["--gpu-type", "nvidia-l4-24gb"], engine("decode"), { SGLANG_DISAGGREGATION_WAITING_TIMEOUT: "1" }),
    ]);
    bootstrapPort = Number(prefill.logLine("bootstrap server")!.bootstrapPort);
  });
  afterAll(async () => {
    await Promise.all([prefill?.stop(), decode?.stop()]);
  });

  it("the prefill server's bootstrap listener answers /health on --host", async () => {
    const health = await fetch(`http://127.0.0.1:${bootstrapPort}/health`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe("OK");
  });

  it("decode waits for the matching prefill and skips its own; prefill answers once its KV was taken", async () => {
    const body = { model: MODEL, messages: [{ role: "user", content: PROMPT }], max_tokens: 4, stream: true, bootstrap_host: "127.0.0.1", bootstrap_port: bootstrapPort, bootstrap_room: 4242 };
    let prefillDone = false;
    const prefillLeg = post(`${prefill.url}/v1/chat/completions`, body).then(async (response) => {
      const text = await response.text();
      prefillDone = true;
      return { status: response.status, text };
    });
    // The prefill has run and holds its KV for the decode peer.
    await eventually(async () => (metricValue(await scrape(prefill.url), "sglang:num_prefill_inflight_queue_reqs") === 1 ? true : undefined));
    expect(prefillDone).toBe(false);

    const sentAt = Date.now();
    const decoded = await readSse(await post(`${decode.url}/v1/chat/completions`, body), sentAt);
    expect(decoded.firstTextMs).toBeLessThan(REMOTE_TTFT_MS);
    expect(decoded.events.at(-1)).toBe("data: [DONE]");
    const prefillAnswer = await prefillLeg;
    expect(prefillAnswer.status).toBe(200);
    expect(prefillAnswer.text).toContain("data: [DONE]");
    const metrics = await scrape(decode.url);
    expect(metricValue(metrics, "sglang:num_bootstrap_failed_reqs_total")).toBe(0);
    expect(metricValue(metrics, "sglang:num_running_reqs", { engine_type: "decode" })).toBe(0);
  });

  it("both legs sent at once, as a router does: the client gets the decode answer", async () => {
    const body = { model: MODEL, prompt: PROMPT, max_tokens: 3, bootstrap_host: "127.0.0.1", bootstrap_port: bootstrapPort, bootstrap_room: 777 };
    const [prefillAnswer, decodeAnswer] = await Promise.all([post(`${prefill.url}/v1/completions`, body), post(`${decode.url}/v1/completions`, body)]);
    expect(prefillAnswer.status).toBe(200);
    expect(decodeAnswer.status).toBe(200);
    expect(((await decodeAnswer.json()) as any).usage.completion_tokens).toBe(3);
    expect(((await prefillAnswer.json()) as any).usage.completion_tokens).toBe(1);
  });

  it("a decode whose prefill never ran falls back to computing the prompt and counts a bootstrap failure", async () => {
    const sentAt = Date.now();
    const answer = await post(`${decode.url}/v1/completions`, { model: MODEL, prompt: PROMPT, max_tokens: 2, bootstrap_host: "127.0.0.1", bootstrap_port: bootstrapPort, bootstrap_room: 1 });
    expect(answer.status).toBe(200);
    await answer.json();
    // One second of waiting for the room (SGLANG_DISAGGREGATION_WAITING_TIMEOUT=1), then a local prefill.
    expect(Date.now() - sentAt).toBeGreaterThan(1000 + LOCAL_PREFILL_MS);
    expect(metricValue(await scrape(decode.url), "sglang:num_bootstrap_failed_reqs_total")).toBe(1);
  });
});

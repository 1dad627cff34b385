// The router and the engine simulator as real processes (`berth router`, `berth sim-engine`):
// aggregated routing, vLLM-style and SGLang-style PD (the decode pays no prefill), and the
// elastic-EP resize 503 retried through.
import { afterEach, describe, expect, it } from "vitest";
import { closedPort } from "./support/fake-engine.ts";
import { tally } from "./support/harness.ts";
import { spawnBerth, type BerthProcess } from "./support/processes.ts";

const TOKEN = "sim-admin-token-0123456789";
const NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}';
const MODEL = "Qwen/Qwen3-8B";

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((stop) => stop()));
});

async function start(args: string[], ready?: RegExp): Promise<BerthProcess> {
  const process = await spawnBerth(args, { ready });
  cleanup.push(() => process.stop());
  return process;
}

function simVllm(extra: string[] = [], own: string[] = ["--zero-latency"]): Promise<BerthProcess> {
  return start(["sim-engine", ...own, "--", "vllm", "serve", MODEL, "--host", "127.0.0.1", "--port", "0", ...extra], /listening on/);
}

function simSglang(extra: string[]): Promise<BerthProcess> {
  return start(
    ["sim-engine", "--zero-latency", "--", "python3", "-m", "sglang.launch_server", "--model-path", MODEL, "--host", "127.0.0.1", "--port", "0", ...extra],
    /listening on/,
  );
}

async function router(flags: string[], endpoints: unknown[]): Promise<BerthProcess> {
  const process = await start(["router", "--port", "0", "--admin-token", TOKEN, ...flags]);
  const put = await fetch(`${process.url}/admin/endpoints`, {
    method: "PUT",
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ endpoints }),
  });
  expect(put.status).toBe(200);
  return process;
}

function chat(url: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

/** Sum of a metric's samples whose labels include `labels`. */
async function metric(url: string, name: string, labels = ""): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let total: number | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) || !line.includes(labels)) continue;
    total = (total ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

const prompt = "Describe, in detail, the harbour at dawn: the fishing boats, the gulls, the nets and the tide. ".repeat(8);

describe("router with sim-engine processes", () => {
  it("routes round-robin across two simulated vLLM servers, streaming and not", async () => {
    const [a, b] = await Promise.all([simVllm(), simVllm()]);
    const r = await router(["--policy", "round_robin"], [
      { id: "a", url: a.url, role: "server", state: "eligible" },
      { id: "b", url: b.url, role: "server", state: "eligible" },
    ]);
    const models = (await (await fetch(`${r.url}/v1/models`)).json()) as { data: { id: string; owned_by: string }[] };
    expect(models.data.map((card) => [card.id, card.owned_by])).toEqual([[MODEL, "berth-sim"]]);

    const answered: string[] = [];
    for (let i = 0; i < 10; i++) {
      const response = await chat(r.url, { model: MODEL, messages: [{ role: "user", content: `hello ${i}` }], max_tokens: 8, stream: i % 2 === 0 });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-berth-simulated")).toBe("true");
      const text = await response.text();
      if (i % 2 === 0) expect(text).toMatch(/^data: \{.*"chat\.completion\.chunk"[\s\S]*data: \[DONE\]\n\n$/);
      else expect((JSON.parse(text) as { choices: unknown[] }).choices.length).toBe(1);
      answered.push(response.headers.get("x-berth-upstream")!);
    }
    expect(tally(answered)).toEqual({ a: 5, b: 5 });
    expect((await chat(r.url, { model: "not/served", messages: [{ role: "user", content: "x" }] })).status).toBe(404);
    expect(await metric(a.url, "vllm:request_success_total")).toBe(5);
  });

  it("vLLM-style PD: the decode gets the prompt's KV from the prefill and computes none of it", async () => {
    const [prefill, decode] = await Promise.all([simVllm(["--kv-transfer-config", NIXL]), simVllm(["--kv-transfer-config", NIXL])]);
    const r = await router(["--engine", "vllm"], [
      { id: "p0", url: prefill.url, role: "prefill", state: "eligible" },
      { id: "d0", url: decode.url, role: "decode", state: "eligible" },
    ]);
    const response = await chat(r.url, { model: MODEL, messages: [{ role: "user", content: prompt }], max_tokens: 16, stream: true });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-upstream")).toBe("d0");
    expect(response.headers.get("x-berth-prefill")).toBe("p0");
    expect(await response.text()).toMatch(/data: \[DONE\]\n\n$/);

    const promptTokens = await metric(prefill.url, "vllm:prompt_tokens_total");
    expect(promptTokens).toBeGreaterThan(100);
    // Prefill computed the prompt; decode received all of it by KV transfer and computed nothing.
    expect(await metric(prefill.url, "vllm:prompt_tokens_by_source_total", 'source="local_compute"')).toBe(promptTokens);
    expect(await metric(decode.url, "vllm:prompt_tokens_by_source_total", 'source="external_kv_transfer"')).toBe(promptTokens);
    expect((await metric(decode.url, "vllm:prompt_tokens_by_source_total", 'source="local_compute"')) ?? 0).toBe(0);
    expect(await metric(decode.url, "vllm:generation_tokens_total")).toBe(16);
    expect(await metric(prefill.url, "vllm:generation_tokens_total")).toBe(1);
    expect(decode.stdout()).not.toMatch(/invalid KVTransferParams/);
  });

  it("SGLang-style PD: prefill and decode pair up through the bootstrap room", async () => {
    const bootstrapPort = await closedPort();
    const [prefill, decode] = await Promise.all([
      simSglang(["--disaggregation-mode", "prefill", "--disaggregation-bootstrap-port", String(bootstrapPort)]),
      simSglang(["--disaggregation-mode", "decode"]),
    ]);
    const r = await router(["--engine", "sglang"], [
      { id: "p0", url: prefill.url, role: "prefill", state: "eligible", bootstrapPort },
      { id: "d0", url: decode.url, role: "decode", state: "eligible" },
    ]);
    for (const stream of [false, true]) {
      const response = await chat(r.url, { model: MODEL, messages: [{ role: "user", content: prompt }], max_tokens: 12, stream });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-berth-upstream")).toBe("d0");
      await response.text();
    }
    // Each decode found its prefill's KV in the room (otherwise it logs and computes locally).
    expect(decode.stdout()).not.toMatch(/computing the prompt locally/);
  });

  it("retries through an elastic-EP resize: the engine's 503 is waited out on the same endpoint", async () => {
    const engine = await simVllm(
      ["--enable-expert-parallel", "--enable-eplb", "--enable-elastic-ep", "--data-parallel-backend", "ray", "-dp", "2"],
      ["--latency-profile", "fast", "--elastic-scale-seconds", "10"], // 1 s of real time
    );
    const r = await router([], [{ id: "ep", url: engine.url, role: "server", state: "eligible" }]);
    const resize = fetch(`${engine.url}/scale_elastic_ep`, { method: "POST", body: JSON.stringify({ new_data_parallel_size: 3 }) });
    const deadline = Date.now() + 5_000;
    while ((await fetch(`${engine.url}/v1/models`)).status !== 503 && Date.now() < deadline) await new Promise((s) => setTimeout(s, 20));
    const response = await chat(r.url, { model: MODEL, messages: [{ role: "user", content: "during the resize" }], max_tokens: 4 });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-upstream")).toBe("ep");
    expect((await resize).status).toBe(200);
    expect(await metric(r.url, "berth_router_upstream_errors_total", 'reason="scaling"')).toBeGreaterThanOrEqual(1);
  });
});

// Prefill/decode orchestration against recording upstreams: vLLM style (sequential, with
// kv_transfer_params), SGLang style (concurrent, with bootstrap fields), EPD's encoder
// step, and holds for a PD role at zero.
import { describe, expect, it } from "vitest";
import { closedPort, sleep, type FakeEngine } from "./support/fake-engine.ts";
import { chatBody, closedAfterEach, until } from "./support/harness.ts";

const { router, engine } = closedAfterEach();

function entry(e: FakeEngine, role: string, extra: Record<string, unknown> = {}) {
  return { id: e.name, url: e.url, role, state: "eligible", ...extra };
}

const NULL_KV = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
};

describe("vLLM-style PD", () => {
  it.each([false, true])("prefills with max_tokens 1, then decodes with the returned kv_transfer_params (stream %s)", async (stream) => {
    const prefill = await engine("p0");
    const decode = await engine("d0");
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [entry(prefill, "prefill"), entry(decode, "decode")] });
    const body = chatBody("explain KV transfer", {
      max_tokens: 64,
      max_completion_tokens: 64,
      stream,
      stream_options: { include_usage: true },
      min_tokens: 4,
      temperature: 0.2,
    });
    const response = await r.chat(body);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-upstream")).toBe("d0");
    expect(response.headers.get("x-berth-prefill")).toBe("p0");
    const text = await response.text();
    expect(text).toContain(stream ? "d0-0" : "hello from d0");

    const [p] = prefill.completions();
    const [d] = decode.completions();
    expect(p!.path).toBe("/v1/chat/completions");
    expect(p!.body).toEqual({
      model: "m",
      messages: body.messages,
      max_tokens: 1,
      max_completion_tokens: 1,
      stream: false,
      temperature: 0.2,
      kv_transfer_params: NULL_KV,
    });
    expect(d!.body).toEqual({
      ...body,
      kv_transfer_params: {
        do_remote_prefill: true,
        do_remote_decode: false,
        remote_engine_id: "engine-p0",
        remote_block_ids: [[1, 2, 3]],
        remote_host: "10.0.0.1",
        remote_port: 5600,
        remote_request_id: "req-p0",
      },
    });
    // One request id on both legs; decode starts only after prefill answered.
    expect(p!.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(d!.headers["x-request-id"]).toBe(p!.headers["x-request-id"]);
    expect(d!.receivedAt).toBeGreaterThanOrEqual(p!.receivedAt);
  });

  it("keeps the client's X-Request-Id on both legs", async () => {
    const prefill = await engine("p0");
    const decode = await engine("d0");
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [entry(prefill, "prefill"), entry(decode, "decode")] });
    await (await r.chat(chatBody("x"), { "x-request-id": "client-trace-7" })).text();
    expect(prefill.completions()[0]!.headers["x-request-id"]).toBe("client-trace-7");
    expect(decode.completions()[0]!.headers["x-request-id"]).toBe("client-trace-7");
  });

  it("passes a prefill error through and never calls decode", async () => {
    const prefill = await engine("p0", {
      behaviour: (_request, res) => {
        res.writeHead(400, { "content-type": "application/json" });
        res.end('{"error":{"message":"prompt too long","code":400}}');
      },
    });
    const decode = await engine("d0");
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [entry(prefill, "prefill"), entry(decode, "decode")] });
    const response = await r.chat(chatBody("x"));
    expect(response.status).toBe(400);
    expect(response.headers.get("x-berth-upstream")).toBe("p0");
    expect(await response.text()).toBe('{"error":{"message":"prompt too long","code":400}}');
    expect(decode.completions()).toEqual([]);
  });

  it("sends the original request to decode when prefill returns no kv_transfer_params", async () => {
    const prefill = await engine("p0", {
      behaviour: (_request, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"choices":[]}');
      },
    });
    const decode = await engine("d0");
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [entry(prefill, "prefill"), entry(decode, "decode")] });
    const body = chatBody("x", { max_tokens: 9 });
    expect((await r.chat(body)).status).toBe(200);
    expect(decode.completions()[0]!.raw).toBe(JSON.stringify(body));
    expect(await r.metrics()).toMatch(/berth_router_upstream_errors_total\{endpoint="p0",reason="bad_prefill_answer",status="200"\} 1/);
  });

  it("retries the prefill leg on another prefill endpoint before any byte", async () => {
    const port = await closedPort();
    const prefill = await engine("p1");
    const decode = await engine("d0");
    const r = await router(["--engine", "vllm", "--policy", "round_robin"]);
    await r.put({
      endpoints: [{ id: "p-dead", url: `http://127.0.0.1:${port}`, role: "prefill", state: "eligible" }, entry(prefill, "prefill"), entry(decode, "decode")],
    });
    for (let i = 0; i < 3; i++) {
      const response = await r.chat(chatBody(`q${i}`));
      expect(response.status).toBe(200);
      expect(response.headers.get("x-berth-prefill")).toBe("p1");
      await response.text();
    }
  });

  it("counts each leg in flight on its own endpoint", async () => {
    const waiting: (() => void)[] = [];
    const prefill = await engine("p0");
    const decode = await engine("d0", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: {}\n\n");
        await new Promise<void>((resolve) => waiting.push(resolve));
        res.end("data: [DONE]\n\n");
      },
    });
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [entry(prefill, "prefill"), entry(decode, "decode")] });
    const response = await r.chat(chatBody("x", { stream: true }));
    const view = await r.endpoints();
    expect(view.endpoints.map((e) => [e.id, e.inFlight])).toEqual([
      ["p0", 0], // prefill finished: a prefill replica drains on the router's own count
      ["d0", 1],
    ]);
    for (const release of waiting) release();
    await response.text();
  });
});

describe("SGLang-style PD", () => {
  it("sends one body with bootstrap_host/port/room to prefill and decode at once", async () => {
    // The prefill answers late: a sequential router would reach decode only after it.
    const prefill = await engine("p0", { delayMs: 300 });
    const decode = await engine("d0");
    const r = await router(["--engine", "sglang"]);
    await r.put({ endpoints: [entry(prefill, "prefill", { bootstrapPort: 9123 }), entry(decode, "decode")] });
    const body = chatBody("x", { max_tokens: 32, stream: true });
    const started = Date.now();
    const response = await r.chat(body);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-upstream")).toBe("d0");
    expect(response.headers.get("x-berth-prefill")).toBe("p0");
    expect(await response.text()).toContain("d0-0");
    expect(Date.now() - started).toBeLessThan(1_000);

    await until(() => prefill.completions().length === 1);
    const [p] = prefill.completions();
    const [d] = decode.completions();
    expect(p!.raw).toBe(d!.raw); // the same bytes, room included
    const room = /"bootstrap_room":(\d+)\}$/.exec(p!.raw)![1]!;
    expect(BigInt(room)).toBeLessThan(2n ** 63n);
    expect(p!.body).toMatchObject({ ...body, bootstrap_host: "127.0.0.1", bootstrap_port: 9123 });
    expect(p!.body.max_tokens).toBe(32); // not reduced, unlike vLLM
    expect(Math.abs(d!.receivedAt - p!.receivedAt)).toBeLessThan(200);
    expect(p!.headers["x-request-id"]).toBe(d!.headers["x-request-id"]);
  });

  it("uses 8998 when the prefill endpoint names no bootstrap port, and a fresh room per request", async () => {
    const prefill = await engine("p0");
    const decode = await engine("d0");
    const r = await router(["--engine", "sglang"]);
    await r.put({ endpoints: [entry(prefill, "prefill"), entry(decode, "decode")] });
    for (let i = 0; i < 5; i++) await (await r.chat(chatBody(`q${i}`))).text();
    await until(() => prefill.completions().length === 5);
    const rooms = new Set(decode.completions().map((request) => /"bootstrap_room":(\d+)/.exec(request.raw)![1]));
    expect(rooms.size).toBe(5);
    for (const request of decode.completions()) expect(request.body.bootstrap_port).toBe(8998);
  });

  it("cancels the decode and retries the pair when the prefill cannot be reached", async () => {
    const port = await closedPort();
    const prefill = await engine("p1");
    const decode = await engine("d0", {
      // A real decode waits for its KV; this one waits until cancelled or 300 ms.
      behaviour: async (request, res) => {
        await sleep(300);
        if (res.destroyed) return;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ room: /"bootstrap_room":(\d+)/.exec(request.raw)![1] }));
      },
    });
    const r = await router(["--engine", "sglang", "--policy", "round_robin"]);
    await r.put({
      endpoints: [{ id: "p-dead", url: `http://127.0.0.1:${port}`, role: "prefill", state: "eligible" }, entry(prefill, "prefill"), entry(decode, "decode")],
    });
    const response = await r.chat(chatBody("x"));
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-prefill")).toBe("p1");
    const answered = (await response.json()) as { room: string };
    expect(await r.metrics()).toMatch(/berth_router_upstream_errors_total\{endpoint="p-dead",reason="connect",status=""\} 1/);
    // The first decode was cancelled (it may not even have reached the engine); the answer
    // came from the retried pair, whose room is the one the live prefill got.
    expect(answered.room).toBe(/"bootstrap_room":(\d+)/.exec(prefill.completions()[0]!.raw)![1]);
    await until(() => decode.open === 0);
    expect(decode.completions().length - decode.cancelled).toBe(1);
  });
});

describe("EPD", () => {
  const imageMessage = {
    role: "user",
    content: [
      { type: "text", text: "What is in this picture?" },
      { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
    ],
  };

  it("sends a request with an image to an encoder first, then prefill and decode", async () => {
    const encoder = await engine("e0");
    const prefill = await engine("p0");
    const decode = await engine("d0");
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [entry(encoder, "encode"), entry(prefill, "prefill"), entry(decode, "decode")] });
    const response = await r.chat({ model: "m", messages: [imageMessage], max_tokens: 20, stream: true });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-upstream")).toBe("d0");
    expect(response.headers.get("x-berth-encoder")).toBe("e0");
    await response.text();
    const [e] = encoder.completions();
    expect(e!.path).toBe("/v1/chat/completions");
    expect(e!.body).toEqual({ model: "m", messages: [imageMessage], max_tokens: 1, stream: false });
    const requestId = e!.headers["x-request-id"];
    expect(prefill.completions()[0]!.headers["x-request-id"]).toBe(requestId);
    expect(decode.completions()[0]!.headers["x-request-id"]).toBe(requestId);
    expect(prefill.completions()[0]!.receivedAt).toBeGreaterThanOrEqual(e!.receivedAt);

    // Text only: no encoder call.
    await (await r.chat(chatBody("plain text"))).text();
    expect(encoder.completions().length).toBe(1);
  });

  it("passes an encoder error through", async () => {
    const encoder = await engine("e0", {
      behaviour: (_request, res) => {
        res.writeHead(422, { "content-type": "application/json" });
        res.end('{"error":"unsupported image"}');
      },
    });
    const prefill = await engine("p0");
    const decode = await engine("d0");
    const r = await router(["--engine", "sglang"]);
    await r.put({ endpoints: [entry(encoder, "encode"), entry(prefill, "prefill"), entry(decode, "decode")] });
    const response = await r.chat({ model: "m", messages: [imageMessage] });
    expect(response.status).toBe(422);
    expect(response.headers.get("x-berth-upstream")).toBe("e0");
    expect(prefill.completions()).toEqual([]);
  });

  it("answers 503 at once when encoders exist but none is eligible", async () => {
    const encoder = await engine("e0");
    const prefill = await engine("p0");
    const decode = await engine("d0");
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [{ ...entry(encoder, "encode"), state: "draining" }, entry(prefill, "prefill"), entry(decode, "decode")] });
    const response = await r.chat({ model: "m", messages: [imageMessage] });
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/No eligible encode endpoint/);
    expect((await r.chat(chatBody("text still works"))).status).toBe(200);
  });
});

describe("PD holds", () => {
  it("holds while the decode role has no endpoints in scale-to-zero mode, then serves", async () => {
    const prefill = await engine("p0");
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [entry(prefill, "prefill")], holdWhenEmpty: true });
    const pending = r.chat(chatBody("x"));
    await until(async () => (await r.endpoints()).held === 1);
    const decode = await engine("d0");
    await r.put({ endpoints: [entry(prefill, "prefill"), entry(decode, "decode")], holdWhenEmpty: true });
    const response = await pending;
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-upstream")).toBe("d0");
  });

  it("answers 503 for a PD role at zero when holding is off", async () => {
    const prefill = await engine("p0");
    const r = await router(["--engine", "vllm"]);
    await r.put({ endpoints: [entry(prefill, "prefill")] });
    const response = await r.chat(chatBody("x"));
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe("No decode endpoints are configured.");
  });
});

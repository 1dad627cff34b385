// The proxy path with real sockets: byte-for-byte streaming, backpressure, cancellation both
// ways, retries only before the first byte, the elastic-resize 503, timeouts, draining,
// 503 when nothing is eligible, and scale-to-zero holds.
import http from "node:http";
import { describe, expect, it } from "vitest";
import { closedPort, sleep, type Behaviour, type FakeEngine } from "./support/fake-engine.ts";
import { chatBody, closedAfterEach, tally, until, upstreamOf } from "./support/harness.ts";

const { router, engine } = closedAfterEach();

function servers(...engines: (FakeEngine | { name: string; url: string })[]): unknown {
  return { endpoints: engines.map((e) => ({ id: e.name, url: e.url, role: "server", state: "eligible" })) };
}

/** A raw POST whose response the test reads (or does not read) at its own pace. */
function rawPost(url: string, body: string): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" } });
    req.on("response", (res) => resolve({ req, res }));
    req.on("error", reject);
    req.end(body);
  });
}

const SCALING_ANSWER: Behaviour = (_request, res) => {
  res.writeHead(503, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: "The model is currently scaling. Please try again later." }));
};

describe("streaming", () => {
  it("passes the upstream's bytes through unchanged, whatever the chunking, with x-berth-upstream", async () => {
    // Multi-byte characters split across chunks, CRLFs, a partial event at a chunk edge.
    const payload = Buffer.from(
      'data: {"content":"héllo 漢字 🙂"}\r\n\r\ndata: {"content":"tail"}\n\n: comment\n\ndata: [DONE]\n\n',
      "utf8",
    );
    const cuts = [1, 7, 19, 20, 21, 33, 34, 60];
    const upstream = await engine("bytes", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream", "x-engine-header": "kept" });
        let from = 0;
        for (const cut of [...cuts, payload.length]) {
          res.write(payload.subarray(from, cut));
          from = cut;
          await sleep(3);
        }
        res.end();
      },
    });
    const r = await router();
    await r.put(servers(upstream));
    const response = await r.chat(chatBody("hi", { stream: true }));
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-upstream")).toBe("bytes");
    expect(response.headers.get("x-engine-header")).toBe("kept");
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(Buffer.from(await response.arrayBuffer()).equals(payload)).toBe(true);
    // The body went upstream unchanged too.
    expect(upstream.completions()[0]!.raw).toBe(JSON.stringify(chatBody("hi", { stream: true })));
  });

  it("applies backpressure: a client that stops reading stops the upstream", async () => {
    const total = 256 * 1024 * 1024;
    let written = 0;
    const upstream = await engine("firehose", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        const chunk = Buffer.alloc(64 * 1024, 120);
        while (written < total && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) {
            await new Promise<void>((resolve) => {
              const done = () => {
                res.off("drain", done).off("close", done);
                resolve();
              };
              res.on("drain", done).on("close", done);
            });
          }
        }
        res.end();
      },
    });
    const r = await router();
    await r.put(servers(upstream));
    const { req, res } = await rawPost(r.url, JSON.stringify(chatBody("go")));
    res.pause(); // read nothing
    await sleep(800);
    const stalledAt = written;
    await sleep(400);
    // Only socket and stream buffers fill; the upstream is held at that point, far below the total.
    expect(written).toBe(stalledAt);
    expect(written).toBeLessThan(32 * 1024 * 1024);
    req.destroy();
    await until(() => upstream.cancelled === 1);
  });

  it("cancels the upstream request when the client disconnects mid-stream", async () => {
    const upstream = await engine("endless", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (let i = 0; i < 10_000 && !res.destroyed; i++) {
          res.write(`data: {"token":${i}}\n\n`);
          await sleep(10);
        }
        res.end();
      },
    });
    const r = await router();
    await r.put(servers(upstream));
    const { req, res } = await rawPost(r.url, JSON.stringify(chatBody("go", { stream: true })));
    await new Promise((resolve) => res.once("data", resolve));
    expect((await r.endpoints()).endpoints[0]!.inFlight).toBe(1);
    req.destroy();
    await until(() => upstream.cancelled === 1 && upstream.open === 0, 2_000);
    await until(async () => (await r.endpoints()).endpoints[0]!.inFlight === 0, 2_000);
  });

  it("ends an SSE stream with an error event when the upstream dies mid-stream", async () => {
    const upstream = await engine("dies", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write('data: {"token":1}\n\n');
        await sleep(20);
        res.write('data: {"tok'); // half an event, then the connection drops
        await sleep(20);
        res.socket?.destroy();
      },
    });
    const r = await router();
    await r.put(servers(upstream));
    const started = Date.now();
    const response = await r.chat(chatBody("go", { stream: true }));
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(text.startsWith('data: {"token":1}\n\ndata: {"tok\n\ndata: {"error":')).toBe(true);
    const event = JSON.parse(text.trim().split("\n").at(-1)!.slice("data: ".length)) as { error: { code: number; message: string } };
    expect(event.error.code).toBe(502);
    expect(event.error.message).toMatch(/closed the stream/);
    expect(await r.metrics()).toMatch(/berth_router_upstream_errors_total\{endpoint="dies",reason="mid_stream",status="200"\} 1/);
  });

  it("breaks a JSON answer's connection when the upstream dies mid-body (never a hang)", async () => {
    const upstream = await engine("dies-json", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
        res.write('{"partial":');
        await sleep(20);
        res.socket?.destroy();
      },
    });
    const r = await router();
    await r.put(servers(upstream));
    const response = await r.chat(chatBody("go"));
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it("passes upstream 4xx errors through unchanged", async () => {
    const upstream = await engine("picky", {
      behaviour: (_request, res) => {
        res.writeHead(400, { "content-type": "application/json" });
        res.end('{"error":{"message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}}');
      },
    });
    const r = await router();
    await r.put(servers(upstream));
    const response = await r.chat(chatBody("x"));
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-berth-upstream")).toBe("picky");
    expect(await response.text()).toBe('{"error":{"message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}}');
  });
});

describe("retries", () => {
  it("retries on another endpoint when one refuses connections, then skips it for the cool-down", async () => {
    const good = await engine("good");
    const r = await router(["--policy", "round_robin", "--unreachable-cooldown", "0.5"]);
    const deadPort = await closedPort();
    // The dead endpoint's model list cannot be read; it is assumed to serve and tried in turn.
    await r.put(servers({ name: "dead", url: `http://127.0.0.1:${deadPort}` }, good));
    const answered = [];
    for (let i = 0; i < 6; i++) {
      const response = await r.chat(chatBody(`q${i}`));
      expect(response.status).toBe(200);
      answered.push(await upstreamOf(response));
    }
    expect(tally(answered)).toEqual({ good: 6 });
    const connectErrors = async () =>
      Number(/berth_router_upstream_errors_total\{endpoint="dead",reason="connect",status=""\} (\d+)/.exec(await r.metrics())?.[1]);
    expect(await connectErrors()).toBe(1); // tried once, then skipped while cooling down
    expect(await r.metrics()).toMatch(/berth_router_retries_total\{endpoint="dead",reason="connect"\} 1/);
    await sleep(600);
    for (let i = 0; i < 2; i++) expect(await upstreamOf(await r.chat(chatBody(`later ${i}`)))).toBe("good");
    expect(await connectErrors()).toBe(2); // tried again after the cool-down
  });

  it("tries a cooling endpoint when it is the only one left", async () => {
    const r = await router(["--unreachable-cooldown", "60"]);
    const port = await closedPort();
    await r.put(servers({ name: "dead", url: `http://127.0.0.1:${port}` }));
    expect((await r.chat(chatBody("1"))).status).toBe(502);
    expect((await r.chat(chatBody("2"))).status).toBe(502);
    expect(await r.metrics()).toMatch(/berth_router_upstream_errors_total\{endpoint="dead",reason="connect",status=""\} 2/);
  });

  it("never waits on an address that does not answer longer than the connect timeout", async () => {
    const good = await engine("good");
    const r = await router(["--policy", "round_robin", "--connect-timeout", "0.3", "--models-timeout", "0.3"]);
    // TEST-NET-1 (RFC 5737): never routed; the SYN is dropped or refused at once.
    await r.put(servers({ name: "void", url: "http://192.0.2.1:8000" }, good));
    const started = Date.now();
    for (let i = 0; i < 2; i++) expect(await upstreamOf(await r.chat(chatBody(`q${i}`)))).toBe("good");
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("retries a 5xx answer on another endpoint before any byte reached the client", async () => {
    const broken = await engine("broken", {
      behaviour: (_request, res) => {
        res.writeHead(500, { "content-type": "application/json" });
        res.end('{"error":"boom"}');
      },
    });
    const good = await engine("good");
    const r = await router(["--policy", "round_robin"]);
    await r.put(servers(broken, good));
    for (let i = 0; i < 4; i++) expect(await upstreamOf(await r.chat(chatBody(`q${i}`)))).toBe("good");
    expect(broken.completions().length).toBeGreaterThanOrEqual(1);
  });

  it("passes the last 5xx through when no other endpoint is left, and 502s when none answered", async () => {
    const broken = await engine("broken", {
      behaviour: (_request, res) => {
        res.writeHead(500, { "content-type": "application/json", "x-why": "engine" });
        res.end('{"error":"boom"}');
      },
    });
    const r = await router();
    await r.put(servers(broken));
    const response = await r.chat(chatBody("x"));
    expect(response.status).toBe(500);
    expect(response.headers.get("x-why")).toBe("engine");
    expect(response.headers.get("x-berth-upstream")).toBe("broken");
    expect(await response.text()).toBe('{"error":"boom"}');

    const port = await closedPort();
    await r.put(servers({ name: "gone", url: `http://127.0.0.1:${port}` }));
    const refused = await r.chat(chatBody("x"));
    expect(refused.status).toBe(502);
    expect(refused.headers.get("content-type")).toBe("application/json");
    expect(await refused.json()).toMatchObject({ error: { type: "bad_gateway", code: "bad_gateway", param: null } });
  });

  it("does not retry once the answer has started", async () => {
    const partial = await engine("partial", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: {}\n\n");
        await sleep(10);
        res.socket?.destroy();
      },
    });
    const good = await engine("good");
    const r = await router(["--policy", "round_robin"]);
    await r.put(servers(partial, good));
    const response = await r.chat(chatBody("x", { stream: true }));
    expect(response.headers.get("x-berth-upstream")).toBe("partial");
    expect(await response.text()).toMatch(/"error"/);
    expect(good.completions().length).toBe(0);
  });

  it("retries the same endpoint while it answers an elastic-resize 503, then serves", async () => {
    let scalingLeft = 2;
    const resizing = await engine("resizing", {
      behaviour: (request, res, req) => {
        if (scalingLeft-- > 0) return SCALING_ANSWER(request, res, req);
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"ok":true}');
      },
    });
    const other = await engine("other");
    const r = await router(["--policy", "round_robin"]);
    await r.put(servers(resizing, other));
    const response = await r.chat(chatBody("x"));
    expect(response.status).toBe(200);
    expect(response.headers.get("x-berth-upstream")).toBe("resizing");
    expect(resizing.completions().length).toBe(3);
    expect(other.completions().length).toBe(0);
    expect(await r.metrics()).toMatch(/berth_router_upstream_errors_total\{endpoint="resizing",reason="scaling",status="503"\} 2/);
  });

  it("bounds the elastic-resize wait, then answers its own OpenAI-shaped 503 with Retry-After", async () => {
    const resizing = await engine("resizing", { behaviour: SCALING_ANSWER });
    const r = await router(["--scaling-retry-timeout", "0.6"]);
    await r.put(servers(resizing));
    const started = Date.now();
    const response = await r.chat(chatBody("x"));
    const elapsed = Date.now() - started;
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("retry-after")).toBe("5");
    const body = (await response.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("unavailable");
    expect(body.error.message).toMatch(/resizing was still resizing after \d+ s/);
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(2_000);
    expect(resizing.completions().length).toBeGreaterThanOrEqual(2);
  });
});

describe("timeouts", () => {
  it("answers an OpenAI-shaped 504 when the upstream does not answer in time, and cancels it", async () => {
    const stuck = await engine("stuck", { behaviour: () => new Promise(() => {}) });
    const r = await router(["--request-timeout", "0.3"]);
    await r.put(servers(stuck));
    const started = Date.now();
    const response = await r.chat(chatBody("x"));
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ error: { type: "gateway_timeout", code: "gateway_timeout" } });
    expect(Date.now() - started).toBeLessThan(1_500);
    await until(() => stuck.cancelled === 1);
  });

  it("ends a stalled SSE stream with an error event at the timeout", async () => {
    const stalls = await engine("stalls", {
      behaviour: (_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write('data: {"token":1}\n\n');
      },
    });
    const r = await router(["--request-timeout", "0.4"]);
    await r.put(servers(stalls));
    const response = await r.chat(chatBody("x", { stream: true }));
    const text = await response.text();
    expect(text).toMatch(/^data: \{"token":1\}\n\ndata: \{"error":\{"message":"The request timed out[^"]*","type":"upstream_error","code":504\}\}\n\n$/);
    await until(() => stalls.cancelled === 1);
  });
});

describe("draining and availability", () => {
  it("sends no new requests to a draining endpoint while its in-flight ones finish", async () => {
    let release: () => void = () => {};
    const slow = await engine("slow", {
      behaviour: async (_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: {}\n\n");
        await new Promise<void>((resolve) => (release = resolve));
        res.end("data: [DONE]\n\n");
      },
    });
    const other = await engine("other");
    const r = await router(["--policy", "round_robin"]);
    await r.put(servers(slow, other));
    const inFlight = await r.chat(chatBody("long", { stream: true }));
    expect(inFlight.headers.get("x-berth-upstream")).toBe("slow");

    const drain = await r.put({
      endpoints: [
        { id: "slow", url: slow.url, role: "server", state: "draining" },
        { id: "other", url: other.url, role: "server", state: "eligible" },
      ],
    });
    expect(drain.status).toBe(200);
    const view = (await drain.json()) as { endpoints: { id: string; state: string; inFlight: number }[] };
    expect(view.endpoints.find((e) => e.id === "slow")).toMatchObject({ state: "draining", inFlight: 1 });

    for (let i = 0; i < 6; i++) expect(await upstreamOf(await r.chat(chatBody(`q${i}`)))).toBe("other");
    expect(slow.completions().length).toBe(1);

    release();
    expect(await inFlight.text()).toBe("data: {}\n\ndata: [DONE]\n\n");
    await until(async () => (await r.endpoints()).endpoints.find((e) => e.id === "slow")!.inFlight === 0);
  });

  it("answers 503 with Retry-After at once when endpoints are configured but none is eligible", async () => {
    const a = await engine("a");
    const r = await router();
    await r.put({ endpoints: [{ id: "a", url: a.url, role: "server", state: "draining" }] });
    const started = Date.now();
    const response = await r.chat(chatBody("x"));
    expect(Date.now() - started).toBeLessThan(500);
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("2");
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toMatchObject({
      error: { type: "unavailable", code: "unavailable", param: null, message: 'No eligible server endpoint serves model "m" (1 configured, 1 draining).' },
    });
    expect(a.completions().length).toBe(0);
  });

  it("answers 503 at once when no endpoints are configured and holding is off", async () => {
    const r = await router();
    const response = await r.chat(chatBody("x"));
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
  });
});

describe("scale-to-zero holds", () => {
  it("holds requests while there are no endpoints and releases them when endpoints appear", async () => {
    const r = await router();
    await r.put({ endpoints: [], holdWhenEmpty: true });
    const pending = Promise.all([r.chat(chatBody("one")), r.chat(chatBody("two", { stream: true }))]);
    await until(async () => (await r.endpoints()).held === 2);
    expect(await r.metrics()).toMatch(/berth_router_held_requests 2/);
    const woken = await engine("woken");
    await r.put({ ...(servers(woken) as object), holdWhenEmpty: true });
    const answers = await pending;
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-berth-upstream")).toBe("woken");
      await answer.arrayBuffer();
    }
    expect((await r.endpoints()).held).toBe(0);
  });

  it("bounds a hold in time and in count", async () => {
    const r = await router(["--hold-timeout", "0.3", "--hold-max", "1"]);
    await r.put({ endpoints: [], holdWhenEmpty: true });
    const started = Date.now();
    const first = r.chat(chatBody("held"));
    await until(async () => (await r.endpoints()).held === 1);
    const second = await r.chat(chatBody("no room"));
    expect(second.status).toBe(503);
    expect(((await second.json()) as { error: { message: string } }).error.message).toMatch(/Too many requests/);
    const timedOut = await first;
    expect(timedOut.status).toBe(503);
    expect(timedOut.headers.get("retry-after")).toBe("5");
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(((await timedOut.json()) as { error: { message: string } }).error.message).toMatch(/hold timeout/);
  });

  it("drops a held request whose client leaves", async () => {
    const r = await router();
    await r.put({ endpoints: [], holdWhenEmpty: true });
    const controller = new AbortController();
    const request = r.chat(chatBody("bye")).catch(() => "aborted");
    void request;
    const aborted = fetch(`${r.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify(chatBody("bye")),
      signal: controller.signal,
    }).catch(() => "aborted");
    await until(async () => (await r.endpoints()).held === 2);
    controller.abort();
    expect(await aborted).toBe("aborted");
    await until(async () => (await r.endpoints()).held === 1);
    await r.put({ endpoints: [], holdWhenEmpty: false }); // released held requests now get 503
    expect(((await request) as Response).status).toBe(503);
  });
});

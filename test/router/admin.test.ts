// The admin API: auth (401 everywhere but /admin/health), validation with JSON pointers,
// the model union read before PUT answers, in-flight counts, and /v1/models.
import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, chatBody, closedAfterEach, upstreamOf } from "./support/harness.ts";

const { router, engine } = closedAfterEach();

describe("admin auth", () => {
  it.each([
    { method: "GET", path: "/admin/endpoints", authorization: undefined },
    { method: "PUT", path: "/admin/endpoints", authorization: undefined },
    { method: "GET", path: "/admin/endpoints", authorization: "Bearer wrong-token-wrong-token" },
    { method: "GET", path: "/admin/endpoints", authorization: `Basic ${ADMIN_TOKEN}` },
    { method: "GET", path: "/admin/endpoints", authorization: `Bearer ${ADMIN_TOKEN}x` },
    { method: "GET", path: "/admin/anything-else", authorization: undefined },
  ])("$method $path with $authorization → 401 problem", async ({ method, path, authorization }) => {
    const r = await router();
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (authorization) headers.authorization = authorization;
    const response = await fetch(`${r.url}${path}`, { method, headers, body: method === "PUT" ? '{"endpoints":[]}' : undefined });
    expect(response.status).toBe(401);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await response.json()).toMatchObject({ type: "https://berth.dev/problems/unauthorized", status: 401, title: "Authentication required" });
  });

  it("serves /admin/health without a token", async () => {
    const r = await router();
    const response = await fetch(`${r.url}/admin/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

  it("answers 404 and 405 on unknown admin resources and methods, with the token", async () => {
    const r = await router();
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    expect((await fetch(`${r.url}/admin/nope`, { headers })).status).toBe(404);
    const post = await fetch(`${r.url}/admin/endpoints`, { method: "POST", headers, body: "{}" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, PUT");
  });
});

describe("PUT /admin/endpoints validation", () => {
  it.each([
    { name: "not JSON", body: "{", status: 400, type: "malformed-body", errors: undefined },
    { name: "no endpoints", body: "{}", status: 400, type: "invalid-request", errors: [{ pointer: "/endpoints" }] },
    {
      name: "a bad url and role",
      body: JSON.stringify({ endpoints: [{ id: "a", url: "ftp://x", role: "leader", state: "eligible" }] }),
      status: 400,
      type: "invalid-request",
      errors: [{ pointer: "/endpoints/0/url" }, { pointer: "/endpoints/0/role" }],
    },
    {
      name: "an unknown field",
      body: JSON.stringify({ endpoints: [{ id: "a", url: "http://127.0.0.1:1", role: "server", state: "eligible", bootstrap_port: 1 }] }),
      status: 400,
      type: "invalid-request",
      errors: [{ pointer: "/endpoints/0" }],
    },
    {
      name: "a bad state and port",
      body: JSON.stringify({ endpoints: [{ id: "a", url: "http://127.0.0.1:1", role: "prefill", state: "gone", bootstrapPort: 70000 }] }),
      status: 400,
      type: "invalid-request",
      errors: [{ pointer: "/endpoints/0/state" }, { pointer: "/endpoints/0/bootstrapPort" }],
    },
    {
      name: "duplicate ids",
      body: JSON.stringify({
        endpoints: [
          { id: "a", url: "http://127.0.0.1:1", role: "server", state: "eligible" },
          { id: "a", url: "http://127.0.0.1:2", role: "server", state: "eligible" },
        ],
      }),
      status: 400,
      type: "invalid-request",
      errors: [{ pointer: "/endpoints/1/id" }],
    },
    {
      name: "server mixed with prefill",
      body: JSON.stringify({
        endpoints: [
          { id: "a", url: "http://127.0.0.1:1", role: "server", state: "eligible" },
          { id: "b", url: "http://127.0.0.1:2", role: "prefill", state: "eligible" },
        ],
      }),
      status: 400,
      type: "invalid-request",
      errors: [{ pointer: "/endpoints/1/role" }],
    },
    ...[0, 1025, 1.5, "4"].map((ranks) => ({
      name: `ranks ${JSON.stringify(ranks)}`,
      body: JSON.stringify({ endpoints: [{ id: "a", url: "http://127.0.0.1:1", role: "server", state: "eligible", ranks }] }),
      status: 400,
      type: "invalid-request",
      errors: [{ pointer: "/endpoints/0/ranks", detail: "must be a whole number of data-parallel engines from 1 to 1024" }],
    })),
  ])("refuses $name", async ({ body, status, type, errors }) => {
    const r = await router();
    const response = await fetch(`${r.url}/admin/endpoints`, {
      method: "PUT",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body,
    });
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    const problem = (await response.json()) as { type: string; errors?: { pointer: string; detail: string }[] };
    expect(problem.type).toBe(`https://berth.dev/problems/${type}`);
    if (errors) expect(problem.errors).toEqual(errors.map((error) => expect.objectContaining(error)));
    expect((await r.endpoints()).endpoints).toEqual([]); // nothing applied
  });
});

describe("model union", () => {
  it("reads every endpoint's /v1/models before PUT answers and routes each model to its endpoints", async () => {
    const chat = await engine("chat", { models: ["org/chat", "org/chat-alias"] });
    const code = await engine("code", { models: ["org/code"] });
    const spare = await engine("spare", { models: ["org/spare"] });
    const r = await router();
    const put = await r.put({
      endpoints: [
        { id: "chat", url: chat.url, role: "server", state: "eligible", rank: 0 },
        { id: "code", url: code.url, role: "server", state: "eligible" },
        { id: "spare", url: spare.url, role: "server", state: "draining" },
      ],
    });
    expect(put.status).toBe(200);
    const view = (await put.json()) as { models: string[]; endpoints: { id: string; models: string[]; rank?: number }[] };
    expect(view.models).toEqual(["org/chat", "org/chat-alias", "org/code", "org/spare"]);
    expect(view.endpoints[0]).toMatchObject({ id: "chat", rank: 0, models: ["org/chat", "org/chat-alias"], inFlight: 0 });
    for (const e of [chat, code, spare]) expect(e.requests[0]!.path).toBe("/v1/models");

    const models = (await (await fetch(`${r.url}/v1/models`)).json()) as { object: string; data: { id: string; max_model_len: number }[] };
    expect(models.object).toBe("list");
    expect(models.data.map((card) => card.id)).toEqual(["org/chat", "org/chat-alias", "org/code", "org/spare"]);
    expect(models.data[0]!.max_model_len).toBe(4096); // the engine's card, passed on

    for (let i = 0; i < 3; i++) {
      expect(await upstreamOf(await r.chat(chatBody("x", { model: "org/code" })))).toBe("code");
      expect(await upstreamOf(await r.chat(chatBody("x", { model: "org/chat-alias" })))).toBe("chat");
    }

    const drained = await r.chat(chatBody("x", { model: "org/spare" }));
    expect(drained.status).toBe(503); // listed, but its only endpoint drains
    expect(drained.headers.get("retry-after")).toBe("2");

    const unknown = await r.chat(chatBody("x", { model: "org/unknown" }));
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      error: {
        type: "model_not_found",
        param: "model",
        message: 'The model "org/unknown" is not served here; the models are "org/chat", "org/chat-alias", "org/code", "org/spare".',
      },
    });
  });

  it("reports ranks where given and keeps them across an in-place update", async () => {
    const a = await engine("a");
    const b = await engine("b");
    const r = await router();
    const entries = [
      { id: "a", url: a.url, role: "server", state: "eligible", ranks: 1 },
      { id: "b", url: b.url, role: "server", state: "eligible" },
    ];
    const put = await r.put({ endpoints: entries });
    expect(put.status).toBe(200);
    const first = (await put.json()) as { endpoints: object[] };
    expect(first.endpoints[0]).toMatchObject({ id: "a", ranks: 1 });
    expect(first.endpoints[1]).not.toHaveProperty("ranks");

    await r.put({ endpoints: [{ ...entries[0], ranks: 1024 }, entries[1]] });
    const view = (await r.endpoints()) as { endpoints: object[] };
    expect(view.endpoints[0]).toMatchObject({ id: "a", ranks: 1024 });
    expect(a.requests.filter((request) => request.path === "/v1/models").length).toBe(1); // updated in place
  });

  it("does not re-read the models of an unchanged endpoint on a later push", async () => {
    const a = await engine("a");
    const r = await router();
    const entry = { id: "a", url: a.url, role: "server", state: "eligible" };
    await r.put({ endpoints: [entry] });
    await r.put({ endpoints: [{ ...entry, state: "draining" }] });
    await r.put({ endpoints: [entry] });
    expect(a.requests.filter((request) => request.path === "/v1/models").length).toBe(1);
  });

  it("keeps an endpoint whose /v1/models fails, reports why, and still routes to it", async () => {
    const shy = await engine("shy", { modelsStatus: 503 });
    const r = await router(["--models-timeout", "0.5"]);
    const put = await r.put({ endpoints: [{ id: "shy", url: shy.url, role: "server", state: "eligible" }] });
    expect(put.status).toBe(200);
    const view = (await put.json()) as { endpoints: { models: null; modelsError: string }[] };
    expect(view.endpoints[0]!.models).toBeNull();
    expect(view.endpoints[0]!.modelsError).toMatch(/HTTP 503/);
    // Unknown models: an unlisted model is not refused with 404, it goes to the endpoint.
    expect(await upstreamOf(await r.chat(chatBody("x", { model: "whatever" })))).toBe("shy");
  });

  it("reports in-flight counts per endpoint", async () => {
    const waiting: (() => void)[] = [];
    const slow = await engine("slow", {
      behaviour: async (_request, res) => {
        await new Promise<void>((resolve) => waiting.push(resolve));
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
      },
    });
    const r = await router();
    await r.put({ endpoints: [{ id: "slow", url: slow.url, role: "server", state: "eligible" }] });
    const pending = [r.chat(chatBody("1")), r.chat(chatBody("2")), r.chat(chatBody("3"))];
    const deadline = Date.now() + 3_000;
    while ((await r.endpoints()).endpoints[0]!.inFlight < 3 && Date.now() < deadline) await new Promise((s) => setTimeout(s, 20));
    expect((await r.endpoints()).endpoints[0]!.inFlight).toBe(3);
    expect(await r.metrics()).toMatch(/berth_router_in_flight_requests\{endpoint="slow",role="server",state="eligible"\} 3/);
    for (const release of waiting) release();
    await Promise.all(pending.map(async (p) => (await p).arrayBuffer()));
    expect((await r.endpoints()).endpoints[0]!.inFlight).toBe(0);
  });
});

// Bad input at the OpenAI surface: each gets a specific OpenAI-shaped error and never reaches an
// engine; the admin surface keeps problem+json.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeEngine, type FakeEngine } from "./support/fake-engine.ts";
import { ADMIN_TOKEN, startTestRouter, type TestRouter } from "./support/harness.ts";
import { KeepAliveClient } from "../support/keep-alive-client.ts";

let router: TestRouter;
let upstream: FakeEngine;

beforeAll(async () => {
  upstream = await startFakeEngine("e", { models: ["m"] });
  router = await startTestRouter();
  await router.put({ endpoints: [{ id: "e", url: upstream.url, role: "server", state: "eligible" }] });
});
afterAll(async () => {
  await router.close();
  await upstream.close();
});

function post(path: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${router.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
}

describe("bad input", () => {
  it.each([
    { name: "invalid JSON", path: "/v1/chat/completions", body: '{"model": "m", "messages": [', status: 400, type: "malformed_body", param: null },
    { name: "a JSON array", path: "/v1/chat/completions", body: "[]", status: 400, type: "invalid_request", param: null },
    { name: "missing messages", path: "/v1/chat/completions", body: '{"model":"m"}', status: 400, type: "invalid_request", param: "messages" },
    { name: "empty messages", path: "/v1/chat/completions", body: '{"model":"m","messages":[]}', status: 400, type: "invalid_request", param: "messages" },
    { name: "a message that is not an object", path: "/v1/chat/completions", body: '{"model":"m","messages":["hi"]}', status: 400, type: "invalid_request", param: "messages[0]" },
    { name: "missing model", path: "/v1/chat/completions", body: '{"messages":[{"role":"user","content":"hi"}]}', status: 400, type: "invalid_request", param: "model" },
    { name: "a non-boolean stream", path: "/v1/chat/completions", body: '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":"yes"}', status: 400, type: "invalid_request", param: "stream" },
    { name: "a completion without prompt", path: "/v1/completions", body: '{"model":"m"}', status: 400, type: "invalid_request", param: "prompt" },
    { name: "an unknown model", path: "/v1/chat/completions", body: '{"model":"nope","messages":[{"role":"user","content":"hi"}]}', status: 404, type: "model_not_found", param: "model" },
  ])("$name → $status $type", async ({ path, body, status, type, param }) => {
    const before = upstream.completions().length;
    const response = await post(path, body, { "x-request-id": "trace-42" });
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-request-id")).toBe("trace-42");
    expect(response.headers.get("x-berth-upstream")).toBeNull();
    const { error } = (await response.json()) as { error: { message: string; type: string; param: string | null; code: string; request_id: string } };
    expect(error).toEqual({ message: expect.any(String), type, param, code: type, request_id: "trace-42" });
    expect(error.message.length).toBeGreaterThan(0);
    expect(upstream.completions().length).toBe(before);
  });

  it("refuses a 10 MB prompt with 413 without reading it all", async () => {
    const prompt = "x".repeat(10 * 1024 * 1024);
    const response = await post("/v1/chat/completions", JSON.stringify({ model: "m", messages: [{ role: "user", content: prompt }] }));
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({
      error: { type: "payload_too_large", code: "payload_too_large", message: expect.stringMatching(/larger than 8388608 bytes.*--max-body-bytes/) },
    });
  });

  it("refuses an oversized chunked body (no Content-Length) with 413", async () => {
    const megabyte = new Uint8Array(1024 * 1024).fill(120);
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 12; i++) controller.enqueue(megabyte);
        controller.close();
      },
    });
    const response = await fetch(`${router.url}/v1/completions`, {
      method: "POST",
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(413);
  });

  it("answers a smaller limit from --max-body-bytes", async () => {
    const small = await startTestRouter(["--max-body-bytes", "2048"]);
    try {
      const response = await fetch(`${small.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt: "y".repeat(4096) }) });
      expect(response.status).toBe(413);
    } finally {
      await small.close();
    }
  });

  it.each([
    { method: "GET", path: "/v1/chat/completions", status: 405, type: "method_not_allowed" },
    { method: "POST", path: "/v1/models", status: 405, type: "method_not_allowed" },
    { method: "DELETE", path: "/v1/models/m", status: 405, type: "method_not_allowed" },
    { method: "GET", path: "/v1/models/nope", status: 404, type: "model_not_found" },
    { method: "POST", path: "/v1/embeddings", status: 404, type: "not_found" },
    { method: "POST", path: "/v1/responses", status: 404, type: "not_found" },
  ])("$method $path → $status OpenAI error", async ({ method, path, status, type }) => {
    const response = await fetch(`${router.url}${path}`, { method, body: method === "POST" ? "{}" : undefined });
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-request-id")).toMatch(/^req_/);
    expect(await response.json()).toMatchObject({ error: { type, code: type, request_id: response.headers.get("x-request-id") } });
  });

  it.each<{ method: string; path: string; status: number; type: string; headers: Record<string, string> }>([
    { method: "GET", path: "/", status: 404, type: "not-found", headers: {} },
    { method: "GET", path: "/admin/endpoints", status: 401, type: "unauthorized", headers: {} },
    { method: "GET", path: "/admin/nothing", status: 404, type: "not-found", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
    { method: "PUT", path: "/admin/endpoints", status: 400, type: "malformed-body", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
  ])("$method $path → $status problem (outside /v1)", async ({ method, path, status, type, headers }) => {
    const response = await fetch(`${router.url}${path}`, { method, headers, body: method === "PUT" ? "{" : undefined });
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(await response.json()).toMatchObject({ type: `https://berth.dev/problems/${type}`, status });
  });
});

describe("early answers on a keep-alive connection", () => {
  const MIB = 1024 * 1024;

  it.each([
    { name: "413 for a 9 MiB prompt", path: "/v1/chat/completions", status: 413, headers: {}, bytes: 9 * MIB },
    { name: "404 for a 2 MiB POST to no route", path: "/v1/embeddings", status: 404, headers: {}, bytes: 2 * MIB },
    { name: "401 for a 2 MiB admin PUT without a token", path: "/admin/endpoints", status: 401, headers: {}, bytes: 2 * MIB },
  ])("$name, then the next request succeeds", async ({ path, status, headers, bytes }) => {
    const client = new KeepAliveClient(router.url);
    try {
      const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(bytes) }] });
      const early = await client.request({ method: path.startsWith("/admin") ? "PUT" : "POST", path, headers: { "content-type": "application/json", ...headers }, body });
      expect(early.status).toBe(status);
      expect(early.headers.connection).toBe("close");
      const next = await client.request({
        method: "POST",
        path: "/v1/chat/completions",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      });
      expect(next.status).toBe(200);
      expect(next.headers["x-berth-upstream"]).toBe("e");
      expect(client.connections).toBe(2);
    } finally {
      client.close();
    }
  });

  it("keeps the socket after a 413 under a small --max-body-bytes, dropping the unread rest", async () => {
    const small = await startTestRouter(["--max-body-bytes", "2048"]);
    const client = new KeepAliveClient(small.url);
    try {
      const early = await client.request({ method: "POST", path: "/v1/completions", body: JSON.stringify({ model: "m", prompt: "y".repeat(16 * 1024) }) });
      expect(early.status).toBe(413);
      const next = await client.request({ method: "GET", path: "/v1/models" });
      expect(next.status).toBe(200);
      expect(next.reused).toBe(true);
      expect(client.connections).toBe(1);
    } finally {
      client.close();
      await small.close();
    }
  });
});

// Bad input at the OpenAI surface: each gets a specific problem+json and never reaches an engine.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeEngine, type FakeEngine } from "./support/fake-engine.ts";
import { startTestRouter, type TestRouter } from "./support/harness.ts";

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
    { name: "invalid JSON", path: "/v1/chat/completions", body: '{"model": "m", "messages": [', status: 400, type: "malformed-body", pointer: "" },
    { name: "a JSON array", path: "/v1/chat/completions", body: "[]", status: 400, type: "invalid-request", pointer: "" },
    { name: "missing messages", path: "/v1/chat/completions", body: '{"model":"m"}', status: 400, type: "invalid-request", pointer: "/messages" },
    { name: "empty messages", path: "/v1/chat/completions", body: '{"model":"m","messages":[]}', status: 400, type: "invalid-request", pointer: "/messages" },
    { name: "a message that is not an object", path: "/v1/chat/completions", body: '{"model":"m","messages":["hi"]}', status: 400, type: "invalid-request", pointer: "/messages/0" },
    { name: "missing model", path: "/v1/chat/completions", body: '{"messages":[{"role":"user","content":"hi"}]}', status: 400, type: "invalid-request", pointer: "/model" },
    { name: "a non-boolean stream", path: "/v1/chat/completions", body: '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":"yes"}', status: 400, type: "invalid-request", pointer: "/stream" },
    { name: "a completion without prompt", path: "/v1/completions", body: '{"model":"m"}', status: 400, type: "invalid-request", pointer: "/prompt" },
    { name: "an unknown model", path: "/v1/chat/completions", body: '{"model":"nope","messages":[{"role":"user","content":"hi"}]}', status: 404, type: "model-not-found", pointer: undefined },
  ])("$name → $status $type", async ({ path, body, status, type, pointer }) => {
    const before = upstream.completions().length;
    const response = await post(path, body, { "x-request-id": "trace-42" });
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(response.headers.get("x-berth-upstream")).toBeNull();
    const problem = (await response.json()) as { type: string; status: number; title: string; detail: string; instance: string; errors?: { pointer: string }[] };
    expect(problem).toMatchObject({ type: `https://berth.dev/problems/${type}`, status, instance: "trace-42" });
    expect(problem.title.length).toBeGreaterThan(0);
    expect(problem.detail.length).toBeGreaterThan(0);
    if (pointer !== undefined) expect(problem.errors).toEqual([{ pointer, detail: problem.detail }]);
    expect(upstream.completions().length).toBe(before);
  });

  it("refuses a 10 MB prompt with 413 without reading it all", async () => {
    const prompt = "x".repeat(10 * 1024 * 1024);
    const response = await post("/v1/chat/completions", JSON.stringify({ model: "m", messages: [{ role: "user", content: prompt }] }));
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({
      type: "https://berth.dev/problems/payload-too-large",
      status: 413,
      detail: expect.stringMatching(/larger than 8388608 bytes/),
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
    { method: "GET", path: "/v1/chat/completions", status: 405 },
    { method: "POST", path: "/v1/models", status: 405 },
    { method: "POST", path: "/v1/embeddings", status: 404 },
    { method: "GET", path: "/", status: 404 },
  ])("$method $path → $status problem", async ({ method, path, status }) => {
    const response = await fetch(`${router.url}${path}`, { method, body: method === "POST" ? "{}" : undefined });
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
  });
});

// The retrying transport against a tiny loopback server that fails on purpose: the same
// Idempotency-Key on every attempt of one POST, a new one per call, Retry-After honoured,
// network errors retried, client errors not, and a bounded number of attempts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BerthApiError, createBerthClient, retryAfterMs, unwrap } from "../../../clients/typescript/src/index.ts";

interface Seen {
  method: string;
  url: string;
  key: string | undefined;
  body: string;
  at: number;
}

let server: Server;
let baseUrl: string;
let seen: Seen[] = [];
/** Answers attempt n (0-based) of the current test. */
let script: (attempt: number, req: IncomingMessage, res: ServerResponse) => void = () => {};

const DEPLOYMENT = { id: "dep_1", name: "x", resourceVersion: 1 };

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, key: req.headers["idempotency-key"] as string | undefined, body, at: Date.now() });
      script(seen.length - 1, req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
afterEach(() => {
  seen = [];
});

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "Content-Type": status >= 400 ? "application/problem+json" : "application/json", ...headers });
  res.end(JSON.stringify(body));
};
const problem = (status: number, title: string, type = "unavailable") => ({ type: `https://berth.dev/problems/${type}`, title, status, detail: "x", instance: "req_1" });

const client = (attempts = 4) => createBerthClient({ baseUrl, token: "bp_test", retry: { attempts, baseDelayMs: 5, maxDelayMs: 20 } });
const createBody = { name: "x", spec: { model: { name: "m" }, engine: { name: "vllm" as const, image: "vllm/vllm-openai:v0.11.0" }, roles: [{ name: "main" }] } };

describe("retrying transport", () => {
  it("retries a POST after a 503 with the same Idempotency-Key and the same body", async () => {
    script = (attempt, _req, res) => (attempt === 0 ? json(res, 503, problem(503, "Service unavailable"), { "Retry-After": "0" }) : json(res, 201, DEPLOYMENT));
    const created = await unwrap(client().POST("/v1/deployments", { body: createBody }));
    expect(created).toEqual(DEPLOYMENT);
    expect(seen).toHaveLength(2);
    expect(seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.key).toBe(seen[0]!.key);
    expect(JSON.parse(seen[1]!.body)).toEqual(createBody);
  });

  it("uses a new key for each logical call, and keeps a key the caller chose", async () => {
    script = (_attempt, _req, res) => json(res, 201, DEPLOYMENT);
    const c = client();
    await unwrap(c.POST("/v1/deployments", { body: createBody }));
    await unwrap(c.POST("/v1/deployments", { body: createBody }));
    await unwrap(c.POST("/v1/deployments", { body: createBody, params: { header: { "idempotency-key": "mine-1" } } }));
    expect(seen.map((s) => s.key)).toEqual([expect.any(String), expect.any(String), "mine-1"]);
    expect(seen[0]!.key).not.toBe(seen[1]!.key);
  });

  it("retries a dropped connection with the same key", async () => {
    script = (attempt, req, res) => (attempt === 0 ? req.socket.destroy() : json(res, 201, DEPLOYMENT));
    await unwrap(client().POST("/v1/deployments", { body: createBody }));
    expect(seen).toHaveLength(2);
    expect(seen[1]!.key).toBe(seen[0]!.key);
  });

  it("waits as long as Retry-After says on a 429", async () => {
    script = (attempt, _req, res) => (attempt === 0 ? json(res, 429, problem(429, "Too many requests"), { "Retry-After": "1" }) : json(res, 201, DEPLOYMENT));
    await unwrap(client().POST("/v1/deployments", { body: createBody }));
    expect(seen).toHaveLength(2);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(950);
    expect(seen[1]!.key).toBe(seen[0]!.key);
  });

  it("retries a 409 saying its own key is still in flight", async () => {
    script = (attempt, _req, res) =>
      attempt === 0 ? json(res, 409, problem(409, "A request with this Idempotency-Key is still running", "idempotency-key-in-flight")) : json(res, 201, DEPLOYMENT);
    await unwrap(client().POST("/v1/deployments", { body: createBody }));
    expect(seen).toHaveLength(2);
    expect(seen[1]!.key).toBe(seen[0]!.key);
  });

  it("does not retry a client error, and gives up after the last attempt", async () => {
    script = (_attempt, _req, res) => json(res, 422, problem(422, "The deployment spec was not admitted", "invalid-spec"));
    await expect(unwrap(client().POST("/v1/deployments", { body: createBody }))).rejects.toThrow(BerthApiError);
    expect(seen).toHaveLength(1);

    seen = [];
    script = (_attempt, _req, res) => json(res, 503, problem(503, "Service unavailable"));
    const error = await unwrap(client(3).POST("/v1/deployments", { body: createBody })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BerthApiError);
    expect((error as BerthApiError).status).toBe(503);
    expect((error as BerthApiError).problem?.title).toBe("Service unavailable");
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => s.key)).size).toBe(1);
  });

  it("retries GETs too, without adding a key", async () => {
    script = (attempt, _req, res) => (attempt < 2 ? json(res, 502, problem(502, "Bad gateway")) : json(res, 200, DEPLOYMENT));
    const got = await unwrap(client().GET("/v1/deployments/{idOrName}", { params: { path: { idOrName: "x" } } }));
    expect(got).toEqual(DEPLOYMENT);
    expect(seen.map((s) => [s.method, s.key])).toEqual([
      ["GET", undefined],
      ["GET", undefined],
      ["GET", undefined],
    ]);
  });

  it("returns at once when Retry-After asks for longer than it will wait", async () => {
    script = (_attempt, _req, res) => json(res, 503, problem(503, "Service unavailable"), { "Retry-After": "3600" });
    const { response } = await client().POST("/v1/deployments", { body: createBody });
    expect(response.status).toBe(503);
    expect(seen).toHaveLength(1);
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-30T12:00:00Z");
    expect(retryAfterMs("2", now)).toBe(2000);
    expect(retryAfterMs("Mon, 30 Nov 2026 12:00:05 GMT", now)).toBe(5000);
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });
});

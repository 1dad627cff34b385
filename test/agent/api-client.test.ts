// The agent's API client against a scripted HTTP server on loopback: bearer auth, retries on
// 5xx and network errors (capped), no retry on 4xx, 404 accepted when confirming a deletion.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ApiError, createApiClient } from "../../src/agent/api-client.ts";

interface Seen {
  method: string;
  url: string;
  auth: string | undefined;
  body: string;
}

describe("createApiClient", () => {
  let server: Server;
  let baseUrl: string;
  let seen: Seen[] = [];
  let replies: Array<[number, unknown]> = [];
  const retry = { attempts: 3, baseMs: 10, capMs: 20 };

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
        const [status, payload] = replies.shift() ?? [204, undefined];
        res.writeHead(status, payload === undefined ? {} : { "Content-Type": "application/json" });
        res.end(payload === undefined ? undefined : JSON.stringify(payload));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen = [];
    replies = [];
  });

  it("long-polls desired state with since and waitSeconds, with the agent's bearer token", async () => {
    replies = [[200, { resourceVersion: 7, items: [], deleted: [] }]];
    const api = createApiClient({ baseUrl, token: "ba_secret", retry });
    expect(await api.desired(3, 30)).toEqual({ resourceVersion: 7, items: [], deleted: [] });
    expect(seen).toEqual([{ method: "GET", url: "/v1/agent/desired?since=3&waitSeconds=30", auth: "Bearer ba_secret", body: "" }]);
  });

  it("retries 5xx up to the attempt limit, then throws the last answer", async () => {
    replies = [
      [503, { title: "busy" }],
      [200, {}],
    ];
    const api = createApiClient({ baseUrl, token: "ba_x", retry });
    await api.putStatus("dep_1", { phase: "Starting" });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(["PUT /v1/deployments/dep_1/status", "PUT /v1/deployments/dep_1/status"]);
    expect(JSON.parse(seen[1]!.body)).toEqual({ phase: "Starting" });

    seen = [];
    replies = [
      [500, {}],
      [502, {}],
      [503, { title: "still busy" }],
    ];
    const error = await api.heartbeat({ agentVersion: "0.1.0", inventory: { nodes: [] } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(503);
    expect(seen).toHaveLength(3);
  });

  it("does not retry a 4xx", async () => {
    replies = [[422, { title: "invalid" }]];
    const api = createApiClient({ baseUrl, token: "ba_x", retry });
    await expect(api.putStatus("dep_1", { phase: "Ready" })).rejects.toMatchObject({ status: 422 });
    expect(seen).toHaveLength(1);
  });

  it("takes 404 on a deletion confirmation as done", async () => {
    replies = [[404, { title: "not found" }]];
    const api = createApiClient({ baseUrl, token: "ba_x", retry });
    await api.confirmDeletion("dep_gone");
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(["DELETE /v1/agent/deployments/dep_gone"]);
  });

  it("throws after retrying when nothing listens", async () => {
    const api = createApiClient({ baseUrl: "http://127.0.0.1:1", token: "ba_x", retry });
    await expect(api.desired(0, 0)).rejects.toThrow(/fetch failed/);
  });
});

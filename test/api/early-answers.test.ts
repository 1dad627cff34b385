// Answers the API sends before reading the body (413, 415, 401, 404 on a POST) leave a
// keep-alive client able to send its next request: the real Node server on loopback, one
// client that reuses its socket whenever the answer allows it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/api/config.ts";
import { startServer, type RunningServer } from "../../src/api/serve-node.ts";
import { KeepAliveClient } from "../support/keep-alive-client.ts";

const ADMIN = "Bearer test-admin-token-0123456789";
const MIB = 1024 * 1024;

let server: RunningServer;

beforeAll(async () => {
  server = await startServer(
    parseConfig({ PORT: "0", DATABASE_URL: "memory://", LOG_LEVEL: "silent", BERTH_ADMIN_TOKEN: ADMIN.slice(7) }),
  );
}, 60_000);
afterAll(async () => {
  await server?.close();
});

/** A JSON body of about `bytes` bytes. */
function jsonOf(bytes: number): string {
  return JSON.stringify({ name: "x".repeat(bytes) });
}

describe("early answers on a keep-alive connection", () => {
  it.each<{ name: string; status: number; type: string; path: string; headers: Record<string, string>; body: string }>([
    { name: "413 for a 2 MiB body", status: 413, type: "payload-too-large", path: "/v1/projects", headers: { authorization: ADMIN, "content-type": "application/json" }, body: jsonOf(2 * MIB) },
    { name: "415 for a 2 MiB text/plain body", status: 415, type: "unsupported-media-type", path: "/v1/projects", headers: { authorization: ADMIN, "content-type": "text/plain" }, body: jsonOf(2 * MIB) },
    { name: "401 for a 900 KiB body without a token", status: 401, type: "unauthorized", path: "/v1/projects", headers: { "content-type": "application/json" }, body: jsonOf(900 * 1024) },
    { name: "404 for a 900 KiB POST to no route", status: 404, type: "not-found", path: "/nowhere", headers: { "content-type": "application/json" }, body: jsonOf(900 * 1024) },
  ])("$name, then the next request succeeds", async ({ status, type, path, headers, body }) => {
    const client = new KeepAliveClient(server.url);
    try {
      const early = await client.request({ method: "POST", path, headers, body });
      expect(early.status).toBe(status);
      expect(early.headers["content-type"]).toBe("application/problem+json");
      expect(JSON.parse(early.body)).toMatchObject({ type: `https://berth.dev/problems/${type}`, status });

      const next = await client.request({ method: "GET", path: "/v1/projects", headers: { authorization: ADMIN } });
      expect(next.status).toBe(200);
      expect(JSON.parse(next.body)).toHaveProperty("items");
      // Told to close, the client opened a second connection rather than reusing a dying one.
      expect(early.headers.connection).toBe("close");
      expect(client.connections).toBe(2);
    } finally {
      client.close();
    }
  });

  it("keeps the connection for an early answer to a small body that had fully arrived", async () => {
    const client = new KeepAliveClient(server.url);
    try {
      const early = await client.request({ method: "POST", path: "/v1/projects", headers: { authorization: ADMIN, "content-type": "text/plain" }, body: "hello" });
      expect(early.status).toBe(415);
      const next = await client.request({ method: "GET", path: "/v1/projects", headers: { authorization: ADMIN } });
      expect(next.status).toBe(200);
      expect(next.reused).toBe(true);
      expect(client.connections).toBe(1);
    } finally {
      client.close();
    }
  });

  it("serves ten requests in a row on one socket after a 413", async () => {
    const client = new KeepAliveClient(server.url);
    try {
      const early = await client.request({ method: "POST", path: "/v1/projects", headers: { authorization: ADMIN, "content-type": "application/json" }, body: jsonOf(2 * MIB) });
      expect(early.status).toBe(413);
      for (let i = 0; i < 10; i++) {
        const next = await client.request({ method: "GET", path: "/v1/projects", headers: { authorization: ADMIN } });
        expect(next.status).toBe(200);
      }
      expect(client.connections).toBe(2);
    } finally {
      client.close();
    }
  });
});

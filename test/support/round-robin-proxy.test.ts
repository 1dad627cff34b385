// The test proxy in front of API instances (round-robin-proxy.ts), against plain node:http
// backends on loopback: turns, hop-by-hop headers, X-Forwarded-For, bodies, pinning, refused
// backends skipped, streamed answers passed on as they come and cut when the backend's is cut.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "./berth-process.ts";
import { forwardableHeaders, PIN_HEADER, startRoundRobinProxy, type RoundRobinProxy } from "./round-robin-proxy.ts";

interface Seen {
  backend: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function backend(index: number, seen: Seen[]): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      seen.push({ backend: index, headers: req.headers, body: Buffer.concat(chunks).toString() });
      if (req.url === "/stream") {
        res.writeHead(200, { "content-type": "text/event-stream", connection: "keep-alive", "keep-alive": "timeout=5" });
        res.write("data: one\n\n");
        // The second frame never comes: the backend dies (its socket is destroyed) instead.
        setTimeout(() => req.socket.destroy(), 200);
        return;
      }
      res.writeHead(200, { "content-type": "text/plain", "x-backend": String(index), connection: "keep-alive" });
      res.end(`backend ${index}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return server;
}

describe("round-robin proxy", () => {
  const seen: Seen[] = [];
  let servers: http.Server[];
  let proxy: RoundRobinProxy;
  let deadPort: number;

  beforeAll(async () => {
    servers = [await backend(0, seen), await backend(1, seen)];
    deadPort = await freePort();
    const urls = servers.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    proxy = await startRoundRobinProxy([...urls, `http://127.0.0.1:${deadPort}`]);
  });
  afterAll(async () => {
    await proxy?.close();
    for (const server of servers ?? []) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("drops hop-by-hop headers and those the Connection header names", () => {
    expect(
      forwardableHeaders({ connection: "keep-alive, x-private", "keep-alive": "timeout=5", "x-private": "1", te: "trailers", "transfer-encoding": "chunked", upgrade: "h2c", accept: "*/*" }),
    ).toEqual({ accept: "*/*" });
  });

  it("takes turns, skips the backend that refuses connections, forwards the body and X-Forwarded-For", async () => {
    seen.length = 0;
    const answers: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${proxy.url}/echo`, { method: "POST", body: `body-${i}`, headers: { "x-forwarded-for": "203.0.113.7", connection: "close" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("keep-alive")).toBeNull();
      answers.push(await res.text());
    }
    // Three backends in turn, the third refusing: its turns go to the next one.
    expect(answers).toEqual(["backend 0", "backend 1", "backend 0", "backend 0", "backend 1", "backend 0"]);
    expect(seen.map((s) => s.body)).toEqual(["body-0", "body-1", "body-2", "body-3", "body-4", "body-5"]);
    for (const request of seen) {
      expect(request.headers["x-forwarded-for"]).toBe("203.0.113.7, 127.0.0.1");
      expect(request.headers["x-forwarded-proto"]).toBe("http");
      expect(request.headers["x-forwarded-host"]).toBe(new URL(proxy.url).host);
    }
  });

  it("pins a request with the pin header (not forwarded), never moving it; excluded backends get no turns", async () => {
    seen.length = 0;
    for (let i = 0; i < 3; i++) expect(await (await fetch(`${proxy.url}/`, { headers: { [PIN_HEADER]: "1" } })).text()).toBe("backend 1");
    expect(seen.every((s) => s.headers[PIN_HEADER] === undefined)).toBe(true);
    expect((await fetch(`${proxy.url}/`, { headers: { [PIN_HEADER]: "2" } })).status).toBe(502);
    proxy.exclude(0);
    try {
      for (let i = 0; i < 4; i++) expect(await (await fetch(`${proxy.url}/`)).text()).toBe("backend 1");
    } finally {
      proxy.include(0);
    }
  });

  it("passes a stream on as it comes and cuts it when the backend's is cut", async () => {
    const res = await fetch(`${proxy.url}/stream`, { headers: { [PIN_HEADER]: "0" } });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("data: one\n\n");
    await expect(
      (async () => {
        for (let i = 0; i < 10; i++) if ((await reader.read()).done) return "ended cleanly";
        return "still open";
      })(),
    ).rejects.toThrow();
  });
});

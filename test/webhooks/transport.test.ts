// The Node transport on real loopback sockets: it connects to the address it is given
// while the URL's host stays in the Host header, follows no redirect, stops at its
// timeout, and keeps only the first KiB of an answer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeWebhookTransport } from "../../src/api/webhook-transport-node.ts";
import { startReceiver, type Answer, type Receiver } from "./support/receiver.ts";

describe("node webhook transport", () => {
  let receiver: Receiver;
  let answer: Answer = { status: 204 };
  beforeAll(async () => {
    receiver = await startReceiver(() => answer);
  });
  afterAll(async () => {
    await receiver?.close();
  });

  const send = (url: string, address: string | null, timeoutMs = 2000) =>
    nodeWebhookTransport.send({
      url: new URL(url),
      address,
      headers: { "content-type": "application/json", "webhook-id": "evt_x" },
      body: '{"hello":"wörld"}',
      timeoutMs,
    });

  it("connects to the checked address and keeps the URL's host in Host", async () => {
    answer = { status: 202, headers: { "X-Seen": "yes" }, body: "accepted" };
    const response = await send(`http://hooks.example.invalid:${receiver.port}/in?q=1`, "127.0.0.1");
    expect(response).toMatchObject({ status: 202, bodySnippet: "accepted" });
    expect(response.headers["x-seen"]).toBe("yes");
    expect(response.latencyMs).toBeGreaterThan(0);
    const last = receiver.received.at(-1)!;
    expect(last.headers.host).toBe(`hooks.example.invalid:${receiver.port}`);
    expect(last.path).toBe("/in?q=1");
    expect(last.body).toBe('{"hello":"wörld"}');
    expect(last.headers["content-length"]).toBe(String(Buffer.byteLength('{"hello":"wörld"}')));
  });

  it("does not follow redirects", async () => {
    answer = { status: 307, headers: { Location: `http://127.0.0.1:${receiver.port}/elsewhere` } };
    const before = receiver.received.length;
    const response = await send(`http://127.0.0.1:${receiver.port}/start`, "127.0.0.1");
    expect(response.status).toBe(307);
    expect(response.headers.location).toContain("/elsewhere");
    expect(receiver.received.length).toBe(before + 1);
  });

  it("gives up at its timeout", async () => {
    answer = { status: 200, delayMs: 1500 };
    const started = Date.now();
    await expect(send(`http://127.0.0.1:${receiver.port}/slow`, "127.0.0.1", 200)).rejects.toThrow("timed out after 0.2 s");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("keeps the first KiB of a long answer", async () => {
    answer = { status: 500, body: "x".repeat(100_000) };
    const response = await send(`http://127.0.0.1:${receiver.port}/big`, "127.0.0.1");
    expect(response.status).toBe(500);
    expect(response.bodySnippet).toBe("x".repeat(1024));
  });

  it("resolves names to every address", async () => {
    const addresses = await nodeWebhookTransport.resolve!("localhost");
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every((a) => a === "127.0.0.1" || a === "::1")).toBe(true);
  });
});

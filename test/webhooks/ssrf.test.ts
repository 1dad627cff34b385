// The SSRF guard with a resolver: names are checked on every address they resolve to, at
// create time and again before each attempt (DNS rebinding), and the transport is told to
// connect to the address that was checked. The resolver and the transport are fakes: this
// file never opens a socket.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_CONFIG } from "../../src/services/context.ts";
import type { WebhookRequest, WebhookTransport } from "../../src/services/webhooks/transport.ts";
import { createTestApi, deploymentBody, type TestApi } from "../support/api-harness.ts";

const dns = new Map<string, string[]>();
const sent: WebhookRequest[] = [];
const fakeTransport: WebhookTransport = {
  async resolve(hostname) {
    const answer = dns.get(hostname);
    if (!answer) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
    return answer;
  },
  async send(request) {
    sent.push(request);
    return { status: 200, headers: {}, bodySnippet: "ok", latencyMs: 1 };
  },
};

describe("SSRF guard with a resolver", () => {
  let api: TestApi;
  let count = 0;
  beforeAll(async () => {
    api = await createTestApi("pglite", { webhooks: { ...DEFAULT_APP_CONFIG.webhooks } }, { webhookTransport: fakeTransport });
  });
  afterAll(async () => {
    await api?.close();
  });

  const create = (url: string) =>
    api.call("POST", "/v1/webhooks", { body: { url, eventTypes: ["deployment.created"], projectId: api.defaultProjectId } });
  const emit = () => api.call("POST", "/v1/deployments", { body: deploymentBody(`ssrf-${++count}`, { projectId: api.defaultProjectId }) });
  const dispatch = () => api.call("POST", "/v1/internal/dispatch");

  it("refuses at create a name that resolves to a private or metadata address, even among public ones", async () => {
    dns.set("sneaky.example.com", ["93.184.216.34", "169.254.169.254"]);
    dns.set("rebind.example.net", ["::ffff:10.0.0.1"]);
    for (const [url, address] of [
      ["https://sneaky.example.com/hook", "169.254.169.254"],
      ["https://rebind.example.net/hook", "::ffff:a00:1"],
    ] as const) {
      const res = await create(url);
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ pointer: "/url", message: expect.stringContaining(address) }]);
    }
  });

  it("accepts a public name, and one that does not resolve yet", async () => {
    dns.set("hooks.example.com", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]);
    expect((await create("https://hooks.example.com/a")).status).toBe(201);
    expect((await create("https://not-yet.example.org/a")).status).toBe(201);
  });

  it("pins each attempt to the checked address and refuses one that re-resolves to a private address", async () => {
    const all = await api.call("GET", "/v1/webhooks?limit=200");
    for (const webhook of all.body.items) await api.call("DELETE", `/v1/webhooks/${webhook.id}`);
    dns.set("flip.example.com", ["93.184.216.34"]);
    const endpoint = (await create("https://flip.example.com:8443/hook?x=1")).body;
    sent.length = 0;
    await emit();
    expect((await dispatch()).body).toMatchObject({ attempted: 1, succeeded: 1 });
    expect(sent).toHaveLength(1);
    expect(sent[0]!.address).toBe("93.184.216.34");
    expect(sent[0]!.url.href).toBe("https://flip.example.com:8443/hook?x=1");

    dns.set("flip.example.com", ["10.0.0.7"]);
    api.clock.advance(1_000);
    await emit();
    expect((await dispatch()).body).toMatchObject({ attempted: 1, failed: 1 });
    expect(sent).toHaveLength(1);
    const deliveries = (await api.call("GET", `/v1/webhooks/${endpoint.id}/deliveries`)).body.items;
    expect(deliveries[0].status).toBe("pending");
    expect(deliveries[0].attempts).toEqual([
      expect.objectContaining({ error: "address_refused" }), // the class only: not which address the name resolves to
    ]);
    expect(deliveries[0].attempts[0]).not.toHaveProperty("statusCode");

    dns.delete("flip.example.com");
    api.clock.advance(6_000);
    expect((await dispatch()).body).toMatchObject({ attempted: 1, failed: 1 });
    const again = (await api.call("GET", `/v1/webhooks/${endpoint.id}/deliveries`)).body.items;
    expect(again[0].attempts[1].error).toBe("dns_failure");
    expect(sent).toHaveLength(1);
  });
});

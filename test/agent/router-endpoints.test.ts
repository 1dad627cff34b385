// pushEndpoints against a real HTTP server on loopback standing in for a router pod: the bearer
// token, only-when-changed, a new pod (or a restarted container) always gets the list, and a
// refusal is an error that records no acknowledgement.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { endpointsHash, routerAckKey } from "../../src/agent/router-endpoint-list.ts";
import { pushEndpoints, tokenFromSecret } from "../../src/agent/router-endpoints.ts";

const TOKEN = "router-admin-token-0123456789";
const BODY = { endpoints: [{ id: "chat-main-r0-m0", url: "http://127.0.1.1:8000", role: "server" as const, state: "eligible" as const }] };

const routerPod = (uid: string, ready = true, restarts = 0): V1Pod => ({
  metadata: { name: `router-${uid}`, uid },
  status: {
    podIP: "127.0.0.1",
    conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
    containerStatuses: [{ name: "router", image: "x", imageID: "", ready, restartCount: restarts }],
  },
});

describe("pushEndpoints", () => {
  let server: Server;
  let port: number;
  let received: Array<{ auth: string | undefined; body: unknown }>;
  let answer = 200;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let text = "";
      req.on("data", (chunk) => (text += chunk));
      req.on("end", () => {
        received.push({ auth: req.headers.authorization, body: JSON.parse(text) });
        res.writeHead(answer, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    received = [];
    answer = 200;
  });

  it("PUTs the body with the bearer token once; an unchanged list is not sent again", async () => {
    const acks = new Map<string, string>();
    const pods = [routerPod("a")];
    expect(await pushEndpoints({ routerPods: pods, port, token: TOKEN, body: BODY, acks })).toBe(1);
    expect(received).toEqual([{ auth: `Bearer ${TOKEN}`, body: BODY }]);
    expect(acks.get(routerAckKey(pods[0]!))).toBe(endpointsHash(BODY));
    expect(await pushEndpoints({ routerPods: pods, port, token: TOKEN, body: BODY, acks })).toBe(0);
    expect(received).toHaveLength(1);
  });

  it("a new router pod and a restarted router container get the list; a pod not Ready does not", async () => {
    const acks = new Map<string, string>();
    await pushEndpoints({ routerPods: [routerPod("a")], port, token: TOKEN, body: BODY, acks });
    expect(await pushEndpoints({ routerPods: [routerPod("a"), routerPod("b"), routerPod("c", false)], port, token: TOKEN, body: BODY, acks })).toBe(1);
    expect(await pushEndpoints({ routerPods: [routerPod("a", true, 1), routerPod("b")], port, token: TOKEN, body: BODY, acks })).toBe(1);
    // Pods that are gone are forgotten.
    expect([...acks.keys()].sort()).toEqual(["a/1", "b/0"]);
  });

  it("a changed list is sent again", async () => {
    const acks = new Map<string, string>();
    await pushEndpoints({ routerPods: [routerPod("a")], port, token: TOKEN, body: BODY, acks });
    const draining = { endpoints: [{ ...BODY.endpoints[0]!, state: "draining" as const }] };
    expect(await pushEndpoints({ routerPods: [routerPod("a")], port, token: TOKEN, body: draining, acks })).toBe(1);
    expect(received.at(-1)!.body).toEqual(draining);
  });

  it("a refusal throws and records no acknowledgement", async () => {
    answer = 401;
    const acks = new Map<string, string>();
    await expect(pushEndpoints({ routerPods: [routerPod("a")], port, token: "wrong-token-0123456789", body: BODY, acks })).rejects.toThrow(
      /router endpoint push failed: router-a: PUT http:\/\/127\.0\.0\.1:\d+\/admin\/endpoints: 401/,
    );
    expect(acks.size).toBe(0);
  });

  it("an unreachable router pod is an error within the timeout", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(pushEndpoints({ routerPods: [routerPod("a")], port: deadPort, token: TOKEN, body: BODY, acks: new Map(), timeoutMs: 2_000 })).rejects.toThrow(
      /router endpoint push failed/,
    );
  });
});

describe("tokenFromSecret", () => {
  it.each<[string, Array<{ metadata: { name: string }; data?: Record<string, string> }>, string | undefined]>([
    ["decodes the key of the named Secret", [{ metadata: { name: "chat-router-admin" }, data: { token: Buffer.from(TOKEN).toString("base64") } }], TOKEN],
    ["no such Secret", [{ metadata: { name: "other" }, data: { token: "eA==" } }], undefined],
    ["no such key", [{ metadata: { name: "chat-router-admin" }, data: {} }], undefined],
  ])("%s", (_name, secrets, expected) => {
    expect(tokenFromSecret(secrets, "chat-router-admin", "token")).toBe(expected);
  });
});

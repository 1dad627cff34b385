// Router signals: the admin view parsed strictly, in-flight Σ per role over router replicas, held
// requests given to the roles that have no endpoint, unreachable routers listed; and the same read
// against the real builtin router on loopback (its GET /admin/endpoints as the agent sees it).
import { afterEach, describe, expect, it } from "vitest";
import { parseAdminView, readRouters, routerSignalsByRole, type RouterReading } from "../../../src/agent/signals/router.ts";
import { ADMIN_TOKEN, startTestRouter, until, type TestRouter } from "../../router/support/harness.ts";
import { startSim, type SimProcess } from "../../sim/harness.ts";

const T0 = Date.parse("2026-11-30T12:00:00.000Z");
const AT = new Date(T0).toISOString();
const SERVER = [{ name: "chat", kind: "server" }];
const PD = [
  { name: "p", kind: "prefill" },
  { name: "d", kind: "decode" },
];

function reading(name: string, endpoints: Array<[id: string, role: string, inFlight: number, state?: string]>, held = 0, at = T0): RouterReading {
  return { router: { uid: `uid-${name}`, name }, at, view: { held, endpoints: endpoints.map(([id, role, inFlight, state = "eligible"]) => ({ id, role, inFlight, state })) } };
}

describe("routerSignalsByRole", () => {
  it("sums in-flight over router replicas and the role's endpoints, draining ones included", () => {
    const signals = routerSignalsByRole({
      readings: [reading("r1", [["chat-a", "server", 2], ["chat-b", "server", 1, "draining"]]), reading("r2", [["chat-a", "server", 4]], 0, T0 - 100)],
      failures: [],
      roles: SERVER,
      podRoles: new Map(),
      now: T0 + 1_000,
    });
    expect(signals.get("chat")).toEqual({
      signals: [
        { name: "router_in_flight", unit: "requests", value: 7, podCount: 2, observedAt: AT },
        { name: "router_held", unit: "requests", value: 0, podCount: 2, observedAt: AT },
      ],
      missing: [],
    });
  });

  it("lists an unreachable router under both signals and counts only the others", () => {
    const signals = routerSignalsByRole({ readings: [reading("r1", [["chat-a", "server", 2]])], failures: [{ router: { uid: "u2", name: "r2" }, detail: "timeout" }], roles: SERVER, podRoles: new Map(), now: T0 });
    expect(signals.get("chat")!.signals[0]).toMatchObject({ value: 2, podCount: 1 });
    expect(signals.get("chat")!.missing).toEqual([
      { name: "router_in_flight", pod: "r2", reason: "unreachable" },
      { name: "router_held", pod: "r2", reason: "unreachable" },
    ]);
  });

  it("has no value when no router answered", () => {
    const signals = routerSignalsByRole({ readings: [], failures: [{ router: { uid: "u", name: "r" }, detail: "refused" }], roles: SERVER, podRoles: new Map(), now: T0 });
    expect(signals.get("chat")!.signals).toEqual([
      { name: "router_in_flight", unit: "requests", podCount: 0, observedAt: AT },
      { name: "router_held", unit: "requests", podCount: 0, observedAt: AT },
    ]);
  });

  it.each([
    ["only prefill has an eligible endpoint: decode is what they wait for", [["p-0", "prefill", 0]], { p: 0, d: 4 }],
    ["no endpoint at all: both roles", [], { p: 4, d: 4 }],
    ["decode only draining: decode", [["p-0", "prefill", 0], ["d-0", "decode", 1, "draining"]], { p: 0, d: 4 }],
    ["both have endpoints (between a push and the release): both", [["p-0", "prefill", 0], ["d-0", "decode", 0]], { p: 4, d: 4 }],
  ] as const)("gives held requests to the roles they wait for: %s", (_, endpoints, expected) => {
    const signals = routerSignalsByRole({ readings: [reading("r", endpoints as never, 4)], failures: [], roles: PD, podRoles: new Map(), now: T0 });
    expect({ p: signals.get("p")!.signals[1]!.value, d: signals.get("d")!.signals[1]!.value }).toEqual(expected);
  });

  it("maps endpoints to roles by pod name first, then by a role kind only one role has", () => {
    const roles = [
      { name: "small", kind: "server" },
      { name: "large", kind: "server" },
    ];
    const signals = routerSignalsByRole({
      readings: [reading("r", [["small-r0-m0", "server", 2], ["large-r0-m0", "server", 5], ["gone-r0-m0", "server", 9]])],
      failures: [],
      roles,
      podRoles: new Map([
        ["small-r0-m0", "small"],
        ["large-r0-m0", "large"],
      ]),
      now: T0,
    });
    // The endpoint of an unknown pod is ambiguous between two server roles: counted for neither.
    expect(signals.get("small")!.signals[0]!.value).toBe(2);
    expect(signals.get("large")!.signals[0]!.value).toBe(5);
    const single = routerSignalsByRole({ readings: [reading("r", [["gone-r0-m0", "server", 9]])], failures: [], roles: SERVER, podRoles: new Map(), now: T0 });
    expect(single.get("chat")!.signals[0]!.value).toBe(9);
  });
});

describe("parseAdminView", () => {
  it("keeps the fields the agent reads", () => {
    const body = { endpoints: [{ id: "a", url: "http://x", role: "server", state: "eligible", inFlight: 3, models: ["m"] }], models: ["m"], holdWhenEmpty: false, held: 1 };
    expect(parseAdminView(body)).toEqual({ endpoints: [{ id: "a", url: "http://x", role: "server", state: "eligible", inFlight: 3, models: ["m"] }], held: 1 });
  });

  it("keeps an external DP rank and a failed model read (models null, modelsError) for rank coverage", () => {
    const body = { endpoints: [{ id: "a", url: "http://x", role: "server", rank: 2, state: "eligible", inFlight: 0, models: null, modelsError: "HTTP 503" }], held: 0 };
    expect(parseAdminView(body).endpoints).toEqual([{ id: "a", url: "http://x", role: "server", rank: 2, state: "eligible", inFlight: 0, models: null, modelsError: "HTTP 503" }]);
  });

  it.each([
    [null, /not an object/],
    [{ endpoints: {}, held: 0 }, /endpoints is not an array/],
    [{ endpoints: [], held: -1 }, /held is not a count/],
    [{ endpoints: [{ id: "a", role: "server", state: "eligible", inFlight: 1.5 }], held: 0 }, /endpoints\[0\]\.inFlight/],
    [{ endpoints: [{ id: 1, role: "server", state: "eligible", inFlight: 1 }], held: 0 }, /endpoints\[0\]\.id/],
    [{ endpoints: [{ id: "a", role: "server", state: "eligible", inFlight: 1, models: "m" }], held: 0 }, /endpoints\[0\]\.models is not an array/],
    [{ endpoints: [{ id: "a", role: "server", state: "eligible", inFlight: 1, rank: -1 }], held: 0 }, /endpoints\[0\]\.rank/],
  ])("refuses %j", (body, message) => {
    expect(() => parseAdminView(body)).toThrow(message);
  });
});

describe("readRouters against the builtin router on loopback", () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    await Promise.all(cleanup.splice(0).map((close) => close()));
  });

  it("reads held requests while the role has no endpoint, then in-flight on the endpoint that serves them", async () => {
    const router: TestRouter = await startTestRouter();
    cleanup.push(() => router.close());
    const sim: SimProcess = await startSim(["--latency-profile", "fast"], ["vllm", "serve", "m", "--port", "0", "--host", "127.0.0.1"]);
    cleanup.push(() => sim.stop());
    const routers = [
      { uid: "r1", name: "chat-router-1", url: router.url },
      { uid: "r2", name: "chat-router-2", url: "http://127.0.0.1:9" },
    ];
    const read = async () => {
      const { readings, failures } = await readRouters(routers, { token: ADMIN_TOKEN, timeoutMs: 2_000 });
      return routerSignalsByRole({ readings, failures, roles: SERVER, podRoles: new Map([["chat-server-r0-m0", "chat"]]), now: Date.now() }).get("chat")!;
    };
    expect((await router.put({ endpoints: [], holdWhenEmpty: true })).status).toBe(200);
    const answer = router.chat({ model: "m", messages: [{ role: "user", content: "hello" }], max_tokens: 200 });
    await until(async () => (await router.endpoints()).held === 1);
    const holding = await read();
    expect(holding.signals).toEqual([
      expect.objectContaining({ name: "router_in_flight", value: 0, podCount: 1 }),
      expect.objectContaining({ name: "router_held", value: 1, podCount: 1 }),
    ]);
    expect(holding.missing).toEqual([
      { name: "router_in_flight", pod: "chat-router-2", reason: "unreachable" },
      { name: "router_held", pod: "chat-router-2", reason: "unreachable" },
    ]);
    // The push releases the held request onto the engine; 200 tokens at 0.1× take a while.
    expect((await router.put({ endpoints: [{ id: "chat-server-r0-m0", url: sim.url, role: "server", state: "eligible" }], holdWhenEmpty: true })).status).toBe(200);
    await until(async () => (await router.endpoints()).endpoints[0]?.inFlight === 1);
    const serving = await read();
    expect(serving.signals).toEqual([
      expect.objectContaining({ name: "router_in_flight", value: 1, podCount: 1 }),
      expect.objectContaining({ name: "router_held", value: 0, podCount: 1 }),
    ]);
    expect((await answer).status).toBe(200);
  });

  it("reports a wrong token as a failed read, not as an empty router", async () => {
    const router = await startTestRouter();
    cleanup.push(() => router.close());
    const { readings, failures } = await readRouters([{ uid: "r", name: "chat-router", url: router.url }], { token: "wrong-token-wrong-token", timeoutMs: 2_000 });
    expect(readings).toEqual([]);
    expect(failures).toEqual([{ router: { uid: "r", name: "chat-router" }, detail: "GET /admin/endpoints answered 401" }]);
  });
});

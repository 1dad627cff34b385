// Policies end to end: a real router on loopback in front of real upstream HTTP servers.
import { afterEach, describe, expect, it } from "vitest";
import { startFakeEngine, type FakeEngine } from "./support/fake-engine.ts";
import { chatBody, startTestRouter, tally, upstreamOf, type TestRouter } from "./support/harness.ts";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((close) => close()));
});

async function setup(flags: string[], engines: { name: string; delayMs?: number }[]): Promise<{ router: TestRouter; engines: FakeEngine[] }> {
  const router = await startTestRouter(flags);
  cleanup.push(() => router.close());
  const started = await Promise.all(engines.map((e) => startFakeEngine(e.name, { delayMs: e.delayMs })));
  for (const engine of started) cleanup.push(() => engine.close());
  const put = await router.put({
    endpoints: started.map((engine) => ({ id: engine.name, url: engine.url, role: "server", state: "eligible" })),
  });
  expect(put.status).toBe(200);
  return { router, engines: started };
}

/** Runs `total` requests from `workers` concurrent loops; returns who answered each. */
async function drive(total: number, workers: number, send: (i: number) => Promise<Response>): Promise<string[]> {
  const answered: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < total) {
        const i = next++;
        const response = await send(i);
        expect(response.status).toBe(200);
        answered.push(await upstreamOf(response));
      }
    }),
  );
  return answered;
}

describe("round_robin", () => {
  it("splits sequential traffic exactly evenly", async () => {
    const { router } = await setup(["--policy", "round_robin"], [{ name: "a" }, { name: "b" }, { name: "c" }]);
    const answered = await drive(300, 1, (i) => router.chat(chatBody(`hello ${i}`)));
    expect(tally(answered)).toEqual({ a: 100, b: 100, c: 100 });
  });
});

describe("least_load", () => {
  it("sends most traffic away from a slow endpoint", async () => {
    const { router } = await setup(["--policy", "least_load"], [{ name: "slow", delayMs: 300 }, { name: "fast", delayMs: 5 }]);
    const answered = tally(await drive(60, 4, (i) => router.chat(chatBody(`q${i}`))));
    expect(answered.fast! + (answered.slow ?? 0)).toBe(60);
    // Round robin would give the slow endpoint 30; least load keeps it to about one at a time.
    expect(answered.slow ?? 0).toBeLessThan(12);
    const metrics = await router.metrics();
    expect(metrics).toMatch(/berth_router_policy_decisions_total\{role="server",policy="least_load",decision="least_load",endpoint="fast"\} \d+/);
  });
});

describe("cache_aware", () => {
  const system = "You are a meticulous assistant for the berth project. ".repeat(12); // ~650 characters

  it("keeps repeated-prefix traffic on one endpoint and spreads distinct prefixes", async () => {
    const { router } = await setup(["--policy", "cache_aware"], [{ name: "a" }, { name: "b" }, { name: "c" }]);
    const repeated = await drive(20, 1, (i) =>
      router.chat({ model: "m", messages: [{ role: "system", content: system }, { role: "user", content: `question ${i}` }] }),
    );
    expect(new Set(repeated).size).toBe(1);

    const distinct = await drive(30, 1, (i) =>
      router.chat({ model: "m", messages: [{ role: "user", content: `${i}: ${"distinct prompt body ".repeat(10)}` }] }),
    );
    const spread = tally(distinct);
    expect(Object.keys(spread).sort()).toEqual(["a", "b", "c"]);
    for (const count of Object.values(spread)) expect(count).toBeGreaterThanOrEqual(8);

    // Each distinct prefix, seen again, returns to where it went first.
    const again = await drive(30, 1, (i) =>
      router.chat({ model: "m", messages: [{ role: "user", content: `${i}: ${"distinct prompt body ".repeat(10)}` }] }),
    );
    expect(again).toEqual(distinct);
    const metrics = await router.metrics();
    expect(metrics).toMatch(/decision="cache_hit"/);
    expect(metrics).toMatch(/decision="cache_miss"/);
  });

  it("falls back to least load when one endpoint is far busier than the others", async () => {
    const { router } = await setup(
      ["--policy", "cache_aware", "--balance-abs-threshold", "2", "--balance-rel-threshold", "1.5"],
      [{ name: "a", delayMs: 500 }, { name: "b", delayMs: 500 }, { name: "c", delayMs: 500 }],
    );
    const body = (i: number) => ({ model: "m", messages: [{ role: "system", content: system }, { role: "user", content: `q${i}` }] });
    // Warm the prefix onto one endpoint.
    const home = await upstreamOf(await router.chat(body(0)));
    // Twelve at once, all sharing the prefix: the home endpoint takes a few, then the spread forces the rest away.
    const answered = tally(await drive(12, 12, (i) => router.chat(body(i + 1))));
    expect(answered[home]).toBeGreaterThanOrEqual(3);
    expect(answered[home]).toBeLessThan(12);
    const others = Object.entries(answered).filter(([id]) => id !== home);
    expect(others.length).toBe(2);
    expect(await router.metrics()).toMatch(/decision="imbalance"/);
  });
});

describe("session_affinity", () => {
  it("keeps each session on one endpoint and moves few sessions when an endpoint is added", async () => {
    const { router, engines } = await setup(["--policy", "session_affinity"], [{ name: "a" }, { name: "b" }, { name: "c" }]);
    const sessions = Array.from({ length: 60 }, (_, i) => `session-${i}`);
    const placement = new Map<string, string>();
    for (let round = 0; round < 3; round++) {
      for (const session of sessions) {
        const id = await upstreamOf(await router.chat(chatBody(`round ${round}`), { "x-session-id": session }));
        if (round === 0) placement.set(session, id);
        else expect(id).toBe(placement.get(session));
      }
    }
    expect(new Set(placement.values()).size).toBe(3);

    const added = await startFakeEngine("d");
    cleanup.push(() => added.close());
    await router.put({
      endpoints: [...engines, added].map((engine) => ({ id: engine.name, url: engine.url, role: "server", state: "eligible" })),
    });
    let moved = 0;
    for (const session of sessions) {
      const id = await upstreamOf(await router.chat(chatBody("after"), { "x-session-id": session }));
      if (id !== placement.get(session)) {
        moved++;
        expect(id).toBe("d"); // a moved session only ever moves to the newcomer
      }
    }
    expect(moved).toBeGreaterThan(0);
    expect(moved).toBeLessThan(sessions.length * 0.45); // about a quarter; modulo hashing would move ~75%
  });

  it("uses the `user` field when there is no x-session-id header", async () => {
    const { router } = await setup(["--policy", "session_affinity"], [{ name: "a" }, { name: "b" }, { name: "c" }]);
    for (const user of ["alice", "bob", "carol", "dave"]) {
      const first = await upstreamOf(await router.chat(chatBody("x", { user })));
      for (let i = 0; i < 5; i++) expect(await upstreamOf(await router.chat(chatBody(`x${i}`, { user })))).toBe(first);
    }
  });
});

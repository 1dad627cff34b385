// Routing policies as pure functions of (candidates with loads, request): tables of inputs
// and the pick and decision each gives.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CacheAware, type CacheAwareOptions } from "../../src/router/policies/cache-aware.ts";
import { createPolicy, type Candidate, type Policy, type RouteInput } from "../../src/router/policies/index.ts";
import { leastLoadedIndex, LeastLoad } from "../../src/router/policies/least-load.ts";
import { RoundRobin } from "../../src/router/policies/round-robin.ts";
import { SessionAffinity } from "../../src/router/policies/session-affinity.ts";

function candidates(...loads: number[]): Candidate[] {
  return loads.map((inFlight, i) => ({ id: `e${i}`, inFlight }));
}

function input(text = "", sessionKey?: string): RouteInput {
  return { text: () => text, sessionKey };
}

describe("round_robin", () => {
  it("takes each candidate in turn and splits evenly", () => {
    const policy: Policy = new RoundRobin();
    const pool = candidates(5, 0, 9);
    const picks = Array.from({ length: 9 }, () => policy.pick(pool, input()));
    expect(picks.map((pick) => pick.index)).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
    expect(new Set(picks.map((pick) => pick.decision))).toEqual(new Set(["round_robin"]));
  });
});

describe("least_load", () => {
  it.each([
    { loads: [3, 1, 2], start: 0, index: 1 },
    { loads: [0, 0, 0], start: 0, index: 0 },
    { loads: [0, 0, 0], start: 1, index: 1 },
    { loads: [0, 0, 0], start: 5, index: 2 },
    { loads: [1, 0, 0], start: 0, index: 1 },
    { loads: [1, 0, 0], start: 2, index: 2 },
    { loads: [4, 4, 1, 1], start: 3, index: 3 },
    { loads: [7], start: 9, index: 0 },
  ])("loads $loads scanning from $start → $index", ({ loads, start, index }) => {
    expect(leastLoadedIndex(candidates(...loads), start)).toBe(index);
  });

  // A fronts 4 data-parallel engines, B one: A wins while inFlight(A) < 4 × inFlight(B).
  it.each([
    { a: 0, b: 0, start: 1, index: 1 }, // both idle: a tie, rotated
    { a: 1, b: 1, start: 1, index: 0 },
    { a: 3, b: 1, start: 1, index: 0 },
    { a: 4, b: 1, start: 0, index: 0 }, // 4 ÷ 4 = 1 ÷ 1: a tie, rotated
    { a: 4, b: 1, start: 1, index: 1 },
    { a: 5, b: 1, start: 0, index: 1 },
    { a: 7, b: 2, start: 1, index: 0 },
    { a: 9, b: 2, start: 0, index: 1 },
  ])("A (4 ranks) at $a and B (1 rank) at $b scanning from $start → $index", ({ a, b, start, index }) => {
    const pool: Candidate[] = [
      { id: "a", inFlight: a, ranks: 4 },
      { id: "b", inFlight: b },
    ];
    expect(leastLoadedIndex(pool, start)).toBe(index);
  });

  it("gives an endpoint a share of new requests in proportion to its ranks", () => {
    const policy: Policy = new LeastLoad();
    const pool = [
      { id: "a", inFlight: 0, ranks: 4 },
      { id: "b", inFlight: 0, ranks: 1 },
      { id: "c", inFlight: 0 },
    ];
    for (let i = 0; i < 60; i++) pool[policy.pick(pool, input()).index]!.inFlight++;
    expect(pool.map((candidate) => candidate.inFlight)).toEqual([40, 10, 10]);
  });

  it("always picks a minimum and rotates ties (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(5), { minLength: 1, maxLength: 8 }), (loads) => {
        const policy: Policy = new LeastLoad();
        const pool = candidates(...loads);
        const min = Math.min(...loads);
        const tied = loads.filter((load) => load === min).length;
        const seen = new Set<number>();
        for (let i = 0; i < loads.length; i++) {
          const { index, decision } = policy.pick(pool, input());
          expect(loads[index]).toBe(min);
          expect(decision).toBe("least_load");
          seen.add(index);
        }
        expect(seen.size).toBe(tied);
      }),
    );
  });
});

describe("cache_aware", () => {
  const options: CacheAwareOptions = {
    cacheThreshold: 0.5,
    balanceAbsThreshold: 2,
    balanceRelThreshold: 1.5,
    maxTreeChars: 100_000,
    blockChars: 4,
  };
  const shared = "SYSTEM-PROMPT-SHARED-BY-ALL-REQUESTS:"; // 36 chars = 9 blocks

  it.each([
    {
      name: "first sight is a miss to the least loaded (ties round-robin)",
      seed: [],
      loads: [1, 0, 0],
      text: shared + "q1",
      index: 1,
      decision: "cache_miss",
    },
    {
      name: "a repeated prefix hits where it went",
      seed: [[shared + "q1", "e2"]],
      loads: [0, 0, 1],
      text: shared + "q2",
      index: 2,
      decision: "cache_hit",
    },
    {
      name: "a match under half the prompt is a miss",
      seed: [["SYSTEM-PROMPT-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "e2"]],
      loads: [0, 0, 0],
      text: "SYSTEM-PROMPT-yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy",
      index: 0,
      decision: "cache_miss",
    },
    {
      name: "exactly half matching is a hit",
      seed: [["aaaabbbbcccc", "e1"]],
      loads: [0, 0, 0],
      text: "aaaabbbbXXXXYYYY",
      index: 1,
      decision: "cache_hit",
    },
    {
      name: "several holders: the least loaded of them",
      seed: [
        [shared + "q1", "e0"],
        [shared + "q1", "e2"],
      ],
      loads: [2, 0, 1],
      text: shared + "q9",
      index: 2,
      decision: "cache_hit",
    },
    {
      name: "imbalance past both thresholds goes to least load despite the hit",
      seed: [[shared + "q1", "e0"]],
      loads: [5, 2, 3], // 5 − 2 = 3 > 2 and 5 > 2 × 1.5
      text: shared + "q2",
      index: 1,
      decision: "imbalance",
    },
    {
      name: "spread past the absolute threshold only is still balanced",
      seed: [[shared + "q1", "e0"]],
      loads: [10, 7, 7], // 3 > 2 but 10 < 7 × 1.5
      text: shared + "q2",
      index: 0,
      decision: "cache_hit",
    },
    {
      name: "spread past the relative threshold only is still balanced",
      seed: [[shared + "q1", "e0"]],
      loads: [2, 0, 0], // 2 > 0 × 1.5 but 2 − 0 ≤ 2
      text: shared + "q2",
      index: 0,
      decision: "cache_hit",
    },
  ] as const)("$name", ({ seed, loads, text, index, decision }) => {
    const policy = new CacheAware(options);
    const pool = candidates(...loads);
    for (const [seen, tenant] of seed) policy.tree.insert(seen, tenant);
    expect(policy.pick(pool, input(text))).toEqual({ index, decision });
  });

  it("only counts prefixes held by eligible candidates", () => {
    const policy = new CacheAware(options);
    policy.tree.insert(shared + "q1", "gone");
    expect(policy.pick(candidates(0, 0), input(shared + "q2")).decision).toBe("cache_miss");
  });

  it("records every pick, so the next identical prefix follows it", () => {
    const policy = new CacheAware(options);
    const pool = candidates(0, 0, 0);
    const first = policy.pick(pool, input(shared + "a"));
    for (let i = 0; i < 10; i++) expect(policy.pick(pool, input(shared + `b${i}`))).toEqual({ index: first.index, decision: "cache_hit" });
  });

  it("spreads distinct prefixes round-robin while idle", () => {
    const policy = new CacheAware(options);
    const pool = candidates(0, 0, 0);
    const picks = Array.from({ length: 9 }, (_, i) => policy.pick(pool, input(`distinct-prefix-number-${i}-${"z".repeat(20)}`)).index);
    expect(picks).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
  });

  it("forgets an endpoint that left", () => {
    const policy = new CacheAware(options);
    policy.tree.insert(shared, "e0");
    policy.forget("e0");
    expect(policy.tree.size).toBe(0);
  });
});

describe("session_affinity", () => {
  it("sends a session to one endpoint every time, whatever the loads", () => {
    const policy = new SessionAffinity();
    const first = policy.pick(candidates(0, 0, 0), input("", "user-42"));
    expect(first.decision).toBe("session");
    for (const loads of [[9, 0, 0], [0, 9, 0], [0, 0, 9]]) {
      expect(policy.pick(candidates(...loads), input("", "user-42")).index).toBe(first.index);
    }
  });

  it("without a session key falls back to least load", () => {
    const policy = new SessionAffinity();
    expect(policy.pick(candidates(3, 1, 2), input())).toEqual({ index: 1, decision: "no_session" });
    expect(policy.pick(candidates(3, 1, 2), input("", ""))).toEqual({ index: 1, decision: "no_session" });
  });

  it("moves only the sessions of an endpoint that leaves the candidates", () => {
    const policy = new SessionAffinity();
    const all = candidates(0, 0, 0, 0);
    const without = all.filter((candidate) => candidate.id !== "e1");
    for (let i = 0; i < 500; i++) {
      const key = `s${i}`;
      const before = all[policy.pick(all, input("", key)).index]!.id;
      const after = without[policy.pick(without, input("", key)).index]!.id;
      if (before !== "e1") expect(after).toBe(before);
    }
  });
});

describe("createPolicy", () => {
  it.each(["round_robin", "least_load", "cache_aware", "session_affinity"] as const)("builds %s", (name) => {
    const policy = createPolicy(name, { cacheThreshold: 0.5, balanceAbsThreshold: 64, balanceRelThreshold: 1.5, maxTreeChars: 1 << 20 });
    expect(policy.name).toBe(name);
    const pick = policy.pick(candidates(0, 0), input("hello", "s"));
    expect([0, 1]).toContain(pick.index);
  });
});

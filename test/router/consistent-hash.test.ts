// The consistent-hash ring: determinism, balance, and minimal movement on membership changes.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hash32, HashRing } from "../../src/router/consistent-hash.ts";

const keys = Array.from({ length: 4000 }, (_, i) => `session-${i}`);

function owners(ring: HashRing): Map<string, string> {
  return new Map(keys.map((key) => [key, ring.lookup(key)!]));
}

describe("HashRing", () => {
  it("is empty-safe and deterministic regardless of member order", () => {
    expect(new HashRing([]).lookup("x")).toBeUndefined();
    const a = new HashRing(["e1", "e2", "e3"]);
    const b = new HashRing(["e3", "e1", "e2"]);
    for (const key of keys.slice(0, 200)) expect(a.lookup(key)).toBe(b.lookup(key));
  });

  it.each([2, 3, 5, 8])("spreads keys over %i members within ±35% of even", (count) => {
    const members = Array.from({ length: count }, (_, i) => `endpoint-${i}`);
    const counts = new Map<string, number>();
    for (const owner of owners(new HashRing(members)).values()) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    const even = keys.length / count;
    for (const member of members) {
      expect(counts.get(member)).toBeGreaterThan(even * 0.65);
      expect(counts.get(member)).toBeLessThan(even * 1.35);
    }
  });

  it.each([1, 2, 3, 4, 7])("adding a member to %i moves only keys to the new member, about 1/(n+1)", (count) => {
    const members = Array.from({ length: count }, (_, i) => `endpoint-${i}`);
    const before = owners(new HashRing(members));
    const after = owners(new HashRing([...members, "newcomer"]));
    let moved = 0;
    for (const key of keys) {
      if (before.get(key) !== after.get(key)) {
        moved++;
        expect(after.get(key)).toBe("newcomer");
      }
    }
    const expected = keys.length / (count + 1);
    expect(moved).toBeGreaterThan(expected * 0.6);
    expect(moved).toBeLessThan(expected * 1.4);
  });

  it("removing a member moves only that member's keys (property)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.stringMatching(/^[a-z0-9-]{1,12}$/), { minLength: 2, maxLength: 8 }), fc.nat(), (members, pick) => {
        const gone = members[pick % members.length]!;
        const before = new HashRing(members);
        const after = new HashRing(members.filter((member) => member !== gone));
        for (const key of keys.slice(0, 300)) {
          const owner = before.lookup(key)!;
          if (owner !== gone) expect(after.lookup(key)).toBe(owner);
        }
      }),
      { numRuns: 50 },
    );
  });

  it("hash32 is a 32-bit unsigned integer", () => {
    for (const text of ["", "a", "session-1", "漢字"]) {
      const value = hash32(text);
      expect(Number.isInteger(value) && value >= 0 && value < 2 ** 32).toBe(true);
    }
    expect(hash32("a")).not.toBe(hash32("b"));
  });
});

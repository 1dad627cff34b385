// The block-hashed prefix tree: longest-prefix matches restricted to wanted tenants, the
// subset invariant, LRU eviction under the size bound, and tenant removal.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hashBlock, PrefixTree } from "../../src/router/prefix-tree.ts";

const anyTenant = () => true;

describe("PrefixTree.match", () => {
  const tree = new PrefixTree({ blockChars: 4, maxChars: 10_000 });
  tree.insert("abcdefgh", "A"); // blocks abcd|efgh
  tree.insert("abcdxyzw", "B"); // shares abcd
  tree.insert("abcdefghij", "C"); // abcd|efgh|ij

  it.each([
    { text: "abcdefgh", wanted: ["A", "B", "C"], matched: 8, tenants: ["A", "C"] },
    { text: "abcdefghij", wanted: ["A", "B", "C"], matched: 10, tenants: ["C"] },
    { text: "abcdefghij", wanted: ["A", "B"], matched: 8, tenants: ["A"] },
    { text: "abcdxyzw", wanted: ["A", "C"], matched: 4, tenants: ["A", "C"] },
    { text: "abcdxyzw", wanted: ["B"], matched: 8, tenants: ["B"] },
    { text: "abc", wanted: ["A", "B", "C"], matched: 0, tenants: [] }, // partial block: no match
    { text: "zzzz", wanted: ["A", "B", "C"], matched: 0, tenants: [] },
    { text: "abcdefgh", wanted: [], matched: 0, tenants: [] },
    { text: "abcdefg", wanted: ["A", "B", "C"], matched: 4, tenants: ["A", "B", "C"] }, // tail block efg ≠ efgh
  ])("$text among $wanted → $matched chars held by $tenants", ({ text, wanted, matched, tenants }) => {
    const match = tree.match(text, (tenant) => wanted.includes(tenant));
    expect(match).toEqual({ matchedChars: matched, tenants });
  });

  it("caps indexed text", () => {
    const small = new PrefixTree({ blockChars: 2, maxChars: 1_000, maxIndexedChars: 6 });
    small.insert("aabbccdd", "A");
    expect(small.size).toBe(3);
    expect(small.match("aabbccXX", anyTenant)).toEqual({ matchedChars: 6, tenants: ["A"] });
    expect(small.indexedLength("aabbccXX")).toBe(6);
  });
});

describe("PrefixTree bounds", () => {
  it("evicts least recently used leaves first and keeps under the bound", () => {
    const tree = new PrefixTree({ blockChars: 2, maxChars: 12 }); // 6 nodes
    tree.insert("aabb", "A"); // 2 nodes
    tree.insert("ccdd", "B"); // 4
    tree.insert("eeff", "C"); // 6
    tree.insert("aabb", "A"); // touch: aabb is now the most recent
    tree.insert("gghh", "D"); // 8 → evicts ccdd then cc (B's path, the oldest)
    expect(tree.size).toBeLessThanOrEqual(6);
    expect(tree.match("ccdd", anyTenant).matchedChars).toBe(0);
    expect(tree.match("aabb", anyTenant).matchedChars).toBe(4);
    expect(tree.match("gghh", anyTenant).matchedChars).toBe(4);
  });

  it("trims a prompt longer than the whole bound", () => {
    const tree = new PrefixTree({ blockChars: 1, maxChars: 5 });
    tree.insert("abcdefghij", "A");
    expect(tree.size).toBe(5);
    expect(tree.match("abcdefghij", anyTenant).matchedChars).toBe(5);
  });

  it("removes a tenant everywhere and drops nodes nobody holds", () => {
    const tree = new PrefixTree({ blockChars: 2, maxChars: 1_000 });
    tree.insert("aabbcc", "A");
    tree.insert("aabbdd", "B");
    tree.removeTenant("A");
    expect(tree.match("aabbcc", anyTenant)).toEqual({ matchedChars: 4, tenants: ["B"] });
    expect(tree.size).toBe(3); // aa, bb, dd
    expect([...tree.tenants()]).toEqual(["B"]);
    tree.removeTenant("B");
    expect(tree.size).toBe(0);
  });

  it("holds the bound and the subset invariant for any insert sequence (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.stringMatching(/^[ab]{0,12}$/), fc.constantFrom("A", "B", "C")), { maxLength: 60 }),
        fc.integer({ min: 1, max: 12 }),
        (inserts, maxNodes) => {
          const tree = new PrefixTree({ blockChars: 2, maxChars: maxNodes * 2 });
          for (const [text, tenant] of inserts) {
            tree.insert(text, tenant);
            expect(tree.size).toBeLessThanOrEqual(maxNodes);
          }
          // The latest insert's first block is always still there (it is the most recent node).
          const last = inserts.at(-1);
          if (last && last[0].length >= 2) {
            expect(tree.match(last[0], (tenant) => tenant === last[1]).matchedChars).toBeGreaterThanOrEqual(2);
          }
          // A match for a tenant set never beats the match for all tenants.
          for (const [text] of inserts) {
            const all = tree.match(text, anyTenant).matchedChars;
            for (const tenant of ["A", "B", "C"]) {
              expect(tree.match(text, (t) => t === tenant).matchedChars).toBeLessThanOrEqual(all);
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("hashBlock", () => {
  it("separates blocks of different length and content", () => {
    expect(hashBlock("abcd", 0, 4)).toBe(hashBlock("xabcd", 1, 5));
    expect(hashBlock("abcd", 0, 4)).not.toBe(hashBlock("abce", 0, 4));
    expect(hashBlock("abc", 0, 3)).not.toBe(hashBlock("abc\u0000", 0, 4));
    expect(Number.isSafeInteger(hashBlock("é漢字🙂", 0, 5))).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import {
  decodeSecretKey,
  generateSecretKey,
  loadKeyring,
  seal,
  sealedKeyId,
  SecretKeyError,
  unseal,
  UnsealError,
} from "../../src/domain/secret-envelope.ts";

const bytes = (fill: number) => new Uint8Array(32).fill(fill);
const OLD = bytes(1);
const NEW = bytes(2);
const OTHER = bytes(3);

describe("secret envelope", () => {
  it("round-trips text, empty text and a large body", async () => {
    const ring = await loadKeyring(NEW);
    for (const plain of ["whsec_abc", "", "é ☃ \u0000", "x".repeat(300_000)]) {
      const sealed = await seal(ring, plain, "row:1");
      expect(sealed).not.toContain(plain || "\u0001");
      expect(await unseal(ring, sealed, "row:1")).toBe(plain);
    }
  });

  it("seals the same text differently each time (random IV)", async () => {
    const ring = await loadKeyring(NEW);
    expect(await seal(ring, "same", "c")).not.toBe(await seal(ring, "same", "c"));
  });

  const refusals: Array<[string, (sealed: string) => string, Uint8Array[], string, RegExp]> = [
    ["a wrong key", (s) => s, [OTHER], "row:1", /neither BERTH_SECRET_KEY nor in BERTH_SECRET_KEYS_PREVIOUS/],
    ["a tampered data byte", (s) => flipData(s), [NEW], "row:1", /did not authenticate/],
    ["a tampered IV", (s) => s.replace(/^(s1\.[^.]+\.)(.)/, (_, head, c) => head + (c === "A" ? "B" : "A")), [NEW], "row:1", /did not authenticate/],
    ["another row (AAD mismatch)", (s) => s, [NEW], "row:2", /did not authenticate/],
    ["not an envelope", () => "whsec_plaintext", [NEW], "row:1", /not a sealed value/],
    ["a truncated envelope", (s) => s.split(".").slice(0, 3).join("."), [NEW], "row:1", /not a sealed value/],
  ];
  it.each(refusals)("refuses %s", async (_name, alter, keys, context, message) => {
    const sealed = await seal(await loadKeyring(NEW), "secret-value", "row:1");
    const ring = await loadKeyring(keys[0]!, keys.slice(1));
    const attempt = unseal(ring, alter(sealed), context);
    await expect(attempt).rejects.toBeInstanceOf(UnsealError);
    await expect(attempt).rejects.toThrow(message);
  });

  it("opens with a previous key and seals with the current one (rotation)", async () => {
    const before = await loadKeyring(OLD);
    const sealedBefore = await seal(before, "kept", "row:1");
    const rotated = await loadKeyring(NEW, [OLD]);
    expect(await unseal(rotated, sealedBefore, "row:1")).toBe("kept");
    const sealedAfter = await seal(rotated, "kept", "row:1");
    expect(sealedKeyId(sealedAfter)).toBe(rotated.current.id);
    expect(sealedKeyId(sealedAfter)).not.toBe(sealedKeyId(sealedBefore));
    // The old key alone no longer opens what the new one sealed.
    await expect(unseal(before, sealedAfter, "row:1")).rejects.toBeInstanceOf(UnsealError);
  });

  it("decodes base64 and base64url keys of exactly 32 bytes", async () => {
    const raw = Uint8Array.from({ length: 32 }, (_, i) => 250 - i);
    const standard = btoa(String.fromCharCode(...raw));
    const url = standard.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    expect(decodeSecretKey(standard)).toEqual(raw);
    expect(decodeSecretKey(url)).toEqual(raw);
    expect(decodeSecretKey(generateSecretKey())).toHaveLength(32);
  });

  it.each([
    ["too short", btoa("sixteen bytes!!!"), /32 bytes, not 16/],
    ["not base64", "not base64 at all!", /must be base64/],
    ["empty", "", /must be base64/],
  ])("refuses a key that is %s", (_name, text, message) => {
    expect(() => decodeSecretKey(text)).toThrow(SecretKeyError);
    expect(() => decodeSecretKey(text)).toThrow(message);
  });
});

/**
 * Changes one bit of the data: its first base64url character (whole data bits; the last one may
 * hold only padding bits, which decode to the same bytes).
 */
function flipData(sealed: string): string {
  const at = sealed.lastIndexOf(".") + 1;
  const c = sealed[at]!;
  return sealed.slice(0, at) + (c === "A" ? "B" : "A") + sealed.slice(at + 1);
}

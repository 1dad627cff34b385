// Secrets at rest (docs/design.md §14.3): AES-256-GCM through Web Crypto, so the same code
// runs on Node, Deno and edge runtimes. A sealed value is one string,
//
//   s1.<key id>.<iv>.<ciphertext and tag>      (base64url parts)
//
// where the key id is the first 8 bytes of the key's SHA-256: a keyring of the current key
// and older ones opens whatever any of them sealed, and always seals with the current one.
// The caller's `context` (the row and column a value belongs to) is the additional
// authenticated data, so a sealed value copied into another row or column does not open.

const VERSION = "s1";
const KEY_BYTES = 32;
const IV_BYTES = 12;
const KEY_ID_BYTES = 8;

export class SecretKeyError extends Error {}
/** A sealed value that no key of the ring opens: wrong key, tampered, or moved to another row. */
export class UnsealError extends Error {}

export interface SecretKey {
  id: string;
  key: CryptoKey;
}

export interface SecretKeyring {
  /** Seals with this key. */
  current: SecretKey;
  /** Every key that opens, the current one included, by id. */
  byId: ReadonlyMap<string, CryptoKey>;
}

/** Decodes a BERTH_SECRET_KEY value (standard or URL-safe base64 of exactly 32 bytes), or says why not. */
export function decodeSecretKey(text: string): Uint8Array {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) {
    throw new SecretKeyError("must be base64 (or base64url) of 32 random bytes, e.g. from `openssl rand -base64 32`");
  }
  let bytes: Uint8Array;
  try {
    bytes = fromBase64Url(trimmed.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_"));
  } catch {
    throw new SecretKeyError("must be base64 (or base64url) of 32 random bytes, e.g. from `openssl rand -base64 32`");
  }
  if (bytes.length !== KEY_BYTES) {
    throw new SecretKeyError(`must decode to 32 bytes, not ${bytes.length}; generate one with \`openssl rand -base64 32\``);
  }
  return bytes;
}

/** A fresh key, base64-encoded (what a generated key file holds). */
export function generateSecretKey(): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(KEY_BYTES))));
}

/** The ring for `current` (seals and opens) and `previous` (open only), each 32 raw bytes. */
export async function loadKeyring(current: Uint8Array, previous: readonly Uint8Array[] = []): Promise<SecretKeyring> {
  const load = async (raw: Uint8Array): Promise<SecretKey> => ({
    id: await keyId(raw),
    key: await crypto.subtle.importKey("raw", raw as BufferSource, "AES-GCM", false, ["encrypt", "decrypt"]),
  });
  const first = await load(current);
  const byId = new Map<string, CryptoKey>([[first.id, first.key]]);
  for (const raw of previous) {
    const loaded = await load(raw);
    if (!byId.has(loaded.id)) byId.set(loaded.id, loaded.key);
  }
  return { current: first, byId };
}

export async function keyId(raw: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", raw as BufferSource));
  return toBase64Url(digest.subarray(0, KEY_ID_BYTES));
}

export async function seal(ring: SecretKeyring, plaintext: string, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(context) },
    ring.current.key,
    new TextEncoder().encode(plaintext),
  );
  return [VERSION, ring.current.id, toBase64Url(iv), toBase64Url(new Uint8Array(sealed))].join(".");
}

/** Opens a sealed value; throws UnsealError (never the plaintext, never a partial result) when it cannot. */
export async function unseal(ring: SecretKeyring, sealed: string, context: string): Promise<string> {
  const parts = sealed.split(".");
  if (parts.length !== 4 || parts[0] !== VERSION) throw new UnsealError("not a sealed value (s1.<key id>.<iv>.<data>)");
  const [, id, ivText, dataText] = parts as [string, string, string, string];
  const key = ring.byId.get(id);
  if (!key) {
    throw new UnsealError(
      `sealed with key ${id}, which is neither BERTH_SECRET_KEY nor in BERTH_SECRET_KEYS_PREVIOUS; restore that key to read it`,
    );
  }
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64Url(ivText) as BufferSource, additionalData: new TextEncoder().encode(context) },
      key,
      fromBase64Url(dataText) as BufferSource,
    );
    return new TextDecoder().decode(plain);
  } catch {
    throw new UnsealError(`sealed value did not authenticate under key ${id} (altered, or it belongs to another row)`);
  }
}

/** The id of the key a sealed value names, or undefined when it is not one. */
export function sealedKeyId(sealed: string): string | undefined {
  const parts = sealed.split(".");
  return parts.length === 4 && parts[0] === VERSION ? parts[1] : undefined;
}

function toBase64Url(bytes: Uint8Array): string {
  // In chunks: a stored response body can be large, and spreading it into one call overflows the stack.
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new UnsealError("not base64url");
  let binary: string;
  try {
    binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  } catch {
    throw new UnsealError("not base64url");
  }
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

// Prefixed, URL-safe resource ids (`dep_…`, `prj_…`): the prefix says what an id names,
// so a wrong id in a path is refused before it reaches the database.

export const ID_PREFIXES = {
  project: "prj",
  apiKey: "key",
  deployment: "dep",
  cluster: "clu",
  agentCredential: "agc",
  operation: "op",
  event: "evt",
  webhook: "whk",
  delivery: "dlv",
  request: "dreq",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lower case
const BODY_LENGTH = 20; // 100 bits of randomness

export function newId(kind: IdKind): string {
  const bytes = new Uint8Array(BODY_LENGTH);
  crypto.getRandomValues(bytes);
  let body = "";
  for (const byte of bytes) body += ALPHABET[byte & 31];
  return `${ID_PREFIXES[kind]}_${body}`;
}

const ID_PATTERNS = Object.fromEntries(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_[${ALPHABET}]{${BODY_LENGTH}}$`)]),
) as Record<IdKind, RegExp>;

export function isId(kind: IdKind, value: string): boolean {
  return ID_PATTERNS[kind].test(value);
}

/** A random secret token with a readable prefix (`bp_` user keys, `ba_` agent credentials). */
export function newToken(prefix: string): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  let body = "";
  for (const byte of bytes) body += byte.toString(16).padStart(2, "0");
  return `${prefix}_${body}`;
}

export async function sha256Hex(value: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// Which address a request counts against (docs/design.md §14.2). The socket's peer is the
// client unless it is one of the configured trusted proxies; then X-Forwarded-For is read
// from the right, skipping trusted hops, and the first untrusted address is the client.
// Anything left of that is the client's own claim and is never believed.

export interface Cidr {
  /** 4 or 16 bytes. */
  bytes: Uint8Array;
  prefix: number;
  text: string;
}

/** Parses "10.0.0.0/8", "::1/128" or a bare address (a host prefix); undefined when malformed. */
export function parseCidr(text: string): Cidr | undefined {
  const [address, prefixText, extra] = text.trim().split("/");
  if (extra !== undefined || !address) return undefined;
  const bytes = parseAddress(address);
  if (!bytes) return undefined;
  const max = bytes.length * 8;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return undefined;
  return { bytes, prefix, text: text.trim() };
}

/** Parses a comma-separated CIDR list; throws naming the first entry that is not one. */
export function parseCidrList(text: string): Cidr[] {
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const cidr = parseCidr(entry);
      if (!cidr) throw new Error(`"${entry}" is not an IPv4 or IPv6 address or CIDR (e.g. 10.0.0.0/8, fd00::/8)`);
      return cidr;
    });
}

export function cidrContains(cidr: Cidr, address: string): boolean {
  const bytes = parseAddress(address);
  if (!bytes || bytes.length !== cidr.bytes.length) return false;
  let bits = cidr.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i]! & mask) !== (cidr.bytes[i]! & mask)) return false;
  }
  return true;
}

/**
 * The client's address: the peer, or, when the peer is a trusted proxy, the right-most
 * X-Forwarded-For entry that is not itself trusted. Undefined when the runtime gave no peer.
 */
export function resolveClientAddress(peer: string | undefined, forwardedFor: string | undefined, trusted: readonly Cidr[]): string | undefined {
  if (peer === undefined) return undefined;
  let client = normalize(peer);
  if (!forwardedFor || trusted.length === 0) return client;
  const hops = forwardedFor.split(",").map((hop) => normalize(hop.trim()));
  while (isTrusted(client, trusted)) {
    const next = hops.pop();
    if (next === undefined || !parseAddress(next)) return client;
    client = next;
  }
  return client;
}

function isTrusted(address: string, trusted: readonly Cidr[]): boolean {
  return trusted.some((cidr) => cidrContains(cidr, address));
}

/** IPv4-mapped IPv6 (::ffff:10.0.0.1, as Node reports dual-stack peers) reads as IPv4. */
function normalize(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

function parseAddress(text: string): Uint8Array | undefined {
  return text.includes(":") ? parseIpv6(text) : parseIpv4(text);
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) return undefined;
  return Uint8Array.from(parts.map(Number));
}

function parseIpv6(text: string): Uint8Array | undefined {
  const address = normalize(text);
  if (!address.includes(":")) return parseIpv4(address);
  const halves = address.split("::");
  if (halves.length > 2) return undefined;
  const groups = (half: string) => (half === "" ? [] : half.split(":"));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  if (!all.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return undefined;
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  return bytes;
}

// The SSRF guard of webhook URLs, pure so create-time validation and every delivery
// share it. A URL must be https (http only where the installation allows it) without credentials; its host is classified after the
// WHATWG parser has normalised it, and every address it resolves to must be a public
// unicast address. Odd IPv4 spellings (decimal, octal, hex, short forms) are parsed the
// way inet_aton and the URL parser read them, so `0x7f.1` is 127.0.0.1 here too.

export type GuardVerdict = { ok: true } | { ok: false; reason: string };

export type ParsedWebhookUrl =
  | { ok: true; url: URL; host: WebhookHost }
  | { ok: false; reason: string };

/** A URL's host: an IP literal (canonical text) or a DNS name still to be resolved. */
export type WebhookHost = { kind: "ip"; address: string } | { kind: "name"; name: string };

const MAX_URL_LENGTH = 2048;

/** Host names that are never public: metadata services and names reserved for local use. */
const FORBIDDEN_NAMES = new Set([
  "localhost",
  "localhost.localdomain",
  "ip6-localhost",
  "ip6-loopback",
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "metadata.azure.com",
  "metadata.tencentyun.com",
  "instance-data",
  "instance-data.ec2.internal",
]);
/** Suffixes reserved for local networks (RFC 6761, RFC 8375, mDNS) or cloud-internal DNS. */
const FORBIDDEN_SUFFIXES = [".localhost", ".local", ".localdomain", ".internal", ".home.arpa", ".lan", ".intranet"];

/**
 * Parses and checks a webhook URL's form; the host is checked too when it is an IP literal
 * or a forbidden name. Names still need their resolved addresses checked (checkAddress).
 */
export function parseWebhookUrl(raw: string, options: { allowPrivate: boolean; allowHttp: boolean }): ParsedWebhookUrl {
  if (raw.length > MAX_URL_LENGTH) return { ok: false, reason: `longer than ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not an absolute URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { ok: false, reason: `scheme "${url.protocol.slice(0, -1)}" is not allowed; use https` };
  }
  if (url.username || url.password) {
    return { ok: false, reason: "credentials in the URL are not allowed; the signature authenticates berth to the receiver" };
  }
  const host = classifyHost(url.hostname);
  if (!host) return { ok: false, reason: `host "${url.hostname}" is not a valid host name or IP address` };
  if (!options.allowPrivate) {
    const verdict = host.kind === "ip" ? checkAddress(host.address) : checkHostName(host.name);
    if (!verdict.ok) return verdict;
  }
  // Checked after the host, so a private http URL is refused for its address, the reason that cannot be configured away.
  if (url.protocol === "http:" && !options.allowHttp) {
    return {
      ok: false,
      reason: "https is required: an http receiver gets every event in cleartext; an installation admin may allow http for development (BERTH_WEBHOOK_ALLOW_HTTP=true)",
    };
  }
  return { ok: true, url, host };
}

/** An IP literal (bracketed IPv6, or IPv4 in any inet_aton spelling) or a DNS name; undefined if neither. */
export function classifyHost(hostname: string): WebhookHost | undefined {
  const lower = hostname.toLowerCase();
  if (lower.startsWith("[") && lower.endsWith("]")) {
    const bytes = parseIPv6(lower.slice(1, -1));
    return bytes ? { kind: "ip", address: formatIPv6(bytes) } : undefined;
  }
  const v4 = parseIPv4(lower);
  if (v4 !== undefined) return { kind: "ip", address: formatIPv4(v4) };
  const v6 = parseIPv6(lower);
  if (v6) return { kind: "ip", address: formatIPv6(v6) };
  const name = lower.endsWith(".") ? lower.slice(0, -1) : lower;
  const labels = name.split(".");
  const validLabel = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
  if (name.length === 0 || name.length > 253 || !labels.every((label) => validLabel.test(label))) return undefined;
  // A last label that is a number but not a valid IPv4 (e.g. 1.2.3.256) is neither a name nor an address.
  if (/^(0x[0-9a-f]*|[0-9]+)$/.test(labels[labels.length - 1]!)) return undefined;
  return { kind: "name", name };
}

/** Names that must not be resolved at all: metadata hosts, localhost, local-only suffixes, single labels. */
export function checkHostName(name: string): GuardVerdict {
  const lower = name.toLowerCase().replace(/\.$/, "");
  if (FORBIDDEN_NAMES.has(lower)) return { ok: false, reason: `"${lower}" is a local or metadata host name` };
  const suffix = FORBIDDEN_SUFFIXES.find((s) => lower.endsWith(s));
  if (suffix) return { ok: false, reason: `names under "${suffix.slice(1)}" are local-only` };
  if (!lower.includes(".")) return { ok: false, reason: `"${lower}" is a single-label name, which public DNS does not serve` };
  return { ok: true };
}

/** Whether an address (any spelling classifyHost accepts) is a public unicast address. */
export function checkAddress(address: string): GuardVerdict {
  const host = classifyHost(address.includes(":") && !address.startsWith("[") ? `[${address}]` : address);
  if (!host || host.kind !== "ip") return { ok: false, reason: `"${address}" is not an IP address` };
  const bytes = host.address.includes(":") ? parseIPv6(host.address)! : ipv4Bytes(parseIPv4(host.address)!);
  const refused = bytes.length === 4 ? classifyIPv4(bytes) : classifyIPv6(bytes);
  return refused ? { ok: false, reason: `${host.address} is ${refused}` } : { ok: true };
}

// ---------------------------------------------------------------------------- IPv4

type Range = [prefix: number[], bits: number, what: string];

const IPV4_REFUSED: Range[] = [
  [[0], 8, `a "this network" address`],
  [[10], 8, "a private address"],
  [[100, 64], 10, "a carrier-grade NAT (shared) address"],
  [[127], 8, "a loopback address"],
  [[169, 254], 16, "a link-local address (cloud metadata lives here)"],
  [[172, 16], 12, "a private address"],
  [[192, 0, 0], 24, "an IETF protocol address"],
  [[192, 0, 2], 24, "a documentation address"],
  [[192, 88, 99], 24, "a 6to4 relay address"],
  [[192, 168], 16, "a private address"],
  [[198, 18], 15, "a benchmarking address"],
  [[198, 51, 100], 24, "a documentation address"],
  [[203, 0, 113], 24, "a documentation address"],
  [[224], 4, "a multicast address"],
  [[240], 4, "a reserved or broadcast address"],
];

function inPrefix(bytes: ArrayLike<number>, prefix: number[], bits: number, offset = 0): boolean {
  for (let bit = 0; bit < bits; bit++) {
    const byte = Math.floor(bit / 8);
    const mask = 0x80 >> bit % 8;
    if ((bytes[offset + byte]! & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
  }
  return true;
}

function classifyIPv4(bytes: ArrayLike<number>, offset = 0): string | undefined {
  return IPV4_REFUSED.find(([prefix, bits]) => inPrefix(bytes, prefix, bits, offset))?.[2];
}

/**
 * inet_aton / WHATWG IPv4: one to four dot-separated parts, each decimal, octal (leading 0)
 * or hex (0x); the last part fills the remaining bytes. Returns the 32-bit value.
 */
export function parseIPv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length === 0 || parts.length > 4) return undefined;
  const numbers: number[] = [];
  for (const part of parts) {
    let value: number;
    if (/^0x[0-9a-f]*$/i.test(part)) value = part.length === 2 ? 0 : parseInt(part.slice(2), 16);
    else if (/^0[0-7]+$/.test(part)) value = parseInt(part.slice(1), 8);
    else if (/^(0|[1-9][0-9]*)$/.test(part)) value = Number(part);
    else return undefined;
    if (!Number.isSafeInteger(value)) return undefined;
    numbers.push(value);
  }
  const last = numbers.pop()!;
  if (numbers.some((n) => n > 255) || last >= 256 ** (4 - numbers.length)) return undefined;
  return numbers.reduce((sum, n, i) => sum + n * 256 ** (3 - i), 0) + last;
}

function ipv4Bytes(value: number): Uint8Array {
  return new Uint8Array([value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255]);
}

function formatIPv4(value: number): string {
  return Array.from(ipv4Bytes(value)).join(".");
}

// ---------------------------------------------------------------------------- IPv6

/** Parses IPv6 text (with `::` and an optional trailing dotted IPv4) into 16 bytes; zone ids are refused. */
export function parseIPv6(text: string): Uint8Array | undefined {
  if (!text.includes(":") || text.includes("%")) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string): number[] | undefined => {
    if (half === "") return [];
    const out: number[] = [];
    const pieces = half.split(":");
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      if (i === pieces.length - 1 && piece.includes(".")) {
        if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(piece)) return undefined;
        const octets = piece.split(".").map(Number);
        if (octets.some((o) => o > 255)) return undefined;
        out.push((octets[0]! << 8) | octets[1]!, (octets[2]! << 8) | octets[3]!);
      } else {
        if (!/^[0-9a-f]{1,4}$/i.test(piece)) return undefined;
        out.push(parseInt(piece, 16));
      }
    }
    return out;
  };
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[i * 2] = group >> 8;
    bytes[i * 2 + 1] = group & 255;
  });
  return bytes;
}

/** RFC 5952 text: lower case, the longest run of zero groups compressed. */
function formatIPv6(bytes: Uint8Array): string {
  const groups = Array.from({ length: 8 }, (_, i) => (bytes[i * 2]! << 8) | bytes[i * 2 + 1]!);
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

const IPV6_REFUSED: Range[] = [
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 96, "an IPv4-mapped IPv6 address"],
  [[0, 0x64, 0xff, 0x9b, 0, 1], 48, "a local-use NAT64 address"],
  [[1, 0], 64, "a discard-only IPv6 address"],
  [[0x20, 0x01, 0, 0], 32, "a Teredo address"],
  [[0x20, 0x01, 0x0d, 0xb8], 32, "a documentation address"],
  [[0x20, 0x01, 0, 0x10], 28, "an ORCHID address"],
  [[0x20, 0x01, 0, 0x20], 28, "an ORCHIDv2 address"],
  [[0xfc], 7, "a unique-local (private) IPv6 address"],
  [[0xfe, 0x80], 10, "a link-local IPv6 address"],
  [[0xfe, 0xc0], 10, "a site-local IPv6 address"],
  [[0xff], 8, "a multicast address"],
];

function classifyIPv6(bytes: Uint8Array): string | undefined {
  if (bytes.every((b) => b === 0)) return "the unspecified address";
  if (bytes.slice(0, 15).every((b) => b === 0) && bytes[15] === 1) return "a loopback address";
  // ::a.b.c.d, the deprecated IPv4-compatible form, is refused like any other IPv4 in IPv6.
  if (bytes.slice(0, 12).every((b) => b === 0)) return "an IPv4-compatible IPv6 address";
  const listed = IPV6_REFUSED.find(([prefix, bits]) => inPrefix(bytes, prefix, bits))?.[2];
  if (listed) return listed;
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address: judge that one.
  if (inPrefix(bytes, [0, 0x64, 0xff, 0x9b], 96)) {
    const inner = classifyIPv4(bytes, 12);
    return inner && `a NAT64 address of ${inner}`;
  }
  if (inPrefix(bytes, [0x20, 0x02], 16)) {
    const inner = classifyIPv4(bytes, 2);
    return inner && `a 6to4 address of ${inner}`;
  }
  // Only global unicast (2000::/3) is public.
  if (!inPrefix(bytes, [0x20], 3)) return "a reserved IPv6 address";
  return undefined;
}

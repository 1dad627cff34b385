// The SSRF guard against a corpus of addresses and URLs that must never be reached
// (every spelling we know of), and a few that must.
import { describe, expect, it } from "vitest";
import { checkAddress, classifyHost, parseIPv4, parseWebhookUrl } from "../../src/domain/webhook-url.ts";

/** URLs that point, one way or another, at something that is not the public internet. */
const REFUSED_URLS = [
  // loopback, every spelling
  "http://127.0.0.1/",
  "http://127.1/",
  "http://127.0.1/",
  "http://127.255.255.254/",
  "http://2130706433/",
  "http://0x7f000001/",
  "http://0x7f.0x0.0x0.0x1/",
  "http://0x7f.1/",
  "http://0177.0.0.1/",
  "http://0177.1/",
  "http://017700000001/",
  "http://127.0.0.1./",
  "http://①②⑦.0.0.1/",
  "http://localhost/",
  "http://LOCALHOST./",
  "http://localhost:8787/v1/events",
  "http://app.localhost/",
  "http://ip6-localhost/",
  "http://[::1]/",
  "http://[0:0:0:0:0:0:0:1]/",
  "http://[::ffff:127.0.0.1]/",
  "http://[::ffff:7f00:1]/",
  "http://[::127.0.0.1]/",
  "http://[0000::1]:80/",
  // unspecified / this network
  "http://0.0.0.0/",
  "http://0/",
  "http://0.1.2.3/",
  "http://[::]/",
  // private (RFC 1918) and unique-local
  "http://10.0.0.1/",
  "http://10.255.255.255/",
  "http://012.0.0.1/",
  "http://167772161/",
  "http://172.16.0.1/",
  "http://172.31.255.255/",
  "http://192.168.0.1/",
  "http://192.168.1.1:8080/admin",
  "http://0xc0.0xa8.0x01.0x01/",
  "http://[::ffff:10.0.0.1]/",
  "http://[::ffff:192.168.1.1]/",
  "http://[fc00::1]/",
  "http://[fd12:3456:789a::1]/",
  // link-local and cloud metadata
  "http://169.254.169.254/latest/meta-data/",
  "http://169.254.169.254.",
  "http://2852039166/",
  "http://0xa9fea9fe/",
  "http://0251.0376.0251.0376/",
  "http://169.254.0.1/",
  "http://[fe80::1]/",
  "http://[fe80::a9fe:a9fe]/",
  "http://[::ffff:169.254.169.254]/",
  "http://[::ffff:a9fe:a9fe]/",
  "http://[fd00:ec2::254]/",
  "http://[64:ff9b::a9fe:a9fe]/",
  "http://[64:ff9b::127.0.0.1]/",
  "http://[64:ff9b:1::1]/",
  "http://[2002:a9fe:a9fe::]/",
  "http://[2002:7f00:1::1]/",
  "http://metadata.google.internal/computeMetadata/v1/",
  "http://metadata.google.internal./",
  "http://metadata/",
  "http://metadata.goog/",
  "http://instance-data/latest/",
  "http://instance-data.ec2.internal/",
  "http://100.100.100.200/latest/meta-data/",
  "http://192.0.0.192/",
  // carrier-grade NAT
  "http://100.64.0.1/",
  "http://100.127.255.254/",
  // multicast, broadcast, reserved
  "http://224.0.0.1/",
  "http://239.255.255.250/",
  "http://255.255.255.255/",
  "http://240.0.0.1/",
  "http://[ff02::1]/",
  "http://[ff05::1:3]/",
  // documentation and benchmarking ranges, Teredo, discard
  "http://192.0.2.1/",
  "http://198.51.100.7/",
  "http://203.0.113.9/",
  "http://198.18.0.1/",
  "http://[2001:db8::1]/",
  "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
  "http://[100::1]/",
  // local-only names
  "http://printer.local/",
  "http://router.lan/",
  "http://nas.home.arpa/",
  "http://service.internal/",
  "http://intranet/",
  // not http(s), credentials, nonsense
  "file:///etc/passwd",
  "gopher://hooks.example.com/",
  "ftp://hooks.example.com/",
  "javascript:alert(1)",
  "https://user:password@hooks.example.com/",
  "https://token@hooks.example.com/",
  "hooks.example.com/path",
  "//hooks.example.com/",
  "http://[::1%25eth0]/",
  "http://1.2.3.4.5/",
  "",
];

const ALLOWED_URLS = [
  "https://hooks.example.com/berth",
  "https://hooks.example.com:8443/a/b?c=d",
  "http://93.184.216.34/",
  "https://8.8.8.8/",
  "https://[2606:4700:4700::1111]/",
  "https://[64:ff9b::808:808]/",
  "https://xn--bcher-kva.example/",
  "https://a.b.c.example.org./hook",
];

// The address guard on its own, with http allowed; https-only is tested below.
const GUARD = { allowPrivate: false, allowHttp: true };

describe("webhook URL guard", () => {
  it.each(REFUSED_URLS)("refuses %s", (url) => {
    const result = parseWebhookUrl(url, GUARD);
    expect(result.ok).toBe(false);
  });

  it.each(ALLOWED_URLS)("allows %s", (url) => {
    expect(parseWebhookUrl(url, GUARD)).toMatchObject({ ok: true });
  });

  it("says why", () => {
    const reason = (url: string) => (parseWebhookUrl(url, GUARD) as { reason: string }).reason;
    expect(reason("http://0x7f.1/")).toBe("127.0.0.1 is a loopback address");
    expect(reason("http://[::ffff:10.0.0.1]/")).toBe("::ffff:a00:1 is an IPv4-mapped IPv6 address");
    expect(reason("http://169.254.169.254/")).toContain("link-local");
    expect(reason("http://100.64.1.1/")).toContain("carrier-grade NAT");
    expect(reason("http://metadata.google.internal/")).toContain("metadata");
    expect(reason("ftp://x.example/")).toContain('scheme "ftp"');
  });

  it("lets allow-private through to private addresses, but never to other schemes or credentials", () => {
    for (const url of ["http://127.0.0.1:9999/hook", "http://localhost/", "http://[::1]/", "http://169.254.169.254/"]) {
      expect(parseWebhookUrl(url, { allowPrivate: true, allowHttp: true }).ok).toBe(true);
    }
    for (const url of ["file:///etc/passwd", "https://u:p@127.0.0.1/"]) {
      expect(parseWebhookUrl(url, { allowPrivate: true, allowHttp: true }).ok).toBe(false);
    }
  });

  it.each([
    // url, allowPrivate, allowHttp, verdict (true, or a piece of the reason)
    ["https://hooks.example.com/", false, false, true],
    ["http://hooks.example.com/", false, false, "https is required"],
    ["http://hooks.example.com/", false, true, true],
    ["http://93.184.216.34/", false, false, "BERTH_WEBHOOK_ALLOW_HTTP=true"],
    ["http://127.0.0.1:9999/", false, false, "loopback"], // the address is the reason that no setting lifts
    ["http://127.0.0.1:9999/", true, false, "https is required"],
    ["http://127.0.0.1:9999/", true, true, true],
    ["https://127.0.0.1:9999/", true, false, true],
  ] as Array<[string, boolean, boolean, true | string]>)("%s with allowPrivate %s, allowHttp %s → %s", (url, allowPrivate, allowHttp, verdict) => {
    const result = parseWebhookUrl(url, { allowPrivate, allowHttp });
    if (verdict === true) expect(result).toMatchObject({ ok: true });
    else expect(result).toMatchObject({ ok: false, reason: expect.stringContaining(verdict as string) });
  });
});

describe("resolved addresses", () => {
  // What a resolver can hand back: canonical text, but any family and mapping.
  it.each([
    "127.0.0.1",
    "10.1.2.3",
    "172.20.0.5",
    "192.168.0.10",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.251",
    "::1",
    "::",
    "::ffff:127.0.0.1",
    "::ffff:8.8.8.8",
    "fe80::1",
    "fd00:ec2::254",
    "fc00::",
    "ff02::fb",
    "64:ff9b::a00:1",
    "2002:c0a8:101::1",
    "2001:db8::5",
  ])("refuses %s", (address) => {
    expect(checkAddress(address).ok).toBe(false);
  });

  it.each(["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "64:ff9b::808:808", "2002:808:808::1"])(
    "allows %s",
    (address) => {
      expect(checkAddress(address)).toEqual({ ok: true });
    },
  );

  it("reads IPv4 the way inet_aton does", () => {
    expect.soft(parseIPv4("127.1")).toBe(0x7f000001);
    expect.soft(parseIPv4("0x7f.1")).toBe(0x7f000001);
    expect.soft(parseIPv4("0177.0.0.01")).toBe(0x7f000001);
    expect.soft(parseIPv4("2130706433")).toBe(0x7f000001);
    expect.soft(parseIPv4("10.0x10.0300")).toBe((10 << 24) + (16 << 16) + 192);
    expect.soft(parseIPv4("256.1.1.1")).toBeUndefined();
    expect.soft(parseIPv4("1.2.3.4.5")).toBeUndefined();
    expect.soft(parseIPv4("08.1.1.1")).toBeUndefined();
    expect.soft(parseIPv4("4294967296")).toBeUndefined();
    expect.soft(classifyHost("[::ffff:127.0.0.1]")).toEqual({ kind: "ip", address: "::ffff:7f00:1" });
    expect.soft(classifyHost("Hooks.Example.COM.")).toEqual({ kind: "name", name: "hooks.example.com" });
  });
});

import { describe, expect, it } from "vitest";
import { cidrContains, parseCidr, parseCidrList, resolveClientAddress } from "../../src/domain/client-address.ts";

describe("CIDRs", () => {
  it.each([
    ["10.0.0.0/8", "10.255.1.2", true],
    ["10.0.0.0/8", "11.0.0.1", false],
    ["192.168.1.128/25", "192.168.1.200", true],
    ["192.168.1.128/25", "192.168.1.100", false],
    ["127.0.0.1", "127.0.0.1", true],
    ["127.0.0.1", "127.0.0.2", false],
    ["0.0.0.0/0", "8.8.8.8", true],
    ["fd00::/8", "fd12:3456::1", true],
    ["fd00::/8", "fe80::1", false],
    ["::1", "::1", true],
    ["::1/128", "0:0:0:0:0:0:0:1", true],
    ["2001:db8::/32", "2001:db8:ffff::1", true],
    ["10.0.0.0/8", "::ffff:10.1.2.3", true],
    ["10.0.0.0/8", "fd00::1", false],
    ["fd00::/8", "10.0.0.1", false],
    ["10.0.0.0/8", "not-an-address", false],
  ])("%s contains %s: %s", (cidr, address, inside) => {
    expect(cidrContains(parseCidr(cidr)!, address)).toBe(inside);
  });

  it.each(["10.0.0.0/33", "10.0.0/8", "300.0.0.1", "fd00::/129", "1::2::3", "10.0.0.0/8/1", "x", "1:2:3:4:5:6:7:8:9"])(
    "rejects %s",
    (text) => expect(parseCidr(text)).toBeUndefined(),
  );

  it("reads a comma-separated list and names the bad entry", () => {
    expect(parseCidrList(" 10.0.0.0/8, fd00::/8 ,").map((c) => c.text)).toEqual(["10.0.0.0/8", "fd00::/8"]);
    expect(() => parseCidrList("10.0.0.0/8, nonsense")).toThrow(/"nonsense"/);
  });
});

describe("the client's address", () => {
  const proxies = parseCidrList("10.0.0.0/8, fd00::/8");
  it.each([
    ["no proxies configured: the peer, X-Forwarded-For ignored", "203.0.113.9", "198.51.100.1", [], "203.0.113.9"],
    ["an untrusted peer's X-Forwarded-For is ignored", "203.0.113.9", "198.51.100.1", proxies, "203.0.113.9"],
    ["a trusted proxy: the address it forwarded for", "10.0.0.5", "198.51.100.1", proxies, "198.51.100.1"],
    ["two trusted hops are skipped from the right", "10.0.0.5", "198.51.100.1, 10.9.9.9", proxies, "198.51.100.1"],
    ["what the client wrote left of its address is not believed", "10.0.0.5", "1.2.3.4, 198.51.100.1", proxies, "198.51.100.1"],
    ["a trusted proxy without the header: the proxy", "10.0.0.5", undefined, proxies, "10.0.0.5"],
    ["garbage in the header stops at the last trusted hop", "10.0.0.5", "198.51.100.1, garbage", proxies, "10.0.0.5"],
    ["an IPv4-mapped peer reads as IPv4", "::ffff:10.0.0.5", "198.51.100.1", proxies, "198.51.100.1"],
    ["IPv6 proxies", "fd00::1", "2001:db8::7", proxies, "2001:db8::7"],
  ] as const)("%s", (_, peer, forwarded, trusted, expected) => {
    expect(resolveClientAddress(peer, forwarded, trusted)).toBe(expected);
  });

  it("is unknown when the runtime gives no peer", () => {
    expect(resolveClientAddress(undefined, "198.51.100.1", proxies)).toBeUndefined();
  });
});

// BERTH_RATE_LIMIT_* and BERTH_TRUSTED_PROXIES: defaults on and generous, values read, bad ones named.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/api/config.ts";
import { DEFAULT_RATE_LIMITS } from "../../src/services/rate-limits/config.ts";

describe("rate-limit configuration", () => {
  it("is on by default with the documented quotas and caps", () => {
    const { rateLimits } = parseConfig({});
    expect(rateLimits).toEqual(DEFAULT_RATE_LIMITS);
    expect(rateLimits.enabled).toBe(true);
    expect(rateLimits.quotas).toEqual({ viewer: 1200, editor: 1200, admin: 2400, agent: 1200, address: 300 });
  });

  it("reads every variable", () => {
    const { rateLimits } = parseConfig({
      BERTH_RATE_LIMIT: "false",
      BERTH_RATE_LIMIT_WINDOW_SECONDS: "10",
      BERTH_RATE_LIMIT_VIEWER: "1",
      BERTH_RATE_LIMIT_EDITOR: "2",
      BERTH_RATE_LIMIT_ADMIN: "3",
      BERTH_RATE_LIMIT_AGENT: "4",
      BERTH_RATE_LIMIT_ADDRESS: "5",
      BERTH_RATE_LIMIT_FAILED_AUTH_CACHE_SECONDS: "0",
      BERTH_RATE_LIMIT_STREAMS_PER_KEY: "0",
      BERTH_RATE_LIMIT_LONG_POLLS_PER_KEY: "7",
      BERTH_RATE_LIMIT_WEBHOOKS_PER_PROJECT: "8",
      BERTH_TRUSTED_PROXIES: "10.0.0.0/8, fd00::/8",
    });
    expect({ ...rateLimits, trustedProxies: rateLimits.trustedProxies.map((c) => c.text) }).toEqual({
      enabled: false,
      windowSeconds: 10,
      quotas: { viewer: 1, editor: 2, admin: 3, agent: 4, address: 5 },
      failedAuthCacheSeconds: 0,
      streamsPerKey: 0,
      longPollsPerKey: 7,
      webhooksPerProject: 8,
      trustedProxies: ["10.0.0.0/8", "fd00::/8"],
    });
  });

  it.each([
    ["BERTH_RATE_LIMIT", "maybe", /BERTH_RATE_LIMIT: must be true or false/],
    ["BERTH_RATE_LIMIT_VIEWER", "0", /BERTH_RATE_LIMIT_VIEWER/],
    ["BERTH_RATE_LIMIT_WINDOW_SECONDS", "86401", /BERTH_RATE_LIMIT_WINDOW_SECONDS/],
    ["BERTH_RATE_LIMIT_WEBHOOKS_PER_PROJECT", "many", /BERTH_RATE_LIMIT_WEBHOOKS_PER_PROJECT/],
    ["BERTH_TRUSTED_PROXIES", "10.0.0.0/8, proxy.local", /BERTH_TRUSTED_PROXIES: comma-separated CIDRs: "proxy.local" is not/],
  ])("refuses %s=%s, naming it", (name, value, message) => {
    expect(() => parseConfig({ [name]: value })).toThrow(message);
  });
});

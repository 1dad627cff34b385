// The webhook settings of the environment: parsed once at start, bad values named.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/api/config.ts";
import { DEFAULT_RETRY_SCHEDULE_SECONDS } from "../../src/domain/webhook-retry.ts";

describe("webhook configuration", () => {
  it("defaults to the schedule of docs/design.md §10 with the SSRF guard on", () => {
    const config = parseConfig({});
    expect(config.webhookRetrySchedule).toEqual([...DEFAULT_RETRY_SCHEDULE_SECONDS]);
    expect(config.webhookAllowPrivate).toBe(false);
    expect(config.webhookAllowHttp).toBe(false);
    expect(config.metricsToken).toBeUndefined();
    expect(config.webhookLeaseSeconds).toBe(30);
  });

  it("reads BERTH_WEBHOOK_LEASE_SECONDS, whole seconds from 1 to 3600", () => {
    expect(parseConfig({ BERTH_WEBHOOK_LEASE_SECONDS: "2" }).webhookLeaseSeconds).toBe(2);
    expect(() => parseConfig({ BERTH_WEBHOOK_LEASE_SECONDS: "0" })).toThrow(/BERTH_WEBHOOK_LEASE_SECONDS/);
    expect(() => parseConfig({ BERTH_WEBHOOK_LEASE_SECONDS: "1.5" })).toThrow(/BERTH_WEBHOOK_LEASE_SECONDS/);
  });

  it("reads BERTH_WEBHOOK_ALLOW_HTTP and BERTH_METRICS_TOKEN", () => {
    const config = parseConfig({ BERTH_WEBHOOK_ALLOW_HTTP: "1", BERTH_METRICS_TOKEN: "metrics-token-0123456789" });
    expect(config.webhookAllowHttp).toBe(true);
    expect(config.metricsToken).toBe("metrics-token-0123456789");
    expect(() => parseConfig({ BERTH_WEBHOOK_ALLOW_HTTP: "on" })).toThrow(/BERTH_WEBHOOK_ALLOW_HTTP: must be true or false/);
    expect(() => parseConfig({ BERTH_METRICS_TOKEN: "short" })).toThrow(/BERTH_METRICS_TOKEN: must be at least 16 characters/);
  });

  it("reads BERTH_WEBHOOK_RETRY_SCHEDULE and BERTH_WEBHOOK_ALLOW_PRIVATE", () => {
    const config = parseConfig({ BERTH_WEBHOOK_RETRY_SCHEDULE: "1,2,3", BERTH_WEBHOOK_ALLOW_PRIVATE: "true" });
    expect(config.webhookRetrySchedule).toEqual([1, 2, 3]);
    expect(config.webhookAllowPrivate).toBe(true);
  });

  it("names a bad value", () => {
    expect(() => parseConfig({ BERTH_WEBHOOK_RETRY_SCHEDULE: "5,soon" })).toThrow(/BERTH_WEBHOOK_RETRY_SCHEDULE: comma-separated seconds/);
    expect(() => parseConfig({ BERTH_WEBHOOK_ALLOW_PRIVATE: "yes" })).toThrow(/BERTH_WEBHOOK_ALLOW_PRIVATE: must be true or false/);
  });
});

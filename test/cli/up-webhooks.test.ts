// `berth up` is a development install: webhooks may go to loopback receivers over http, unless
// the environment says otherwise.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/api/config.ts";
import { upWebhookPolicy } from "../../src/cli/up.ts";

describe("berth up's webhook policy", () => {
  it.each([
    [{}, { webhookAllowPrivate: true, webhookAllowHttp: true }],
    [{ BERTH_WEBHOOK_ALLOW_HTTP: "false" }, { webhookAllowPrivate: true, webhookAllowHttp: false }],
    [{ BERTH_WEBHOOK_ALLOW_PRIVATE: "false" }, { webhookAllowPrivate: false, webhookAllowHttp: true }],
    [{ BERTH_WEBHOOK_ALLOW_PRIVATE: "true", BERTH_WEBHOOK_ALLOW_HTTP: "0" }, { webhookAllowPrivate: true, webhookAllowHttp: false }],
  ])("%j → %j", (env, expected) => {
    expect(upWebhookPolicy(parseConfig(env), env)).toEqual(expected);
  });
});

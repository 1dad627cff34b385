import { describe, expect, it } from "vitest";
import { classifyAttemptFailure } from "../../src/domain/webhook-attempt-failure.ts";

const coded = (code: string, message = `${code}: something about 10.0.0.7:5432`) => Object.assign(new Error(message), { code });
const named = (name: string) => Object.assign(new Error("the operation was aborted"), { name });

describe("classifyAttemptFailure", () => {
  it.each([
    [coded("ECONNREFUSED"), "connection_refused"],
    [coded("ECONNRESET"), "connection_reset"],
    [coded("EPIPE"), "connection_reset"],
    [coded("ETIMEDOUT"), "timeout"],
    [coded("UND_ERR_CONNECT_TIMEOUT"), "timeout"],
    [named("TimeoutError"), "timeout"],
    [named("AbortError"), "timeout"],
    [coded("ENOTFOUND"), "dns_failure"],
    [coded("EAI_AGAIN"), "dns_failure"],
    [coded("EHOSTUNREACH"), "host_unreachable"],
    [coded("ENETUNREACH"), "host_unreachable"],
    [coded("DEPTH_ZERO_SELF_SIGNED_CERT"), "tls_error"],
    [coded("ERR_TLS_CERT_ALTNAME_INVALID"), "tls_error"],
    [coded("ERR_SSL_WRONG_VERSION_NUMBER"), "tls_error"],
    [coded("EPROTO"), "tls_error"],
    [coded("EWHATEVER"), "connection_failed"],
    [new Error("fetch failed"), "connection_failed"],
    // fetch (undici) puts the socket error in `cause`
    [Object.assign(new TypeError("fetch failed"), { cause: coded("ECONNREFUSED") }), "connection_refused"],
    [Object.assign(new TypeError("fetch failed"), { cause: { cause: coded("ENOTFOUND") } }), "dns_failure"],
    // what the services decided themselves
    [Object.assign(new Error("10.0.0.7 is a private address"), { failure: "address_refused" }), "address_refused"],
    [Object.assign(new Error("x"), { failure: "url_refused", code: "ECONNREFUSED" }), "url_refused"],
    [Object.assign(new Error("x"), { failure: "made_up" }), "connection_failed"],
    ["a string", "connection_failed"],
    [undefined, "connection_failed"],
  ])("%o → %s", (error, expected) => {
    expect(classifyAttemptFailure(error)).toBe(expected);
  });
});

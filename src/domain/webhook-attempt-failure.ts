// What the delivery log says about an attempt that got no answer (docs/design.md §14.7): a
// class, never the runtime's error text. The text tells open from closed from filtered ports
// and which names resolve inside the network the API runs in; any viewer of a project reads
// its delivery log, so raw errors would make the webhook form a port scanner for viewers.

export const ATTEMPT_FAILURES = [
  "connection_refused",
  "connection_reset",
  "timeout",
  "dns_failure",
  "tls_error",
  "host_unreachable",
  /** The URL as stored is not allowed now (its scheme or host, under the current settings). */
  "url_refused",
  /** The name resolved to an address the SSRF guard refuses. */
  "address_refused",
  "connection_failed",
] as const;
export type AttemptFailure = (typeof ATTEMPT_FAILURES)[number];

/** Node/undici error codes and what they mean for the log. Anything else is connection_failed. */
const BY_CODE: Readonly<Record<string, AttemptFailure>> = {
  ECONNREFUSED: "connection_refused",
  ECONNRESET: "connection_reset",
  EPIPE: "connection_reset",
  ECONNABORTED: "connection_reset",
  UND_ERR_SOCKET: "connection_reset",
  ETIMEDOUT: "timeout",
  ESOCKETTIMEDOUT: "timeout",
  UND_ERR_CONNECT_TIMEOUT: "timeout",
  UND_ERR_HEADERS_TIMEOUT: "timeout",
  ENOTFOUND: "dns_failure",
  EAI_AGAIN: "dns_failure",
  EAI_FAIL: "dns_failure",
  EAI_NONAME: "dns_failure",
  EAI_NODATA: "dns_failure",
  ENODATA: "dns_failure",
  EHOSTUNREACH: "host_unreachable",
  ENETUNREACH: "host_unreachable",
  EHOSTDOWN: "host_unreachable",
  ENETDOWN: "host_unreachable",
  EPROTO: "tls_error",
  CERT_HAS_EXPIRED: "tls_error",
  CERT_NOT_YET_VALID: "tls_error",
  DEPTH_ZERO_SELF_SIGNED_CERT: "tls_error",
  SELF_SIGNED_CERT_IN_CHAIN: "tls_error",
  UNABLE_TO_GET_ISSUER_CERT: "tls_error",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "tls_error",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "tls_error",
  ERR_TLS_CERT_ALTNAME_INVALID: "tls_error",
};

/** Error names (fetch, AbortSignal.timeout) that say enough on their own. */
const BY_NAME: Readonly<Record<string, AttemptFailure>> = { TimeoutError: "timeout", AbortError: "timeout" };

/**
 * The class of a failed attempt, from the error or any of its causes (fetch wraps the socket
 * error in `cause`): an explicit `failure` the services set, then the error code, then its name.
 */
export function classifyAttemptFailure(error: unknown): AttemptFailure {
  for (let current = error, depth = 0; typeof current === "object" && current !== null && depth < 4; depth++) {
    const { failure, code, name } = current as { failure?: unknown; code?: unknown; name?: unknown };
    if (typeof failure === "string" && (ATTEMPT_FAILURES as readonly string[]).includes(failure)) return failure as AttemptFailure;
    if (typeof code === "string") {
      const byCode = BY_CODE[code] ?? (/^ERR_(TLS|SSL)_|^ERR_SSL|_CERT(_|$)|^CERT_/.test(code) ? "tls_error" : undefined);
      if (byCode) return byCode;
    }
    if (typeof name === "string" && BY_NAME[name]) return BY_NAME[name]!;
    current = (current as { cause?: unknown }).cause;
  }
  return "connection_failed";
}

// How a delivery reaches its receiver. Resolving names and pinning a connection to a
// checked address are runtime-specific (node:dns and node:http on Node and Deno), so the
// entry passes a WebhookTransport in; the services decide which address is allowed.
// fetchTransport is the Web-standard fallback for runtimes with neither (edge): it cannot
// resolve or pin, so there only literal addresses and names are checked.

export interface WebhookRequest {
  url: URL;
  /** The checked address to connect to; the URL's host stays in the Host header and TLS SNI. Null: let the runtime resolve. */
  address: string | null;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

export interface WebhookResponse {
  status: number;
  /** Response headers, names in lower case. */
  headers: Record<string, string>;
  /** The first KiB of the body (decoded as UTF-8, lossy). */
  bodySnippet: string;
  /** From sending to the response headers. */
  latencyMs: number;
}

export interface WebhookTransport {
  /** Every A and AAAA address of a host name; rejects when it does not resolve. Absent: this runtime cannot resolve. */
  resolve?(hostname: string): Promise<string[]>;
  /** One POST; never follows a redirect; rejects on timeout or a connection error, with a readable message and the error's `code`. */
  send(request: WebhookRequest): Promise<WebhookResponse>;
}

export const SNIPPET_BYTES = 1024;

/** Web-standard fallback: fetch with redirect "manual" and a timeout; no resolution, no pinning. */
export const fetchTransport: WebhookTransport = {
  async send(request) {
    const started = performance.now();
    let response: Response;
    try {
      response = await fetch(request.url, {
        method: "POST",
        headers: request.headers,
        body: request.body,
        redirect: "manual",
        signal: AbortSignal.timeout(request.timeoutMs),
      });
    } catch (error) {
      const name = (error as Error).name;
      if (name === "TimeoutError" || name === "AbortError") throw Object.assign(new Error(`timed out after ${request.timeoutMs / 1000} s`), { code: "ETIMEDOUT" });
      throw new Error(`connection failed: ${(error as Error).message}`, { cause: error }); // the cause keeps the socket error's code
    }
    const latencyMs = performance.now() - started;
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name.toLowerCase()] = value));
    return { status: response.status, headers, bodySnippet: await readSnippet(response), latencyMs };
  },
};

async function readSnippet(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < SNIPPET_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // A body cut short still leaves what was read.
  } finally {
    reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(Math.min(size, SNIPPET_BYTES));
  let offset = 0;
  for (const chunk of chunks) {
    const take = chunk.subarray(0, bytes.length - offset);
    bytes.set(take, offset);
    offset += take.length;
    if (offset >= bytes.length) break;
  }
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes);
}

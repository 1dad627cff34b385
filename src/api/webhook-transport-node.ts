// The webhook transport of the Node and Deno entries (Deno runs it through its node:
// modules): names resolve with node:dns (every A and AAAA answer, so the guard sees them
// all), and each POST connects to the one address the services checked — the URL's host
// stays in the Host header and as the TLS server name, so certificates still verify.
// One connection per attempt, no redirects followed, one timer for the whole exchange.
import { lookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { SNIPPET_BYTES, type WebhookRequest, type WebhookResponse, type WebhookTransport } from "../services/webhooks/transport.ts";

export const nodeWebhookTransport: WebhookTransport = {
  async resolve(hostname) {
    const answers = await lookup(hostname, { all: true, verbatim: true });
    return answers.map((answer) => answer.address);
  },
  send: sendPinned,
};

function sendPinned(request: WebhookRequest): Promise<WebhookResponse> {
  const { url, body, timeoutMs } = request;
  const secure = url.protocol === "https:";
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const payload = Buffer.from(body, "utf8");
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let settled = false;
    const done = (error: Error | undefined, response?: WebhookResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(response!);
    };
    const req = (secure ? https : http).request({
      host: request.address ?? hostname,
      port: url.port ? Number(url.port) : secure ? 443 : 80,
      path: `${url.pathname}${url.search}`,
      method: "POST",
      headers: { ...request.headers, host: url.host, "content-length": String(payload.length) },
      agent: false,
      ...(secure && isIP(hostname) === 0 ? { servername: hostname } : {}),
    });
    let finishResponse: (() => void) | undefined;
    const timer = setTimeout(() => {
      // After the headers a slow body only shortens the snippet; before them it is a timeout.
      if (finishResponse) finishResponse();
      else done(Object.assign(new Error(`timed out after ${timeoutMs / 1000} s without a response`), { code: "ETIMEDOUT" }));
      req.destroy();
    }, timeoutMs);
    // The code travels on: the delivery log keeps only its class (src/domain/webhook-attempt-failure.ts).
    req.on("error", (error: NodeJS.ErrnoException) => done(Object.assign(new Error(describeError(error, request)), { code: error.code })));
    req.on("response", (res) => {
      const latencyMs = performance.now() - started;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers)) {
        if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      finishResponse = () => {
        const snippet = Buffer.concat(chunks).subarray(0, SNIPPET_BYTES);
        done(undefined, { status: res.statusCode ?? 0, headers, bodySnippet: snippet.toString("utf8"), latencyMs });
        res.destroy();
      };
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= SNIPPET_BYTES) finishResponse!();
      });
      res.on("end", () => finishResponse!());
      res.on("error", () => finishResponse!());
      res.on("close", () => finishResponse!());
    });
    req.end(payload);
  });
}

function describeError(error: NodeJS.ErrnoException, request: WebhookRequest): string {
  const where = `${request.address ?? request.url.hostname}:${request.url.port || (request.url.protocol === "https:" ? 443 : 80)}`;
  switch (error.code) {
    case "ECONNREFUSED":
      return `connection refused by ${where}`;
    case "ECONNRESET":
      return `connection reset by ${where}`;
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `${where} is unreachable`;
    default:
      return `${error.code ? `${error.code}: ` : ""}${error.message}`.slice(0, 500);
  }
}

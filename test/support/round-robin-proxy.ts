// A round-robin HTTP reverse proxy on loopback, in front of several API instances (what a
// load balancer does for deploy/api's replicas). Each request goes to the next backend in
// turn; one that refuses the connection (a killed instance) is skipped and the next is tried,
// which is safe even for a POST, because a refused connection never reached a server. One
// that fails after connecting is not retried: the client gets a 502 or a cut response, as
// from a real balancer. Responses are streamed as they arrive (SSE), and a response cut by
// the backend is cut for the client too.
//
// Tests can pin a request to one backend with the PIN_HEADER (its 0-based index; removed
// before forwarding; a pinned request is never moved elsewhere), and can take a backend out
// of the rotation and put it back.
import http from "node:http";
import type { AddressInfo } from "node:net";

export const PIN_HEADER = "x-proxy-backend";

/** RFC 9110 §7.6.1: connection-specific fields a proxy must not forward. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Request bodies are read whole before forwarding (so a refused connection can be retried elsewhere). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface RoundRobinProxy {
  url: string;
  /** Requests forwarded to each backend (by index), answered or not. */
  forwarded: number[];
  /** Takes backend `index` out of the rotation (pinned requests still reach it). */
  exclude(index: number): void;
  /** Puts it back. */
  include(index: number): void;
  close(): Promise<void>;
}

/** The headers to forward: hop-by-hop ones (and those the Connection header names) removed. */
export function forwardableHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name)) continue;
    out[name] = value;
  }
  return out;
}

function readBody(req: http.IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.destroy();
        resolve(undefined);
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

export async function startRoundRobinProxy(backends: readonly string[]): Promise<RoundRobinProxy> {
  const targets = backends.map((backend) => new URL(backend));
  const excluded = new Set<number>();
  const forwarded = targets.map(() => 0);
  let next = 0;

  /** The backends to try for one request, in order: the pinned one alone, or every live one from the next in turn. */
  const order = (pin: string | undefined): number[] => {
    if (pin !== undefined) {
      const index = Number(pin);
      return Number.isInteger(index) && index >= 0 && index < targets.length ? [index] : [];
    }
    const start = next;
    next = (next + 1) % targets.length;
    return targets.map((_, i) => (start + i) % targets.length).filter((index) => !excluded.has(index));
  };

  const server = http.createServer(async (req, res) => {
    const pin = req.headers[PIN_HEADER];
    const body = await readBody(req).catch(() => undefined);
    if (body === undefined) {
      if (!res.headersSent) res.writeHead(413, { "content-type": "text/plain" }).end("request body too large for the test proxy\n");
      return;
    }
    const headers = forwardableHeaders(req.headers);
    delete headers[PIN_HEADER];
    const client = req.socket.remoteAddress ?? "";
    const prior = req.headers["x-forwarded-for"];
    headers["x-forwarded-for"] = prior ? `${String(prior)}, ${client}` : client;
    headers["x-forwarded-proto"] = "http";
    if (req.headers.host) headers["x-forwarded-host"] = req.headers.host;
    if (body.length > 0) headers["content-length"] = String(body.length);

    const candidates = order(typeof pin === "string" ? pin : undefined);
    for (const index of candidates) {
      const outcome = await forward(index, req, res, headers, body);
      if (outcome !== "refused") return;
    }
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" }).end("no backend accepted the connection\n");
  });

  /** Sends one request to backend `index`; "refused" when it never connected (the next may be tried). */
  function forward(
    index: number,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    headers: http.OutgoingHttpHeaders,
    body: Buffer,
  ): Promise<"done" | "refused"> {
    const target = targets[index]!;
    forwarded[index]!++;
    return new Promise((resolve) => {
      // A new connection per request: a pooled socket to a backend that has just died would
      // fail after the request was written, where retrying is no longer safe.
      const upstream = http.request({
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers,
        agent: false,
      });
      // The client went away first (a stream it stopped reading): stop the backend's work too.
      res.on("close", () => {
        if (!res.writableFinished) upstream.destroy();
      });
      upstream.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code === "ECONNREFUSED") return resolve("refused");
        if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" }).end(`backend ${index} failed: ${error.code ?? error.message}\n`);
        else res.destroy();
        resolve("done");
      });
      upstream.on("response", (answer) => {
        res.writeHead(answer.statusCode ?? 502, forwardableHeaders(answer.headers));
        res.flushHeaders();
        answer.pipe(res);
        answer.on("close", () => {
          // Cut mid-response (the backend died): the client must see the cut, not a clean end.
          if (!answer.complete) res.destroy();
          resolve("done");
        });
      });
      upstream.end(body);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    forwarded,
    exclude: (index) => void excluded.add(index),
    include: (index) => void excluded.delete(index),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// Keep-alive safety for answers sent before the request body was read (413, 415, 401, 404 on
// a POST…), for every Node HTTP server berth runs (the API on @hono/node-server, the router).
// Invariant: a connection is never closed after an answer that advertised keep-alive. When
// the head goes out while body bytes may still be on the wire:
//  - at most DRAIN_LIMIT bytes declared (Content-Length): the connection stays open and,
//    once the answer is written, the rest of the body is read and dropped (what Node's own
//    server does with an unread body); a client that stalls mid-body past DRAIN_MS is cut
//    off, which is safe: it cannot have sent a next request yet;
//  - more, or of unknown length (chunked): the answer says `Connection: close` and Node
//    closes the socket once it is written (RFC 9112 §9.6), so the client sends its next
//    request on a new connection instead of one about to close.
import http, { type IncomingMessage } from "node:http";

/** Body bytes an early answer still reads (and drops) to keep the connection. */
export const DRAIN_LIMIT = 64 * 1024;
const DRAIN_MS = 5_000;

export class EarlyAnswerResponse<Request extends IncomingMessage = IncomingMessage> extends http.ServerResponse<Request> {
  constructor(req: Request) {
    super(req);
    this.once("finish", () => discardUnread(req));
  }

  // Every head goes through writeHead (write() and end() without it call it implicitly).
  override writeHead(statusCode: number, ...rest: unknown[]): this {
    if (!this.headersSent && !drainable(this.req)) this.setHeader("connection", "close");
    return (super.writeHead as (statusCode: number, ...rest: unknown[]) => this).call(this, statusCode, ...rest);
  }
}

/** `http.createServer` options that apply the rules above (see the module header). */
export const earlyAnswerServerOptions = { ServerResponse: EarlyAnswerResponse } satisfies http.ServerOptions;

/** The request carries no body, its body has arrived, or what is left is small enough to drop. */
function drainable(req: IncomingMessage): boolean {
  if (req.complete) return true;
  if (req.headers["transfer-encoding"] !== undefined) return false;
  const length = Number(req.headers["content-length"] ?? 0);
  return length <= DRAIN_LIMIT;
}

/** Reads and drops whatever of the body is left, so the parser moves on to the next request. */
function discardUnread(req: IncomingMessage): void {
  if (req.readableEnded || req.destroyed) return;
  const timer = setTimeout(() => req.socket.destroy(), DRAIN_MS);
  timer.unref();
  const stop = () => clearTimeout(timer);
  req.removeAllListeners("data"); // a reader that stopped (and would pause the stream again)
  req.on("data", noop);
  req.once("end", stop);
  req.once("close", stop);
  req.on("error", noop);
  req.resume();
}

function noop(): void {}

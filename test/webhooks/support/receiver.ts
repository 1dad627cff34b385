// A webhook receiver on loopback for tests and the benchmark: records every request
// (headers, raw body, arrival time) and answers what the test's responder says.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  /** Lower-case header names. */
  headers: Record<string, string>;
  body: string;
  path: string;
  /** Date.now() with sub-millisecond precision, when the request's body had arrived. */
  at: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait this long before answering. */
  delayMs?: number;
}

export type Responder = (request: ReceivedRequest, index: number) => Answer;

export interface Receiver {
  url: string;
  port: number;
  received: ReceivedRequest[];
  /** Requests whose connection closed before the answer was sent (the sender died or gave up). */
  cut: ReceivedRequest[];
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export const preciseNow = () => performance.timeOrigin + performance.now();

export async function startReceiver(respond: Responder = () => ({ status: 204 })): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const cut: ReceivedRequest[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers[name] = value;
      const request = { headers, body: Buffer.concat(chunks).toString("utf8"), path: req.url ?? "/", at: preciseNow() };
      const index = received.push(request) - 1;
      for (const waiter of [...waiters]) {
        if (received.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
      const answer = respond(request, index);
      res.on("close", () => {
        if (!res.writableFinished) cut.push(request);
      });
      const send = () => {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body ?? "");
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    cut,
    waitFor(count, timeoutMs = 15_000) {
      if (received.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const waiter = { count, resolve };
        waiters.push(waiter);
        setTimeout(() => reject(new Error(`receiver got ${received.length} of ${count} requests in ${timeoutMs} ms`)), timeoutMs).unref();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

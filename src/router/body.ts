// Bounded request-body reading: a declared or actual size past the limit stops reading at
// once, so a 10 MB prompt costs the router at most `limit` bytes of memory.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Aborted } from "./exchange.ts";

export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`The request body is larger than ${limit} bytes.`);
  }
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) return Promise.reject(new BodyTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(new BodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onClose = () => {
      cleanup();
      reject(new Aborted("client"));
    };
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
    };
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("close", onClose);
    req.on("error", () => {});
  });
}

/**
 * After answering 413 early: let the client finish sending (so it reads the answer instead
 * of a reset), discarding up to `budget` bytes or for `ms` at most, then close.
 */
export function discardRest(req: IncomingMessage, res: ServerResponse, budget: number, ms: number): void {
  let seen = 0;
  const timer = setTimeout(() => req.socket.destroy(), ms);
  req.on("data", (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > budget) req.socket.destroy();
  });
  req.once("end", () => clearTimeout(timer));
  req.once("close", () => clearTimeout(timer));
  res.once("error", () => {});
  req.resume();
}

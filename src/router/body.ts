// Bounded request-body reading: a declared or actual size past the limit stops reading at
// once, so a 10 MB prompt costs the router at most `limit` bytes of memory. What happens to
// the unread rest (dropped, or the connection closed) is decided in node-http/early-answers.ts.
import type { IncomingMessage } from "node:http";
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

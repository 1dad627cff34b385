// Request bodies: at most 1 MiB (413), JSON content types only (415), parsed once.
// Malformed JSON is turned into a 400 problem by the error handler.
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { PayloadTooLarge, UnsupportedMediaType } from "../domain/errors.ts";
import type { AppEnv } from "./env.ts";

const JSON_TYPE = /^application\/json\s*(;.*)?$/i;
const MERGE_PATCH_TYPE = /^application\/merge-patch\+json\s*(;.*)?$/i;

export function limitBody(maxBytes: number): MiddlewareHandler<AppEnv> {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new PayloadTooLarge(`The request body is larger than ${maxBytes} bytes; send a smaller body.`);
    },
  });
}

function hasBody(headers: Headers): boolean {
  const length = headers.get("content-length");
  return headers.has("transfer-encoding") || (length !== null && length !== "0");
}

/** POST/PUT/PATCH with a body must declare JSON (PATCH may also use merge-patch+json). */
export function requireJsonContentType(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const method = c.req.method;
    if ((method === "POST" || method === "PUT" || method === "PATCH") && hasBody(c.req.raw.headers)) {
      const type = c.req.header("content-type") ?? "";
      const accepted = JSON_TYPE.test(type) || (method === "PATCH" && MERGE_PATCH_TYPE.test(type));
      if (!accepted) {
        const allowed = method === "PATCH" ? "application/merge-patch+json or application/json" : "application/json";
        throw new UnsupportedMediaType(`Content-Type "${type || "(none)"}" is not accepted here; send ${allowed}.`);
      }
    }
    await next();
  };
}

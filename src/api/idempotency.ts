// Idempotency-Key on POST: claim the key before the handler runs, replay a stored
// success, and keep only successes (see src/services/idempotency.ts for the rules).
import type { MiddlewareHandler } from "hono";
import { claimIdempotency, finishIdempotency } from "../services/idempotency.ts";
import { systemContext, type AppEnv } from "./env.ts";

const REPLAYED_HEADERS = ["content-type", "location", "etag", "warning"];

export function idempotentPosts(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const key = c.req.header("Idempotency-Key");
    const principal = c.get("principal");
    if (c.req.method !== "POST" || key === undefined || !principal) return next();
    const ctx = systemContext(c);
    const claim = await claimIdempotency({
      ctx,
      input: { principal, key, method: c.req.method, path: c.req.path, body: await c.req.text() },
    });
    if (claim.outcome === "replay") {
      const { status, headers, body } = claim.response;
      return new Response(body, { status, headers: { ...headers, "Idempotent-Replayed": "true" } });
    }
    try {
      await next();
    } finally {
      const ok = c.res.status >= 200 && c.res.status < 300;
      const response = ok
        ? {
            status: c.res.status,
            headers: Object.fromEntries(REPLAYED_HEADERS.flatMap((h) => (c.res.headers.has(h) ? [[h, c.res.headers.get(h)!]] : []))),
            body: await c.res.clone().text(),
          }
        : null;
      await finishIdempotency({ ctx, input: { principal, key, response } });
    }
  };
}

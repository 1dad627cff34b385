// CORS, off unless BERTH_CORS_ORIGINS lists exact origins. berth authenticates with bearer
// keys, never cookies, so no answer allows credentials and no answer says `*`: a browser
// page on a listed origin may call the API with a key it holds; any other origin gets no
// CORS headers at all, and the browser keeps the answer from it.
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";

/** Request headers a browser page may send, and answer headers it may read. */
const ALLOW_HEADERS = ["Authorization", "Content-Type", "If-Match", "Idempotency-Key", "X-Request-Id"];
const EXPOSE_HEADERS = ["ETag", "Location", "RateLimit", "RateLimit-Policy", "Retry-After", "X-Request-Id", "Warning"];
const ALLOW_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/** An origin as browsers send it: scheme, host and optional port, nothing else (RFC 6454 §6.1). */
const ORIGIN = /^https?:\/\/[^/?#\s*]+$/;

/**
 * Parses the comma-separated list; throws naming the first entry that is not an exact
 * origin (a path, a wildcard, `null`), because a policy wider than meant must not start.
 */
export function parseCorsOrigins(text: string): string[] {
  const origins = text.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "");
  for (const origin of origins) {
    if (!ORIGIN.test(origin) || new URL(origin).origin !== origin) {
      throw new Error(`"${origin}" is not an exact origin: write scheme://host[:port], e.g. https://console.example.com (no path, no *)`);
    }
  }
  return origins;
}

/** The CORS middleware for these origins, or none when the list is empty. */
export function corsPolicy(origins: readonly string[]): MiddlewareHandler | undefined {
  if (origins.length === 0) return undefined;
  const allowed = new Set(origins);
  const policy = cors({
    origin: (origin) => (allowed.has(origin) ? origin : null),
    allowMethods: ALLOW_METHODS,
    allowHeaders: ALLOW_HEADERS,
    exposeHeaders: EXPOSE_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    credentials: false,
  });
  return async (c, next) => {
    // A refused origin is treated as no CORS at all: its preflight is an ordinary OPTIONS.
    // Every answer still varies by Origin, so a cache never hands one origin's answer to another.
    const origin = c.req.header("Origin");
    if (origin === undefined || !allowed.has(origin)) {
      await next();
      c.header("Vary", "Origin", { append: true });
      return;
    }
    return policy(c, next);
  };
}

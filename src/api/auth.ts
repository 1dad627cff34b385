// Bearer authentication for /v1: resolves the caller once per request and attaches it.
import type { MiddlewareHandler } from "hono";
import { authenticate } from "../services/auth/authenticate.ts";
import { systemContext, type AppEnv } from "./env.ts";

/** Routes under /v1 that authenticate by other means (the agent's join token). */
const PUBLIC_V1_PATHS = new Set(["/v1/agent/register"]);

export function requireBearer(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (PUBLIC_V1_PATHS.has(c.req.path)) return next();
    const principal = await authenticate({ ctx: systemContext(c), input: { authorization: c.req.header("Authorization") } });
    c.set("principal", principal);
    await next();
  };
}

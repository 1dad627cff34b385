// Bearer authentication for /v1: resolves the caller once per request and attaches it, and
// charges the request to a rate-limit bucket (src/api/rate-limit.ts): the key's or the
// credential's once known, the client address's when there is no key or it failed.
import type { MiddlewareHandler } from "hono";
import { Unauthorized } from "../domain/errors.ts";
import { metricsAccess } from "../domain/metrics-access.ts";
import { authenticate, bearerToken, UNKNOWN_KEY } from "../services/auth/authenticate.ts";
import { systemContext, type AppEnv } from "./env.ts";
import { limitAddress, limitPrincipal } from "./rate-limit.ts";

/** Routes under /v1 that authenticate by other means (the agent's join token). */
const PUBLIC_V1_PATHS = new Set(["/v1/agent/register"]);

export function requireBearer(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (PUBLIC_V1_PATHS.has(c.req.path)) {
      await limitAddress(c);
      return next();
    }
    const { limiter, clock } = c.get("deps");
    const authorization = c.req.header("Authorization");
    const token = bearerToken(authorization);
    // A token that just failed is refused again without a lookup: floods of one bad token cost no query.
    if (token && limiter?.recentlyFailed(token, clock.now())) {
      await limitAddress(c);
      throw new Unauthorized(UNKNOWN_KEY);
    }
    let principal;
    try {
      principal = await authenticate({ ctx: systemContext(c), input: { authorization } });
    } catch (error) {
      if (error instanceof Unauthorized) {
        if (token) limiter?.noteFailed(token, clock.now());
        await limitAddress(c);
      }
      throw error;
    }
    c.set("principal", principal);
    await limitPrincipal(c, principal);
    await next();
  };
}

/**
 * GET /metrics with BERTH_METRICS_TOKEN set: `Authorization: Bearer <that token>` (compared in
 * constant time) or 401. Unset, it is open as it always was (docs/design.md §14.7).
 */
export function requireMetricsToken(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const access = await metricsAccess(c.req.header("Authorization"), c.get("deps").config.metricsToken);
    if (access === "missing") throw new Unauthorized("/metrics needs the metrics token (BERTH_METRICS_TOKEN) as 'Authorization: Bearer <token>'.");
    if (access === "wrong") throw new Unauthorized("The metrics token is not the one this installation is configured with (BERTH_METRICS_TOKEN).");
    await next();
  };
}

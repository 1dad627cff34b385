// Composes the API: middleware in a fixed order, every route, one error handler.
// Uses only Web-standard APIs so the same app runs on Node, Deno and edge runtimes;
// runtime-specific pieces (metrics, logger, database) are passed in.
import { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { requestId } from "hono/request-id";
import { registerAgentRoutes } from "../../routes/agent/index.ts";
import { registerApiKeyRoutes } from "../../routes/api-keys/index.ts";
import { registerCatalogRoutes } from "../../routes/catalog/index.ts";
import { registerClusterRoutes } from "../../routes/clusters/index.ts";
import { registerDeploymentRequestRoutes } from "../../routes/deployment-requests/index.ts";
import { registerDeploymentRoutes } from "../../routes/deployments/index.ts";
import { registerEventRoutes } from "../../routes/events/index.ts";
import { registerHealthRoutes } from "../../routes/health.ts";
import { registerOperationRoutes } from "../../routes/operations/index.ts";
import { registerDispatchRoute } from "../../routes/internal/dispatch.ts";
import { registerProjectRoutes } from "../../routes/projects/index.ts";
import { registerWebhookRoutes } from "../../routes/webhooks/index.ts";
import { zodIssuesToFieldErrors } from "../domain/deployment-spec.ts";
import { InvalidRequest, NotFound } from "../domain/errors.ts";
import { PrincipalCache } from "../services/auth/principal-cache.ts";
import { OpenSlots } from "../services/rate-limits/open-slots.ts";
import { RequestLimiter } from "../services/rate-limits/request-limiter.ts";
import { errorForLog } from "../services/log-error.ts";
import { NotificationHub } from "../services/notifications/notification-hub.ts";
import { requireBearer, requireMetricsToken } from "./auth.ts";
import { corsPolicy } from "./cors.ts";
import { limitBody, requireJsonContentType } from "./body.ts";
import { registerApiReference, type DocsAssets } from "./docs.ts";
import type { AppDeps, AppEnv } from "./env.ts";
import { idempotentPosts } from "./idempotency.ts";
import { registerOpenApiDocument } from "./openapi.ts";
import { problemFromError, problemResponse } from "./problem.ts";

export interface AppOptions extends AppDeps {
  /** Prometheus middleware and its /metrics handler (Node and Deno entries pass prom-client's). */
  metrics?: { middleware: MiddlewareHandler; handler: MiddlewareHandler };
  /** The /docs UI bundle, read by the entry file; without it /docs says where the bundle is missing. */
  docsAssets?: DocsAssets;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function createApp(options: AppOptions): OpenAPIHono<AppEnv> {
  const { metrics, docsAssets, ...given } = options;
  const principals = new PrincipalCache(given.config.authCacheSeconds * 1000);
  // Without a hub from the entry (which owns its LISTEN session) streams poll on timers,
  // and revocations still end this instance's streams at once and others' by revalidation.
  const notifications =
    given.notifications ?? new NotificationHub({ db: given.db, clock: given.clock });
  notifications.onRevocation((principalId) => principals.forgetPrincipal(principalId));
  const deps: AppDeps = {
    ...given,
    principals,
    notifications,
    limiter: new RequestLimiter(given.config.rateLimits),
    openSlots: new OpenSlots(),
  };
  const app = new OpenAPIHono<AppEnv>({ defaultHook: throwValidationProblem });

  app.use("*", async (c, next) => {
    c.set("deps", deps);
    await next();
  });
  app.use(
    "*",
    requestId({
      // A caller's own id is kept when it is sane, so logs can be joined across services.
      generator: (c) => {
        const given = c.req.header("X-Request-Id");
        return given && REQUEST_ID.test(given) ? given : `req_${crypto.randomUUID()}`;
      },
    }),
  );
  app.use("*", logRequests());
  // Before auth and content-type checks: a browser's preflight carries neither.
  const cors = corsPolicy(deps.config.corsOrigins);
  if (cors) app.use("*", cors);
  if (metrics) {
    app.use("*", metrics.middleware);
    app.get("/metrics", requireMetricsToken(), metrics.handler);
  }
  app.use("/v1/*", requireJsonContentType());
  app.use("/v1/*", limitBody(deps.config.maxBodyBytes));
  app.use("/v1/*", requireBearer());
  app.use("/v1/*", idempotentPosts());

  registerHealthRoutes(app);
  registerProjectRoutes(app);
  registerApiKeyRoutes(app);
  registerDeploymentRoutes(app);
  registerClusterRoutes(app);
  registerAgentRoutes(app);
  registerEventRoutes(app);
  registerWebhookRoutes(app);
  registerDeploymentRequestRoutes(app);
  registerOperationRoutes(app);
  registerCatalogRoutes(app);
  registerDispatchRoute(app);
  registerOpenApiDocument(app);
  registerApiReference(app, docsAssets);

  app.notFound((c) => {
    const error = new NotFound(`No route ${c.req.method} ${c.req.path}; see /openapi.json for the API.`);
    return problemResponse(c, problemFromError(error, c.get("requestId") ?? ""));
  });
  app.onError((error, c) => {
    const problem = problemFromError(error, c.get("requestId") ?? "");
    if (problem.status >= 500) {
      deps.logger.error({ requestId: c.get("requestId"), error: errorForLog(error) }, "request failed");
    }
    const headers: Record<string, string> = {};
    if (problem.status === 412 && typeof problem.currentETag === "string") headers.ETag = problem.currentETag;
    if (problem.status === 401) headers["WWW-Authenticate"] = 'Bearer realm="berth"';
    if (problem.status === 503) headers["Retry-After"] = "1";
    if (problem.status === 429 && typeof problem.retryAfterSeconds === "number") headers["Retry-After"] = String(problem.retryAfterSeconds);
    return problemResponse(c, problem, headers);
  });
  return app;
}

/** Validation failures from route schemas become 400 problems with a pointer or parameter per issue. */
function throwValidationProblem(result: { success: boolean; target: string; error?: unknown }): void {
  if (result.success) return;
  const issues = (result.error as { issues: Parameters<typeof zodIssuesToFieldErrors>[0] }).issues;
  if (result.target === "json") {
    throw new InvalidRequest("The request body is not valid.", zodIssuesToFieldErrors(issues, ""));
  }
  const located = zodIssuesToFieldErrors(issues, "").map(({ pointer, message }) => {
    const name = pointer.split("/")[1] ?? "";
    return result.target === "header" ? { header: name, message } : { parameter: name, message };
  });
  throw new InvalidRequest(`The request's ${result.target === "header" ? "headers are" : "parameters are"} not valid.`, located);
}

function logRequests(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    c.get("deps").logger.info(
      {
        requestId: c.get("requestId"),
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      },
      "request",
    );
  };
}

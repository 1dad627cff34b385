// Probes: /healthz says the process serves; /readyz says the database answers too.
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import type { AppEnv } from "../src/api/env.ts";
import { problems } from "../src/api/route-kit.ts";
import { ServiceUnavailable } from "../src/domain/errors.ts";

const Health = z.object({ status: z.literal("ok") }).meta({ id: "Health" });

export function registerHealthRoutes(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    createRoute({
      operationId: "healthz",
      method: "get",
      path: "/healthz",
      tags: ["Operations"],
      summary: "Liveness: 200 while the process serves",
      description: "Answers 200 while the process can serve HTTP; it reads nothing, so a slow database does not fail it. Public, not rate limited.",
      responses: { 200: { description: "Alive", content: { "application/json": { schema: Health } } }, ...problems(500) },
    }),
    (c) => c.json({ status: "ok" as const }, 200),
  );
  app.openapi(
    createRoute({
      operationId: "readyz",
      method: "get",
      path: "/readyz",
      tags: ["Operations"],
      summary: "Readiness: 200 once the database answers",
      description: "Answers 200 once a query to the database succeeds, 503 (problem+json, Retry-After) while it does not. Public, not rate limited.",
      responses: {
        200: { description: "Ready", content: { "application/json": { schema: Health } } },
        503: { description: "The database does not answer" },
        ...problems(500),
      },
    }),
    async (c) => {
      try {
        await c.get("deps").checkDatabase();
      } catch {
        throw new ServiceUnavailable("The database does not answer yet.");
      }
      return c.json({ status: "ok" as const }, 200);
    },
  );
}

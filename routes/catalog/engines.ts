import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { EngineCompatibility } from "../../src/domain/engine-compatibility.ts";
import { listCatalogEngines } from "../../src/services/catalog/list-catalog-engines.ts";
import { LIMITS } from "../../src/domain/limits.ts";

const route = createRoute({
  tags: ["Catalog"],
  operationId: "listCatalogEngines",
  method: "get",
  path: "/v1/catalog/engines",
  summary: "Engine releases, transports and known failures",
  description:
    "Per engine, the first release of each feature berth renders (`unknown` where no source establishes it), KV transports with their status and known failures, every fact with its source. Admission refuses a feature below its release and warns on an unreadable image tag or a matching known failure.",
  security: bearerSecurity,
  responses: {
    200: jsonContent(z.object({ items: z.array(EngineCompatibility).max(LIMITS.page) }).meta({ id: "EngineCatalog" }), "The engine compatibility table"),
    ...problems(...AUTH_PROBLEMS),
  },
});

export function registerCatalogEngines(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => c.json(listCatalogEngines({ ctx: serviceContext(c) }), 200));
}

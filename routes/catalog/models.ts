import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { ModelArchitecture } from "../../src/domain/model-catalog.ts";
import { listCatalogModels } from "../../src/services/catalog/list-catalog-models.ts";
import { LIMITS } from "../../src/domain/limits.ts";

const route = createRoute({
  tags: ["Catalog"],
  operationId: "listCatalogModels",
  method: "get",
  path: "/v1/catalog/models",
  summary: "Models the planner knows",
  description: "Architecture facts of each model, every figure with its source. Any other model needs `model.architecture` in a deployment request.",
  security: bearerSecurity,
  responses: {
    200: jsonContent(z.object({ items: z.array(ModelArchitecture).max(LIMITS.page) }).meta({ id: "ModelCatalog" }), "The model catalogue"),
    ...problems(...AUTH_PROBLEMS),
  },
});

export function registerCatalogModels(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => c.json(listCatalogModels({ ctx: serviceContext(c) }), 200));
}

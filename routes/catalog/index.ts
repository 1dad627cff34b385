import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../src/api/env.ts";
import { registerCatalogEngines } from "./engines.ts";
import { registerCatalogGpus } from "./gpus.ts";
import { registerCatalogModels } from "./models.ts";

export function registerCatalogRoutes(app: OpenAPIHono<AppEnv>) {
  registerCatalogModels(app);
  registerCatalogGpus(app);
  registerCatalogEngines(app);
}

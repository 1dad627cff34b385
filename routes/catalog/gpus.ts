import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { serviceContext, type AppEnv } from "../../src/api/env.ts";
import { AUTH_PROBLEMS, bearerSecurity, jsonContent, problems } from "../../src/api/route-kit.ts";
import { GpuCatalogEntry } from "../../src/domain/gpu-profiles.ts";
import { listCatalogGpus } from "../../src/services/catalog/list-catalog-gpus.ts";
import { LIMITS } from "../../src/domain/limits.ts";

const route = createRoute({
  tags: ["Catalog"],
  operationId: "listCatalogGpus",
  method: "get",
  path: "/v1/catalog/gpus",
  summary: "GPU types the planner knows",
  description: "Memory, bandwidth, BF16/FP8 throughput and interconnect of each GPU id, every figure with its source.",
  security: bearerSecurity,
  responses: {
    200: jsonContent(z.object({ items: z.array(GpuCatalogEntry).max(LIMITS.page) }).meta({ id: "GpuCatalog" }), "The GPU catalogue"),
    ...problems(...AUTH_PROBLEMS),
  },
});

export function registerCatalogGpus(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => c.json(listCatalogGpus({ ctx: serviceContext(c) }), 200));
}

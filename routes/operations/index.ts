import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../src/api/env.ts";
import { registerGetOperation } from "./get.ts";
import { registerListOperations } from "./list.ts";

export function registerOperationRoutes(app: OpenAPIHono<AppEnv>) {
  registerListOperations(app);
  registerGetOperation(app);
}

import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../src/api/env.ts";
import { registerApplyDeploymentRequest } from "./apply.ts";
import { registerCreateDeploymentRequest } from "./create.ts";
import { registerDeleteDeploymentRequest } from "./delete.ts";
import { registerGetDeploymentRequest } from "./get.ts";
import { registerListDeploymentRequests } from "./list.ts";

export function registerDeploymentRequestRoutes(app: OpenAPIHono<AppEnv>) {
  registerCreateDeploymentRequest(app);
  registerListDeploymentRequests(app);
  registerGetDeploymentRequest(app);
  registerDeleteDeploymentRequest(app);
  registerApplyDeploymentRequest(app);
}

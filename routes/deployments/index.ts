import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../src/api/env.ts";
import { registerCreateDeployment } from "./create.ts";
import { registerDeleteDeployment } from "./delete.ts";
import { registerGetDeployment } from "./get.ts";
import { registerListDeployments } from "./list.ts";
import { registerGetDeploymentMetrics } from "./metrics.ts";
import { registerResizeDeploymentRole } from "./resize.ts";
import { registerListScalingEvents } from "./scaling-events.ts";
import { registerPatchDeployment } from "./patch.ts";
import { registerPutDeploymentStatus } from "./put-status.ts";
import { registerReplaceDeployment } from "./replace.ts";
import { registerListDeploymentRevisions } from "./revisions.ts";
import { registerRollbackDeployment } from "./rollback.ts";

export function registerDeploymentRoutes(app: OpenAPIHono<AppEnv>) {
  registerCreateDeployment(app);
  registerListDeployments(app);
  registerGetDeployment(app);
  registerPatchDeployment(app);
  registerReplaceDeployment(app);
  registerDeleteDeployment(app);
  registerPutDeploymentStatus(app);
  registerResizeDeploymentRole(app);
  registerGetDeploymentMetrics(app);
  registerListScalingEvents(app);
  registerListDeploymentRevisions(app);
  registerRollbackDeployment(app);
}
